"""CompareScreen (``c``): two schedules side by side, transfers paired by what they are (check.pairing).

The table lists every matched transfer with both verdicts and exposed times,
changed ones first and marked; the two schedule views below show the
highlighted transfer's window in A and in B.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from hloscope.analysis.simulate.verdict import Verdict
from hloscope.tui.format import VERDICT_STYLE
from hloscope.tui.load import Loaded
from hloscope.tui.matching import Match, match_transfers
from hloscope.tui.rows import ScheduleLayout
from hloscope.tui.text import lines, plain
from hloscope.tui.widgets.schedule import ScheduleView
from hloscope.units import human_us


def _verdict_cell(v: Verdict | None) -> Text:
    return Text("-") if v is None else Text(v.verdict.value, style=VERDICT_STYLE[v.verdict])


def _exposed(v: Verdict | None) -> str:
    return "-" if v is None else human_us(v.est_exposed_us * v.transfer.executions)


class CompareScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,c", "app.pop_screen", "Back"),
        Binding("f", "toggle_changed", "Only changed"),
    ]

    def __init__(self, a: Loaded, b: Loaded) -> None:
        super().__init__()
        self.a, self.b = a, b
        self.matches = match_transfers(a.report, b.report)
        self.only_changed = False
        self.shown: list[Match] = []

    def compose(self) -> ComposeResult:
        paired = [m for m in self.matches if m.a is not None and m.b is not None]
        only_a = sum(m.b is None for m in self.matches)
        only_b = sum(m.a is None for m in self.matches)
        yield Static(lines(f"A: {self.a.file}", f"B: {self.b.file}", f"{len(paired)} transfer(s) paired by "
                           f"checkpoint name or source line, bytes and op, {sum(m.changed for m in paired)} of "
                           f"them changed (verdict or exposed time); {only_a} only in A, {only_b} only in B"),
                     id="compare-head")
        yield DataTable(id="compare-table", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="compare-views"):
            yield ScheduleView(id="view-a")
            yield ScheduleView(id="view-b")
        yield Footer()

    def on_mount(self) -> None:
        table: DataTable[Any] = self.query_one("#compare-table", DataTable)
        table.add_columns("", "transfer A", "transfer B", "dir", "source / op", "verdict A", "verdict B",
                          "exposed A", "exposed B")
        for view, side in ((self.query_one("#view-a", ScheduleView), self.a),
                           (self.query_one("#view-b", ScheduleView), self.b)):
            view.set_layout(side.layout or ScheduleLayout(side.report), side.times)
            view.show(side.report.module.entry_name)
        self._fill()
        table.focus()

    def _fill(self) -> None:
        table: DataTable[Any] = self.query_one("#compare-table", DataTable)
        table.clear()
        rows = sorted(self.matches, key=lambda m: not m.changed)
        self.shown = [m for m in rows if m.changed or not self.only_changed]
        for m in self.shown:
            table.add_row(Text("≠", style="bold #bf616a") if m.changed else "",
                          plain(m.a.transfer.instruction.name if m.a else "-"),
                          plain(m.b.transfer.instruction.name if m.b else "-"),
                          m.key.direction, plain(m.where[-50:]), _verdict_cell(m.a), _verdict_cell(m.b),
                          _exposed(m.a), _exposed(m.b))
        table.border_title = f"{len(self.shown)} transfer(s)" + (" (changed only)" if self.only_changed else "")

    def action_toggle_changed(self) -> None:
        self.only_changed = not self.only_changed
        self._fill()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if not 0 <= event.cursor_row < len(self.shown):
            return
        m = self.shown[event.cursor_row]
        for view, v in ((self.query_one("#view-a", ScheduleView), m.a), (self.query_one("#view-b", ScheduleView),
                                                                           m.b)):
            if v is not None:
                view.show(v.transfer.computation, v.transfer.instruction.name, v)
