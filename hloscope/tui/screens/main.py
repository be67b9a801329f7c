"""MainScreen: totals and memory on top; Transfers, Schedule, Computations, Offloads asked tabs; the detail pane.

Built once the report is loaded (the LoadingScreen comes first), so it imports
the widgets and the analysis freely.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Static, TabbedContent, TabPane

from hloscope.analysis.simulate.verdict import Verdict
from hloscope.hlo.loader import ARTIFACT_NOTE
from hloscope.hlo.model import Instruction
from hloscope.tui.load import Loaded
from hloscope.tui.messages import InstructionHighlighted, TransferChosen, TransferHighlighted
from hloscope.tui.rows import ScheduleLayout
from hloscope.tui.text import plain, shown
from hloscope.tui.widgets.detail import DetailPane
from hloscope.tui.widgets.intent import IntentView
from hloscope.tui.widgets.schedule import ScheduleView
from hloscope.tui.widgets.summary import SummaryBar, source_words
from hloscope.tui.widgets.transfers import TransferTable
from hloscope.tui.widgets.tree import ComputationTree

#: Seconds the cursor rests before the detail pane is redrawn.
DETAIL_DELAY_S = 0.04
_WINDOW_STATUS = "window of "
#: The detail pane's narrowest width when the transfer table widens to show its columns whole.
DETAIL_MIN_W = 48
#: Below this many columns the detail pane goes under the lists (``#body.narrow``): side by side,
#: an 80-column terminal showed two transfer columns (no verdict), 3-letter names in the schedule
#: and three of the four tabs.
NARROW_W = 110
#: Under this many lines the totals on top take three lines, not four (``#summary.short``), for the lists.
SHORT_H = 30
#: A start-up note is a brief toast of at most this many characters (two lines of a narrow toast).
TOAST_CHARS = 72
TOAST_S = 3


def window_status(v: Verdict) -> str:
    """The status line while ``v``'s window is drawn in the schedule."""
    return (f"{_WINDOW_STATUS}{v.transfer.instruction.name}: {v.window_size} instruction(s), {len(v.compute)} "
            f"compute, {len(v.collectives)} collective(s); n / N: next / previous op in the window")


