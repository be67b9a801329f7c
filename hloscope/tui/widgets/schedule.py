"""ScheduleView: a computation's instructions in schedule order, with lanes, as a virtual list.

Only the visible lines are drawn (``render_line``), so a 40,000-instruction
computation scrolls as fast as a short one. Each line: schedule position, the
simulated start in µs from the step start when the step was simulated
(``hloscope.tui.timeaxis``; a loop body shows its last simulated iteration and
the border says so), one cell per lane (``┬`` a span starts, ``┴`` it ends,
``│`` in flight, a digit when several are), then the instruction, indented under
an expanded while loop (at a done, the simulated wait beside its name), then its
opcode, shape and estimated time.
The selected transfer's window is tinted; its start and done are marked.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from hloscope.analysis.simulate.verdict import Verdict
from hloscope.hlo.model import Instruction
from hloscope.tui.messages import GoTo, InstructionHighlighted
from hloscope.tui.rows import LANE_TITLES, Cell, Lane, Row, ScheduleLayout, fusion_kind, window_positions
from hloscope.tui.timeaxis import TimeAxis
from hloscope.units import human_us

_LANE_COLORS = ("#8fbcbb", "#ebcb8b", "#88c0d0", "#b48ead")
_HEADER = Style(bold=True, color="#d8dee9", bgcolor="#3b4252")
_POS = Style(color="#4c566a")
_NAME = Style(color="#e5e9f0")
_FREE = Style(color="#616e88")
_DESC = Style(color="#a3be8c")
_COST = Style(color="#d08770")
_TIME = Style(color="#81a1c1")
_WAIT = Style(bold=True, color="#bf616a")
_WINDOW_BG = "#2e3a4f"
_MARK = Style(bold=True, color="#ffffff", bgcolor="#5e81ac")
_CURSOR = Style(reverse=True)
_LANE_W = 4
_TIME_W = 13
#: The border when the module was not simulated (no schedule to replay).
NO_TIMES = "no simulated step (the module is not scheduled): rows in schedule order only"


def _lane_text(cell: Cell, own: bool) -> str:
    if cell.starts and cell.ends:
        g = "┼"
    elif cell.starts:
        g = "┬"
    elif cell.ends:
        g = "┴"
    elif cell.active:
        g = "│" if cell.active == 1 else "┃"
    else:
        g = "█" if own else " "
    count = str(cell.active) if cell.active > 1 else ""
    return (g + count)[:_LANE_W - 1].ljust(_LANE_W)


class ScheduleView(ScrollView, can_focus=True):
    """The schedule of one computation; posts InstructionHighlighted as the cursor moves."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "Top", show=False),
        Binding("end", "jump(-1)", "Bottom", show=False),
        Binding("enter", "open_row", "Expand/open"),
        Binding("right,l", "expand", "Expand loop", show=False),
        Binding("left,h", "collapse", "Collapse loop", show=False),
        Binding("n", "next_in_window(1)", "Next in window"),
        Binding("N", "next_in_window(-1)", "Prev in window", show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)  # watch_cursor repaints two lines

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.layout_: ScheduleLayout | None = None
        self.computation = ""
        self.rows: list[Row] = []
        self.expanded: frozenset[tuple[str, str]] = frozenset()
        self.verdict: Verdict | None = None
        self._window: dict[str, set[int]] = {}
        self._cost: dict[int, float] = {}
        self._lines: dict[int, list[Segment]] = {}  # row index -> drawn line, until the rows or window change
        self.times: TimeAxis | None = None
        self._center_on: int | None = None  # a row to centre once the view has a size (see _center)

    # -- data -----------------------------------------------------------------

    def set_layout(self, layout: ScheduleLayout, times: TimeAxis | None = None) -> None:
        self.layout_ = layout
        self.times = times
        self._cost = {}

    def show(self, computation: str, focus: str | None = None, verdict: Verdict | None = None) -> None:
        """Show ``computation`` with the cursor on ``focus`` (an instruction name) and ``verdict``'s window tinted."""
        if self.layout_ is None:
            return
        self.verdict = verdict
        self._window = window_positions(verdict) if verdict is not None else {}
        if computation != self.computation:
            self.computation = computation
            self.expanded = frozenset()
        self._relayout()
        target = 0
        if focus is not None:
            target = next((i for i, r in enumerate(self.rows)
                           if r.instruction.name == focus and r.instruction.computation == computation), 0)
        self.cursor = target
        self.call_after_refresh(self._center, target)
        comp = self.layout_.report.module.computations[computation]
        execs = self.layout_.report.index.executions(computation)
        self.border_title = Text(f"{computation} · {len(comp.instructions)} instructions · x{execs}/step")
        self.border_subtitle = Text(self.times.caption(computation) if self.times is not None else NO_TIMES)

    def _relayout(self) -> None:
        assert self.layout_ is not None
        self.rows = self.layout_.rows(self.computation, self.expanded)
        self._lines = {}
        longest = max((len(r.instruction.name) for r in self.rows), default=0)
        width = 8 + self._time_width + _LANE_W * len(Lane) + 2 + max(60, longest + 60)
        self.virtual_size = Size(width, len(self.rows) + 1)
        self.refresh()

    @property
    def current(self) -> Row | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    # -- drawing --------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        if y == 0:
            segs = [Segment(self._header(), _HEADER)]
            return Strip(segs).crop(scroll_x, scroll_x + width).extend_cell_length(width, _HEADER)
        i = scroll_y + y - 1
        if i >= len(self.rows):
            return Strip.blank(width)
        if i not in self._lines:
            self._lines[i] = self._segments(i)
        segs = self._lines[i]
        strip = Strip(segs).crop(scroll_x, scroll_x + width)
        if i == self.cursor:
            strip = Strip([Segment(s.text, (s.style or Style()) + _CURSOR) for s in strip])
            return strip.extend_cell_length(width, _CURSOR)
        return strip.extend_cell_length(width)

    @property
    def _time_width(self) -> int:
        return _TIME_W + 2 if self.times is not None else 0

    def _header(self) -> str:
        lanes = "".join(t.ljust(_LANE_W) for t in LANE_TITLES)
        time = f"{'start µs':>{_TIME_W}}  " if self.times is not None else ""
        return f"{'pos':>6}  {time}{lanes}  instruction"

    def _segments(self, i: int) -> list[Segment]:
        row = self.rows[i]
        ins = row.instruction
        in_window = ins.position in self._window.get(ins.computation, ())
        marked = self.verdict is not None and (ins is self.verdict.transfer.instruction or ins is self.verdict.done)
        bg = Style(bgcolor=_WINDOW_BG) if in_window else Style()
        segs = [Segment(f"{ins.position:>6}  ", _POS + bg)]
        at = self.times.at(ins.computation, ins.name) if self.times is not None else None
        if self.times is not None:
            segs.append(Segment(f"{at.start_us:>{_TIME_W},.1f}  " if at is not None else " " * (_TIME_W + 2),
                                _TIME + bg))
        for lane, cell in enumerate(row.cells):
            own = row.lane is not None and row.lane == lane
            segs.append(Segment(_lane_text(cell, own), Style(color=_LANE_COLORS[lane]) + bg))
        segs.append(Segment("  " + "  " * row.depth, bg))
        if row.expandable:
            segs.append(Segment("▾ " if row.expanded else "▸ ", _DESC + bg))
        segs.append(Segment(ins.name, (_MARK if marked else (_FREE if row.lane is None else _NAME)) + bg))
        if at is not None and at.wait_us > 0:  # beside the name: a long shape must not push it off screen
            segs.append(Segment(f"  waited {human_us(at.wait_us)}", _WAIT + bg))
        segs.append(Segment("  " + self._describe(row), _DESC + bg))
        us = self._est(ins)
        if us > 0:
            segs.append(Segment(f"  ~{human_us(us)}", _COST + bg))
        return segs

    def _describe(self, row: Row) -> str:
        ins = row.instruction
        if ins.opcode == "while":
            trips = f"x{row.trip_count}" if row.trip_count is not None else "x?"
            return f"while {trips} body={ins.attr('body').lstrip('%')}"
        kind = fusion_kind(ins)
        op = ins.text_opcode + (f"({ins.wrapped_opcode})" if ins.wrapped_opcode and ins.wrapped_opcode != "fusion"
                                else "")
        if kind:
            op += f" {kind}"
        shape = str(ins.shape)
        return f"{op}  {shape if len(shape) <= 60 else shape[:57] + '...'}"

    def _est(self, ins: Instruction) -> float:
        key = id(ins)
        got = self._cost.get(key)
        if got is None and self.layout_ is not None:
            got = self._cost[key] = self.layout_.report.cost.instruction_us(ins)
        return got or 0.0

    # -- cursor ---------------------------------------------------------------

    def watch_cursor(self, old: int, new: int) -> None:
        if not self.rows:
            return
        new = max(0, min(new, len(self.rows) - 1))
        if new != self.cursor:
            self.cursor = new
            return
        # virtual line new + 1 under the header line: keep lines new..new+1 in view (a scroll
        # repaints the view); else only the two lines whose cursor mark changed are repainted
        self.scroll_to_region(Region(0, new, 1, 2), animate=False, force=True, immediate=True, x_axis=False)
        if 0 <= old < len(self.rows):
            self.refresh_line(old + 1)
        self.refresh_line(new + 1)
        self.post_message(InstructionHighlighted(self.rows[new].instruction))

    def _center(self, i: int) -> None:
        # Called after a refresh; in a hidden tab (start-up, or a jump that also switches to this
        # tab) the view has height 0 here, and scrolling then put the row under the header line,
        # out of view: the row is centred when the view gets its size (on_resize).
        height = self.size.height
        if height < 2:
            self._center_on = i
            return
        self._center_on = None
        self.scroll_to(y=max(0, i + 1 - height // 2), animate=False, force=True)

    def on_resize(self) -> None:
        if self._center_on is not None:
            self._center(self._center_on)

    def action_move(self, delta: int) -> None:
        self.cursor = max(0, min(self.cursor + delta, len(self.rows) - 1))

    def action_page(self, sign: int) -> None:
        self.action_move(sign * max(1, self.size.height - 2))

    def action_jump(self, where: int) -> None:
        self.cursor = 0 if where == 0 else len(self.rows) - 1

    def action_open_row(self) -> None:
        row = self.current
        if row is None:
            return
        if row.expandable:
            self.action_collapse() if row.expanded else self.action_expand()
        elif row.instruction.called_computations and row.instruction.opcode in ("call", "conditional"):
            self.post_message(GoTo(row.instruction.called_computations[0]))

    def action_expand(self) -> None:
        self._set_expanded(True)

    def action_collapse(self) -> None:
        self._set_expanded(False)

    def _set_expanded(self, on: bool) -> None:
        row = self.current
        if row is None or not row.expandable or row.expanded == on:
            return
        key = (row.instruction.computation, row.instruction.name)
        self.expanded = self.expanded | {key} if on else self.expanded - {key}
        ins = row.instruction
        self._relayout()
        self.cursor = next(i for i, r in enumerate(self.rows) if r.instruction is ins)

    def action_next_in_window(self, step: int) -> None:
        """Move to the next (or previous) row inside the selected transfer's window that does work."""
        n = len(self.rows)
        i = self.cursor + step
        while 0 <= i < n:
            r = self.rows[i]
            if r.lane is not None and r.instruction.position in self._window.get(r.instruction.computation, ()):
                self.cursor = i
                return
            i += step
        self.app.bell()

    def on_click(self, event: object) -> None:
        y = getattr(event, "y", None)
        if isinstance(y, int) and y >= 1:
            self.cursor = self.scroll_offset.y + y - 1
