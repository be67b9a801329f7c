"""TransferTable: every host transfer, one row each; sortable and filterable by verdict and direction."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from hloscope.analysis.kinds import VERDICT_ORDER, Direction, VerdictKind
from hloscope.analysis.report import Report
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.tui.format import VERDICT_STYLE, row_words
from hloscope.tui.messages import TransferChosen, TransferHighlighted
from hloscope.tui.preview import COLUMNS
from hloscope.tui.text import plain
from hloscope.units import human_us

#: Sort orders: (label, key over (schedule index, verdict)).
SORTS: tuple[tuple[str, Callable[[tuple[int, Verdict]], Any]], ...] = (
    ("schedule", lambda iv: iv[0]),
    ("exposed time", lambda iv: -iv[1].est_exposed_us * iv[1].transfer.executions),
    ("bytes", lambda iv: -iv[1].transfer.bytes * iv[1].transfer.executions),
    ("verdict", lambda iv: (VERDICT_ORDER.index(iv[1].verdict), iv[0])),
    ("name", lambda iv: iv[1].transfer.instruction.name),
)
#: Sorts that read the report's margins, by label (until they are measured, every row ties: schedule order).
REPORT_SORTS: tuple[tuple[str, Callable[[Report, tuple[int, Verdict]], Any]], ...] = (
    ("marginal cost", lambda r, iv: -_marginal(r, iv[1])),
    ("margin", lambda r, iv: _margin(r, iv[1])),
)
#: A cell whose figure (marginal cost, margin) the background worker has not measured yet.
PENDING = "…"
VERDICT_FILTERS: tuple[VerdictKind | None, ...] = (None, *VERDICT_ORDER)
DIRECTION_FILTERS: tuple[Direction | None, ...] = (None, Direction.TO_HOST, Direction.TO_DEVICE)
#: ``m`` swaps the exposed time and the source for what each transfer costs the step and how close
#: its verdict is to flipping (docs/verdicts.md), in the third column: the table keeps its width,
#: whole at 160 columns with the detail beside.
COST_COLUMNS = ("transfer", "verdict", "~blame", "~marginal", "margin", "checkpoint", "dir", "bytes", "x/step")


def _marginal(report: Report, v: Verdict) -> float:
    m = report.margin_for(v) if v.timing is not None else None
    return m.marginal_us if m is not None else 0.0


def _tie(iv: tuple[int, Verdict]) -> int:
    return 0


def _margin(report: Report, v: Verdict) -> float:
    m = report.margin_for(v) if v.timing is not None else None
    x = m.margin if m is not None else None
    return x if x is not None else float("inf")


class TransferTable(DataTable[Any]):
    """Host transfers of a report. ``s`` cycles the sort, ``v`` the verdict filter, ``d`` the direction,
    ``m`` the columns (exposed time and source, or blame, marginal cost and margin)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "cycle_sort", "Sort"),
        Binding("m", "toggle_costs", "Costs"),
        Binding("v", "cycle_verdict", "Verdicts"),
        Binding("d", "cycle_direction", "Direction"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.report: Report | None = None
        self.sort_index = 0
        self.verdict_filter: VerdictKind | None = None
        self.direction_filter: Direction | None = None
        self.shown: list[Verdict] = []
        self.costs = False  # COST_COLUMNS shown instead of COLUMNS
        # the report's margins are measured (MainScreen.margins_ready): until then their cells show
        # PENDING and their sorts keep the schedule order; reading report.margins here would measure
        # them on the UI thread
        self.margins = False
        # columns drawn: the leading ones that fit whole in the table's width (a column is never cut
        # mid-figure: at 80 columns "128.0 MiB" was drawn "128.0 Mi"); full_width: what all need
        self.drawn = len(COLUMNS)
        self.full_width = 0

    def on_mount(self) -> None:
        self.add_columns(*COLUMNS)

    @property
    def labels(self) -> tuple[str, ...]:
        return COST_COLUMNS if self.costs else COLUMNS

    def action_toggle_costs(self) -> None:
        keep = self.selected
        self.costs = not self.costs
        self.clear(columns=True)
        self.add_columns(*self.labels)
        self.drawn = len(self.labels)
        self.refill(keep)

    def on_resize(self) -> None:
        if self.report is not None and self._fitting(self._widths) != self.drawn:
            self.refill(self.selected)

    _widths: tuple[int, ...] = ()

    def _room(self) -> int:
        """Cells the columns may take (0: not laid out yet)."""
        return max(0, self.size.width - self.styles.scrollbar_size_vertical)

    def _fitting(self, widths: tuple[int, ...]) -> int:
        """How many leading columns fit whole in the table's width (two at least: transfer and verdict;
        a name is never cut: issue 27)."""
        room = self._room()
        if room <= 0 or not widths:
            return len(self.labels)
        used, n = 0, 0
        for w in widths:
            used += w + 2 * self.cell_padding
            if used > room:
                break
            n += 1
        return max(2, n)

    def set_report(self, report: Report) -> None:
        self.report = report
        self.refill()

    def margins_arrived(self) -> None:
        """The report's margins are measured: their cells and sorts show them from now on."""
        self.margins = True
        if self.costs or self._sorts()[self.sort_index][0] in dict(REPORT_SORTS):
            self.refill(self.selected)

    @property
    def state(self) -> str:
        """The sort and filters, in words (shown in the table's border)."""
        v = self.verdict_filter.value if self.verdict_filter else "all"
        d = self.direction_filter.value if self.direction_filter else "both"
        label = self._sorts()[self.sort_index][0]
        if not self.margins and label in dict(REPORT_SORTS):
            label += f" ({PENDING})"
        return f"sorted by {label} · verdict: {v} · direction: {d}"

    def _sorts(self) -> list[tuple[str, Callable[[tuple[int, Verdict]], Any]]]:
        report = self.report
        out = list(SORTS)
        if report is not None and report.timeline is not None:
            out += [(label, partial(key, report) if self.margins else _tie) for label, key in REPORT_SORTS]
        return out

    def refill(self, keep: Verdict | None = None) -> None:
        if self.report is None:
            return
        report = self.report
        rows = [(i, v) for i, v in enumerate(report.verdicts)
                if (self.verdict_filter is None or v.verdict is self.verdict_filter)
                and (self.direction_filter is None or v.transfer.direction is self.direction_filter)]
        sorts = self._sorts()
        self.sort_index %= len(sorts)
        rows.sort(key=sorts[self.sort_index][1])
        self.shown = [v for _, v in rows]
        self.clear()
        from hloscope.render.margin_text import margin_cell  # lazy: render/, after the first frame

        table: list[tuple[str, tuple[Text, ...]]] = []
        widths = [len(label) for label in self.labels]
        for i, v in rows:
            name, verdict, exposed, checkpoint, direction, nbytes, executions, source = row_words(report, v)
            # names and the source come from the module and its manifest: Text, never markup
            head = (plain(name), Text(verdict, style=VERDICT_STYLE[v.verdict]))
            what = (plain(checkpoint), Text(direction), Text(nbytes), Text(executions))
            cells: tuple[Text, ...]
            if self.costs:
                blame = v.timing.blame_us if v.timing is not None else 0.0  # the simulated step's: known now
                if self.margins or v.timing is None:
                    m = report.margin_for(v) if v.timing is not None else None
                    marginal = Text(human_us(m.marginal_us) if m is not None and m.marginal_us > 0 else "-")
                    margin = Text(margin_cell(m))
                else:
                    marginal, margin = Text(PENDING, style="dim"), Text(PENDING, style="dim")
                cells = (*head, Text(human_us(blame) if blame > 0 else "-"), marginal, margin, *what)
            else:
                cells = (*head, Text(exposed), *what, plain(source))
            table.append((str(i), cells))
            widths = [max(w, c.cell_len) for w, c in zip(widths, cells, strict=True)]
        self._widths = tuple(widths)
        self.full_width = sum(w + 2 * self.cell_padding for w in widths)
        drawn = self._fitting(self._widths)
        if drawn != len(self.columns):
            self.clear(columns=True)
            self.add_columns(*self.labels[:drawn])
        self.drawn = drawn
        for key, cells in table:
            self.add_row(*cells[:drawn], key=key)
        # The widths DataTable measures on its next idle (each cell's one line), known now: the
        # first layout (needed_width, MainScreen._fit_lists) and the first paint use them, so the
        # table is not laid out and drawn once at its header's widths and again at its rows'.
        for column, width in zip(self.columns.values(), widths, strict=False):
            column.content_width = width
        self.border_title = f"transfers {len(self.shown)}/{len(report.verdicts)}"
        self.border_subtitle = self.state
        if keep is not None and keep in self.shown:
            self.move_cursor(row=self.shown.index(keep))

    @property
    def needed_width(self) -> int:
        """Cells the table needs to show every column whole, those it leaves out for want of room
        included: columns, border and scrollbar."""
        return self.full_width + 2 + self.styles.scrollbar_size_vertical

    @property
    def selected(self) -> Verdict | None:
        if not self.shown or not 0 <= self.cursor_row < len(self.shown):
            return None
        return self.shown[self.cursor_row]

    def action_cycle_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(self._sorts())
        self.refill(self.selected)

    def action_cycle_verdict(self) -> None:
        i = VERDICT_FILTERS.index(self.verdict_filter)
        self.verdict_filter = VERDICT_FILTERS[(i + 1) % len(VERDICT_FILTERS)]
        self.refill(self.selected)

    def action_cycle_direction(self) -> None:
        i = DIRECTION_FILTERS.index(self.direction_filter)
        self.direction_filter = DIRECTION_FILTERS[(i + 1) % len(DIRECTION_FILTERS)]
        self.refill(self.selected)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        v = self.selected
        if v is not None:
            self.post_message(TransferHighlighted(v))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        v = self.selected
        if v is not None:
            self.post_message(TransferChosen(v))
