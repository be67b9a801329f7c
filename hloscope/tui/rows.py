"""The schedule as rows: one per instruction, with lanes showing which async spans are in flight.

Pure (no Textual). ``ScheduleLayout(report)`` lays out each computation once,
on demand: the lane an instruction belongs to (compute, each host link
direction, collectives), and per lane which spans start, end or are in flight
at each schedule position. A span is an async start..done pair read from
``report.pairs``; a pair whose done comes before its start in a loop body
(it crosses an iteration) is drawn from its start to the end of the body and
from the top of the body to its done. ``rows(computation, expanded)`` flattens
a computation with its expanded while bodies into the list a view scrolls.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from hloscope.analysis.kinds import PairKind
from hloscope.analysis.report import Report
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.analysis.structure.opclass import Resource, is_done, is_start, link_of, resource_of
from hloscope.hlo.model import Instruction


class Lane(IntEnum):
    """The view's columns: the resources of ``opclass.Resource``, async ops shown with compute."""

    COMPUTE = 0
    TO_HOST = 1
    TO_DEVICE = 2
    COLLECTIVE = 3


LANE_TITLES = ("cmp", "D>H", "H>D", "col")
LANE_OF_RESOURCE = {Resource.COMPUTE: Lane.COMPUTE, Resource.ASYNC: Lane.COMPUTE, Resource.LINK_TO_HOST: Lane.TO_HOST,
                    Resource.LINK_TO_DEVICE: Lane.TO_DEVICE, Resource.COLLECTIVE: Lane.COLLECTIVE}


@dataclass(frozen=True, slots=True)
class Cell:
    """What one lane shows at one schedule position: spans in flight, and whether one starts or ends here."""

    active: int = 0
    starts: bool = False
    ends: bool = False