class MainScreen(Screen[None]):
    """The browser of one loaded schedule."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # not in the footer: each tab's title shows its key ("Transfers [1]"), and the footer keeps room for e Export
        Binding("1", "tab('transfers')", "Transfers", show=False),
        Binding("2", "tab('schedule')", "Schedule", show=False),
        Binding("3", "tab('computations')", "Computations", show=False),
        Binding("4", "tab('intent')", "Offloads asked", show=False),
        Binding("tab", "app.focus_next", "Next pane", show=False),
    ]

    def __init__(self, loaded: Loaded) -> None:
        super().__init__()
        self.loaded = loaded
        self._status = ""
        self.verdict: Verdict | None = None
        self._pending: Verdict | Instruction | None = None
        self._timer: Timer | None = None
        self._filled = False  # the tabs behind the transfer table (see _fill_tabs)

    def compose(self) -> ComposeResult:
        yield SummaryBar(id="summary")
        with Horizontal(id="body"):
            with TabbedContent(id="tabs", initial="transfers"):
                with TabPane("Transfers [1]", id="transfers"):
                    yield TransferTable(id="transfer-table")
                with TabPane("Schedule [2]", id="schedule"):
                    yield ScheduleView(id="schedule-view")
                with TabPane("Computations [3]", id="computations"):
                    yield ComputationTree(id="tree")
                with TabPane("Offloads asked [4]", id="intent"), VerticalScroll(id="intent-scroll"):
                    yield IntentView(id="intent-view")
            yield DetailPane(id="detail")
        yield Static(plain(self._status), id="status")
        # compact, without the palette's key (Ctrl+P is in the help): every key fits in 80 columns
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        loaded = self.loaded
        report = loaded.report
        self.query_one(SummaryBar).set_report(report, loaded.memory, source_words(loaded.source.path))
        self.query_one(DetailPane).loaded = loaded
        table = self.query_one(TransferTable)
        table.set_report(report)
        self._fit_lists()
        if report.verdicts:
            # the first frame is the transfer table: the tabs behind it are filled after it is drawn
            self.call_after_refresh(self._fill_tabs)
        else:
            self._fill_tabs()
        for note in report.notes:  # notes hold paths and manifest values: data, not markup
            if note.startswith(ARTIFACT_NOTE):
                # an artifact folder's provenance, every time: the status line, not a toast over the list
                self.set_status(note)
                continue
            text = shown(note)
            self.notify(text if len(text) <= TOAST_CHARS else text[:TOAST_CHARS - 1] + "…", timeout=TOAST_S,
                        markup=False)
        if report.verdicts:
            table.focus()
        else:
            self.query_one("#tabs", TabbedContent).active = "schedule"
            self.query_one(ScheduleView).focus()
            self.set_status("no host transfers in this module; showing the entry computation's schedule")

    def _fill_tabs(self) -> None:
        """The Schedule, Computations and Offloads asked tabs (once; before any of them is shown)."""
        if self._filled:
            return
        self._filled = True
        loaded = self.loaded
        report = loaded.report
        view = self.query_one(ScheduleView)
        view.set_layout(loaded.layout or ScheduleLayout(report), loaded.times)
        view.show(report.module.entry_name)
        self.query_one(ComputationTree).set_report(report)
        self.query_one(IntentView).set_report(report)

    def margins_ready(self) -> None:
        """The report's margins are measured (the app's background worker): the table's cost
        columns and the detail pane's margin line show them."""
        self.query_one(TransferTable).margins_arrived()
        self.query_one(DetailPane).margins_arrived()

    def on_resize(self) -> None:
        self._fit_lists()

    def _fit_lists(self) -> None:
        # The lists take 3/5 of the width, more when the transfer table needs it to show every
        # column whole (at 160 columns the source column was cut to one letter), leaving the
        # detail pane at least DETAIL_MIN_W.
        total = self.size.width
        if total <= 0:
            return
        tabs = self.query_one("#tabs")
        narrow = total < NARROW_W
        self.query_one("#body").set_class(narrow, "narrow")
        self.query_one(SummaryBar).set_class(0 < self.size.height < SHORT_H, "short")
        if narrow:  # stacked: the lists get the whole width (app.tcss)
            tabs.styles.clear_rule("width")
            return
        need = self.query_one(TransferTable).needed_width
        tabs.styles.width = max(total * 3 // 5, min(need, total - DETAIL_MIN_W))

    def set_status(self, text: str) -> None:
        """The status line under the panes (kept until the screen is composed when called earlier)."""
        self._status = text
        for status in self.query("#status").results(Static):
            status.update(plain(text))

    # -- navigation ------------------------------------------------------------

    def action_tab(self, name: str) -> None:
        self._fill_tabs()
        self.query_one("#tabs", TabbedContent).active = name
        focus = {"transfers": "#transfer-table", "schedule": "#schedule-view", "computations": "#tree",
                 "intent": "#intent-scroll"}[name]
        self.query_one(focus).focus()

    def show_place(self, computation: str, name: str | None) -> None:
        """Open ``computation`` in the schedule with the cursor on ``name``."""
        if computation not in self.loaded.report.module.computations:
            return
        self._fill_tabs()
        v = self.verdict
        keep = v if v is not None and (computation in {s.computation for s in v.window}
                                       or computation == v.transfer.computation) else None
        if keep is not None:
            self.set_status(window_status(keep))
        elif self._status.startswith(_WINDOW_STATUS):
            self.set_status("")  # the window is not drawn here: its line would describe another place
        self.query_one("#tabs", TabbedContent).active = "schedule"
        view = self.query_one(ScheduleView)
        view.show(computation, name, keep)
        view.focus()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # The detail pane follows the tab: the transfer under the table's cursor, or the schedule's
        # instruction (it kept the schedule's last instruction after going back to Transfers).
        pane = event.pane.id
        if pane != "transfers":  # a click on another tab's title
            self._fill_tabs()
        if pane == "transfers":
            v = self.query_one(TransferTable).selected
            if v is not None:
                self._detail_later(v)
        elif pane == "schedule":
            row = self.query_one(ScheduleView).current
            if row is not None:
                self._detail_later(row.instruction)

    def on_transfer_highlighted(self, message: TransferHighlighted) -> None:
        self._detail_later(message.verdict)

    def on_transfer_chosen(self, message: TransferChosen) -> None:
        v = message.verdict
        self.verdict = v
        self.show_place(v.transfer.computation, v.transfer.instruction.name)  # the app records history

    def on_instruction_highlighted(self, message: InstructionHighlighted) -> None:
        if self.query_one("#tabs", TabbedContent).active == "schedule":  # else the transfer stays shown
            self._detail_later(message.instruction)

    def _detail_later(self, what: Verdict | Instruction) -> None:
        # The cursor never waits for the detail pane: while keys repeat only the last
        # position is drawn, DETAIL_DELAY_S after the cursor stops.
        self._pending = what
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(DETAIL_DELAY_S, self._show_detail)

    def _show_detail(self) -> None:
        what, self._pending, self._timer = self._pending, None, None
        pane = self.query_one(DetailPane)
        if isinstance(what, Verdict):
            pane.show_verdict(what)
        elif what is not None:
            pane.show_instruction(what)