EMPTY = Cell()


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the schedule view. depth: nesting of expanded while bodies (0 = the computation shown)."""

    instruction: Instruction
    depth: int
    lane: Lane | None
    cells: tuple[Cell, ...]
    trip_count: int | None = None
    expandable: bool = False
    expanded: bool = False


class ScheduleLayout:
    """Lanes and spans of every computation of a report, computed once per computation."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self._direction = {(t.computation, t.instruction.name): t.direction for t in report.transfers}
        self._cells: dict[str, list[tuple[Cell, ...]]] = {}
        self._pairs_by_comp: dict[str, list[tuple[Lane, int, int]]] | None = None
        self._top: dict[str, list[Row]] = {}  # rows of a computation with nothing expanded

    def lane_of(self, ins: Instruction) -> Lane | None:
        """The lane an instruction belongs to (None for free bookkeeping ops)."""
        resource = resource_of(ins, self._direction.get((ins.computation, ins.name)))
        if resource is None:
            return None
        if resource is Resource.ASYNC and (is_start(ins) or is_done(ins)):
            return self._partner_lane(ins)  # a transfer's done: its start's link
        return LANE_OF_RESOURCE[resource]

    def _partner_lane(self, ins: Instruction) -> Lane | None:
        for lane, s, e in self._spans().get(ins.computation, []):
            if ins.position in (s, e):
                return lane
        return None

    def _spans(self) -> dict[str, list[tuple[Lane, int, int]]]:
        """Computation -> (lane, start position, done position) of its async pairs; -1 marks an open end."""
        if self._pairs_by_comp is None:
            out: dict[str, list[tuple[Lane, int, int]]] = {}
            for p in self.report.pairs:
                d = self._direction.get((p.start.computation, p.start.name))
                if d is not None:
                    lane = LANE_OF_RESOURCE[link_of(d)]
                elif p.kind is PairKind.COLLECTIVE:
                    lane = Lane.COLLECTIVE
                else:
                    lane = Lane.COMPUTE
                if p.start.computation == p.done.computation:
                    out.setdefault(p.start.computation, []).append((lane, p.start.position, p.done.position))
                else:
                    out.setdefault(p.start.computation, []).append((lane, p.start.position, -1))
                    out.setdefault(p.done.computation, []).append((lane, -1, p.done.position))
            self._pairs_by_comp = out
        return self._pairs_by_comp

    def cells(self, computation: str) -> list[tuple[Cell, ...]]:
        """Per schedule position of ``computation``, one :class:`Cell` per lane."""
        got = self._cells.get(computation)
        if got is not None:
            return got
        n = len(self.report.module.computations[computation].instructions)
        lanes = len(Lane)
        delta = [[0] * (n + 1) for _ in range(lanes)]
        starts: set[tuple[int, int]] = set()
        ends: set[tuple[int, int]] = set()

        def run(lane: int, first: int, last: int) -> None:  # in flight over [first, last]
            if first <= last:
                delta[lane][first] += 1
                delta[lane][last + 1] -= 1

        for lane, s, e in self._spans().get(computation, []):
            if s >= 0:
                starts.add((lane, s))
            if e >= 0:
                ends.add((lane, e))
            if s >= 0 and e >= 0 and s <= e:
                run(lane, s, e)
            else:  # crosses an iteration or a computation: to the end, and from the top
                if s >= 0:
                    run(lane, s, n - 1)
                if e >= 0:
                    run(lane, 0, e)
        rows: list[tuple[Cell, ...]] = []
        acc = [0] * lanes
        for pos in range(n):
            cells = []
            for k in range(lanes):
                acc[k] += delta[k][pos]
                st, en = (k, pos) in starts, (k, pos) in ends
                cells.append(Cell(acc[k], st, en) if acc[k] or st or en else EMPTY)
            rows.append(tuple(cells))
        self._cells[computation] = rows
        return rows

    def rows(self, computation: str, expanded: frozenset[tuple[str, str]] = frozenset(), depth: int = 0,
             _seen: frozenset[str] = frozenset()) -> list[Row]:
        """The rows of ``computation`` in schedule order, expanded while loops followed by their bodies."""
        if not expanded and depth == 0:
            got = self._top.get(computation)
            if got is None:
                got = self._top[computation] = self._rows(computation, expanded, depth, _seen)
            return list(got)
        return self._rows(computation, expanded, depth, _seen)

    def _rows(self, computation: str, expanded: frozenset[tuple[str, str]], depth: int,
              _seen: frozenset[str]) -> list[Row]:
        index = self.report.index
        comp = self.report.module.computations[computation]
        cells = self.cells(computation)
        out: list[Row] = []
        for ins in comp.instructions:
            if ins.opcode == "while":
                body = index.while_body(ins)
                key = (computation, ins.name)
                is_open = key in expanded and body is not None and body.name not in _seen
                out.append(Row(ins, depth, Lane.COMPUTE, cells[ins.position], index.trip_count(ins),
                               expandable=body is not None, expanded=is_open))
                if is_open and body is not None:
                    out.extend(self.rows(body.name, expanded, depth + 1, _seen | {computation}))
            else:
                out.append(Row(ins, depth, self.lane_of(ins), cells[ins.position]))
        return out


def window_positions(v: Verdict) -> dict[str, set[int]]:
    """Computation -> schedule positions inside the transfer's window, its start and done included."""
    out: dict[str, set[int]] = {}
    for seg in v.window:
        out.setdefault(seg.computation, set()).update(range(seg.first, seg.end))
    t = v.transfer.instruction
    out.setdefault(t.computation, set()).add(t.position)
    if v.done is not None:
        out.setdefault(v.done.computation, set()).add(v.done.position)
    return out


def fusion_kind(ins: Instruction) -> str:
    """``kLoop``/``kInput``/``kOutput``/``kCustom`` for a fusion ("" otherwise)."""
    if ins.opcode != "fusion" and ins.wrapped_opcode != "fusion":
        return ""
    return ins.attr("kind")
