"""Judge whether the schedule hides each host transfer behind compute or collectives.

Pass: ``judge_overlap(index, transfers, cost, pairs, options) -> list[Verdict]``
(``pairs``: the pairing pass's result, ``pair_async_ops(index)``).

The *window* of an async transfer is what the schedule places between its start
and its done: one range of one computation, or, for a pair that crosses a loop
iteration, the tail of the loop body plus its head (or prologue plus head, or
tail plus epilogue). A while/call/conditional in the window counts with its
body (times the trip count). Collectives count when their own start..done
interval intersects the window. The window's estimated time is the larger of its
compute time and its collective time (they run on different streams); the
hidden time is ``min(transfer, window)``. See docs/verdicts.md.

Results are data (:mod:`hloscope.analysis.simulate.verdict`); the sentences that explain
them are built in ``hloscope.render.verdict_words``.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from enum import Enum

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.kinds import PairKind, Reason, SegmentKind, VerdictKind
from hloscope.analysis.simulate.options import AnalysisOptions as AnalysisOptions
from hloscope.analysis.simulate.timeline import Timeline, TransferTiming
from hloscope.analysis.simulate.verdict import (
    FirstUse,
    InputReady,
    Thresholds,
    Verdict,
    WindowOp,
    WindowSegment,
    verdict_from_wait,
)
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.opclass import OpClass, collective_kind, is_free
from hloscope.analysis.structure.pairs import AsyncPair
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.hlo.model import Computation, Instruction


def window_segments(index: ModuleIndex, start: Instruction, done: Instruction, crossed: bool) -> list[WindowSegment]:
    """The schedule ranges between ``start`` and ``done``, in execution order ([] if unrelated)."""
    module = index.module
    a, b = start.computation, done.computation
    ps, pd = start.position, done.position
    na = len(module.computations[a].instructions)
    if a == b:
        if not crossed and pd > ps:
            return [WindowSegment(a, ps + 1, pd, SegmentKind.BETWEEN)]
        return [WindowSegment(a, ps + 1, na, SegmentKind.ITERATION_TAIL),
                WindowSegment(a, 0, pd, SegmentKind.ITERATION_HEAD)]
    loop = index.loop_running(b, a)  # start in the caller, done in the loop body (prologue)
    if loop is not None and loop.position > ps:
        return [WindowSegment(a, ps + 1, loop.position, SegmentKind.PROLOGUE),
                WindowSegment(b, 0, pd, SegmentKind.ITERATION_HEAD)]
    loop = index.loop_running(a, b)  # start in the loop body, done after the loop (epilogue)
    if loop is not None and loop.position < pd:
        return [WindowSegment(a, ps + 1, na, SegmentKind.ITERATION_TAIL),
                WindowSegment(b, loop.position + 1, pd, SegmentKind.EPILOGUE)]
    return []


def judge_overlap(index: ModuleIndex, transfers: Sequence[HostTransfer], cost: CostModel,
                  pairs: Sequence[AsyncPair], options: AnalysisOptions | None = None,
                  timeline: Timeline | None = None) -> list[Verdict]:
    """Each transfer's verdict, decided once: from its window, and, for an async transfer the
    ``timeline`` (the simulated step) timed, from the simulated wait at its done
    (:func:`judged_by_wait`)."""
    opts = options or AnalysisOptions()
    module = index.module
    by_start: dict[tuple[str, str], list[AsyncPair]] = {}
    coll_pairs: dict[str, list[AsyncPair]] = {}
    for p in pairs:
        by_start.setdefault((p.start.computation, p.start.name), []).append(p)
        if p.kind is PairKind.COLLECTIVE and p.start.computation == p.done.computation:
            coll_pairs.setdefault(p.start.computation, []).append(p)
    transfer_ops = {(t.computation, t.instruction.name) for t in transfers}
    in_flight = {c: _CollectivesInFlight(ps) for c, ps in coll_pairs.items()}
    windows = _WindowOps(index, transfer_ops, cost)

    out: list[Verdict] = []
    for t in transfers:
        xfer_us = cost.transfer_us(t.bytes, t.direction)
        if t.is_annotation or not module.is_scheduled:
            out.append(Verdict(t, VerdictKind.UNSCHEDULED, Reason.NOT_SCHEDULED, est_transfer_us=xfer_us))
            continue
        if not t.is_async:
            out.append(Verdict(t, VerdictKind.SYNC, Reason.SYNCHRONOUS, est_transfer_us=xfer_us))
            continue
        mine = by_start.get((t.computation, t.instruction.name), [])
        if not mine:
            out.append(Verdict(t, VerdictKind.EXPOSED, Reason.NO_DONE, est_transfer_us=xfer_us))
            continue
        # Prefer the pair within one iteration; a peeled prologue's pair is the fallback.
        pair = min(mine, key=lambda p: (p.crosses_iteration, p.done.computation != p.start.computation))
        segments = window_segments(index, t.instruction, pair.done, pair.crosses_iteration)
        compute, colls, others = _fill_window(windows, segments, in_flight, cost)
        est_compute = sum((w.est_us for w in compute), 0.0)
        est_coll = sum((w.est_us for w in colls), 0.0)
        hidden = min(xfer_us, max(est_compute, est_coll))
        verdict, reason = _decide(bool(segments), bool(compute or colls), sum(s.size for s in segments),
                                  xfer_us, hidden, max(est_compute, est_coll), opts)
        timing = timeline.transfers.get((t.computation, t.instruction.name)) if timeline is not None else None
        if timing is not None and timing.matched:
            verdict, reason, hidden = judged_by_wait(verdict, reason, xfer_us, timing.mean_wait_us, opts.thresholds)
            verdict, reason = judged_by_blame(verdict, reason, xfer_us, timing, opts.thresholds)
            if reason is Reason.HELD_UP:  # hidden from its own done, not from the step: what it cost others
                hidden = max(0.0, xfer_us - timing.blame_per_execution_us)
        else:
            timing = None
        out.append(Verdict(
            t, verdict, reason, pair, tuple(segments), tuple(compute), tuple(colls), tuple(others),
            xfer_us, est_compute, est_coll, hidden,
            input_ready(index, t), first_use(index, pair.done), timing,
        ))
    return out


def judged_by_wait(window_verdict: VerdictKind, window_reason: Reason, transfer_us: float, wait_us: float,
                   thresholds: Thresholds) -> tuple[VerdictKind, Reason, float]:
    """(verdict, reason, hidden µs) of an async transfer the simulation timed: the verdict of the
    mean wait at its done (:func:`verdict_from_wait`), the hidden time the transfer minus that
    wait. A window that holds no work keeps its reason when the wait confirms ``exposed``."""
    kind = verdict_from_wait(transfer_us, wait_us, thresholds)
    keep = kind is VerdictKind.EXPOSED and window_reason in (Reason.EMPTY_WINDOW, Reason.ONLY_FREE_OPS,
                                                             Reason.UNKNOWN_WINDOW)
    hidden = transfer_us - wait_us
    if hidden <= 1e-6 * transfer_us:  # the whole transfer waited for (float noise aside)
        hidden = 0.0
    return kind, window_reason if keep else Reason.SIMULATED, hidden


#: Per step, waits of others charged to a transfer below this fraction of its own time (per
#: execution) are float noise, not a hold.
HELD_UP_NOISE = 1e-6

_SEVERITY = {VerdictKind.HIDDEN: 0, VerdictKind.PARTIAL: 1, VerdictKind.EXPOSED: 2}


def held_others_up(held_up_us: float, executions: int, transfer_us: float) -> bool:
    """The transfer made another transfer's done wait (more than float noise): ``held_up_us`` per step
    over its ``executions``."""
    per_exec = held_up_us / executions if executions else 0.0
    return per_exec > HELD_UP_NOISE * max(1.0, transfer_us)


def judged_by_blame(verdict: VerdictKind, reason: Reason, transfer_us: float, timing: TransferTiming,
                    thresholds: Thresholds) -> tuple[VerdictKind, Reason]:
    """A transfer that held another up is never ``hidden``: its verdict is that of the waits
    charged to it per execution (its blame: its own and what it made others wait), at least
    ``partial``, unless its own wait already says worse. Otherwise ``(verdict, reason)``."""
    return judged_by_blame_of(verdict, reason, transfer_us, timing.executions, timing.blame_us, timing.held_up_us,
                              thresholds)


def judged_by_blame_of(verdict: VerdictKind, reason: Reason, transfer_us: float, executions: int, blame_us: float,
                       held_up_us: float, thresholds: Thresholds) -> tuple[VerdictKind, Reason]:
    """:func:`judged_by_blame` from the figures it reads (per step: executions, blame, the waits it
    caused): the margins' what-ifs give them without building a :class:`TransferTiming`."""
    if not held_others_up(held_up_us, executions, transfer_us):
        return verdict, reason
    by_blame = verdict_from_wait(transfer_us, blame_us / executions if executions else 0.0, thresholds)
    if by_blame is VerdictKind.HIDDEN:
        by_blame = VerdictKind.PARTIAL
    if _SEVERITY.get(verdict, 2) >= _SEVERITY[by_blame]:
        return verdict, reason
    return by_blame, Reason.HELD_UP


class _CollectivesInFlight:
    """The async collective pairs of one computation (start and done in it), found by position."""

    def __init__(self, pairs: list[AsyncPair]) -> None:
        self.pairs = pairs
        order = sorted(range(len(pairs)), key=lambda k: pairs[k].start.position)
        self.starts = [pairs[k].start.position for k in order]
        self.order = order
        self.span = max((max(0, p.done.position - p.start.position) for p in pairs), default=0)

    def near(self, lo: int, hi: int) -> list[AsyncPair]:
        """In their original order, the pairs that may be in flight over ``[lo, hi)``: those whose
        start lies in ``[lo - longest span, hi)`` (a pair starting earlier is done before ``lo``)."""
        a = bisect.bisect_left(self.starts, lo - self.span)
        b = bisect.bisect_left(self.starts, hi)
        return [self.pairs[k] for k in sorted(self.order[a:b])]


class _WindowOps:
    """What each instruction of a scheduled computation adds to a window that holds it, found
    once per computation and shared by every window there.

    Per computation, the positions of the instructions that count (in schedule order):
    free ops and async dones have no time of their own, and an async start counts only when
    it is another host transfer (an async op's time is counted where it runs; collectives: in
    flight, in ``_fill_window``). For each of them, once: a host transfer, a synchronous
    collective, or compute (control flow always, other work when its estimate is above 0).
    """

    def __init__(self, index: ModuleIndex, transfer_ops: set[tuple[str, str]], cost: CostModel) -> None:
        self.index = index
        self.transfer_ops = transfer_ops
        self.cost = cost
        self._positions: dict[str, list[int]] = {}
        self._entry: dict[Instruction, tuple[_Role, WindowOp | None]] = {}

    def positions(self, comp: str) -> list[int]:
        got = self._positions.get(comp)
        if got is None:
            transfer_ops = self.transfer_ops
            got = [p for p, (w, cls) in enumerate(zip(self.index.computation(comp).instructions,
                                                      self.index.op_classes(comp), strict=True))
                   if not (cls is OpClass.FREE or cls is OpClass.DONE)
                   and (cls is not OpClass.START or (comp, w.name) in transfer_ops)]
            self._positions[comp] = got
        return got

    def entry(self, comp: str, w: Instruction, cls: OpClass) -> tuple[_Role, WindowOp | None]:
        got = self._entry.get(w)
        if got is None:
            got = self._entry[w] = self._classify(comp, w, cls)
        return got

    def _classify(self, comp: str, w: Instruction, cls: OpClass) -> tuple[_Role, WindowOp | None]:
        if (comp, w.name) in self.transfer_ops:
            return _Role.TRANSFER, None
        if cls is OpClass.COLLECTIVE or (cls is OpClass.UPDATE and collective_kind(w)):
            return _Role.COLLECTIVE, WindowOp(w, self.cost.collective_us(w))  # a synchronous collective
        if cls is OpClass.CONTROL:
            return _Role.COMPUTE, WindowOp(w, self.cost.instruction_us(w))
        if cls is OpClass.WORK:
            us = self.cost.instruction_us(w)
            if us > 0:
                return _Role.COMPUTE, WindowOp(w, us)
        return _Role.NONE, None


class _Role(Enum):
    NONE = 0
    TRANSFER = 1
    COLLECTIVE = 2
    COMPUTE = 3


def _fill_window(windows: _WindowOps, segments: list[WindowSegment], in_flight: dict[str, _CollectivesInFlight],
                 cost: CostModel) -> tuple[list[WindowOp], list[WindowOp], list[Instruction]]:
    """Classify what the window holds: compute, collectives (sync, and async in flight), other transfers."""
    compute: list[WindowOp] = []
    colls: list[WindowOp] = []
    coll_names: set[str] = set()
    others: list[Instruction] = []
    index = windows.index
    for seg in segments:
        lo, hi = seg.first, seg.end
        comp = seg.computation
        classes = index.op_classes(comp)
        instructions = index.computation(comp).instructions
        positions = windows.positions(comp)
        for p in positions[bisect.bisect_left(positions, lo):bisect.bisect_left(positions, hi)]:
            w = instructions[p]
            role, op = windows.entry(comp, w, classes[p])
            if op is None:
                if role is _Role.TRANSFER:
                    others.append(w)
            elif role is _Role.COMPUTE:
                compute.append(op)
            else:
                colls.append(op)
                coll_names.add(w.name)
        near = in_flight.get(seg.computation)
        for cp in near.near(lo, hi) if near is not None else ():  # async collectives in flight during the window
            cs, cd = cp.start.position, cp.done.position
            inter = min(cd, hi) - max(cs, lo)
            if inter > 0 or (cs < lo <= cd and hi > lo):
                frac = min(1.0, max(inter, 1) / max(cd - cs, 1))
                us = frac * cost.collective_us(cp.start)
                if cp.start.name in coll_names:  # in flight across two segments: one entry, both parts
                    i = next(k for k, c in enumerate(colls) if c.name == cp.start.name)
                    colls[i] = WindowOp(cp.start, colls[i].est_us + us, min(1.0, colls[i].fraction + frac))
                else:
                    colls.append(WindowOp(cp.start, us, frac))
                    coll_names.add(cp.start.name)
    return compute, colls, others


def _decide(known_window: bool, has_work: bool, window_size: int, transfer_us: float, hidden_us: float,
            window_us: float, opts: AnalysisOptions) -> tuple[VerdictKind, Reason]:
    if not known_window:
        return VerdictKind.EXPOSED, Reason.UNKNOWN_WINDOW
    if not has_work:
        return VerdictKind.EXPOSED, (Reason.EMPTY_WINDOW if window_size == 0 else Reason.ONLY_FREE_OPS)
    ratio = hidden_us / transfer_us if transfer_us > 0 else (1.0 if window_us > 0 else 0.0)
    return opts.thresholds.verdict(1.0 - ratio), Reason.ESTIMATED


def _work_between(index: ModuleIndex, computation: str, lo: int, hi: int) -> int:
    return index.work_ops_between(computation, lo, hi)


def input_ready(index: ModuleIndex, t: HostTransfer) -> InputReady | None:
    """The latest-produced device-side input of the start, looked through bitcasts."""
    comp = index.computation(t.computation)
    start = t.instruction
    inputs = []
    for o in start.operands:
        src = comp.by_name.get(o)
        while src is not None and src.opcode == "bitcast" and src.operands:
            src = comp.by_name.get(src.operands[0])
        if src is not None and src.opcode != "constant" and not src.shape.in_memory_space(t.host_space):
            inputs.append(src)
    if not inputs:
        return None
    last = max(inputs, key=lambda p: p.position)
    if _from_top(comp, last):
        return InputReady(last, True, start.position, _work_between(index, t.computation, 0, start.position))
    return InputReady(last, False, start.position - last.position - 1,
                      _work_between(index, t.computation, last.position + 1, start.position))


def _from_top(comp: Computation, ins: Instruction) -> bool:
    """A parameter, or an element of one (loop state): ready from the top of the computation. An
    element of a multi-output fusion's or a while's result is ready only once that op has run."""
    while ins.opcode == "get-tuple-element" and ins.operands and ins.operands[0] in comp.by_name:
        ins = comp.by_name[ins.operands[0]]
    return ins.opcode == "parameter"


def first_use(index: ModuleIndex, done: Instruction) -> FirstUse | None:
    """The earliest-scheduled instruction that really uses ``done``'s value.

    Looks through ops that only rename the value (bitcasts, opt-barriers), and
    through tuples and get-tuple-elements *of the element that holds it*: a
    result placed at index 1 of a tuple is used by whoever reads index 1, not by
    a reader of other indices. A root tuple is a real use (the loop state).
    """
    best: tuple[Instruction, tuple[int, ...]] | None = None
    frontier: list[tuple[str, tuple[int, ...]]] = [(done.name, ())]
    seen: set[tuple[str, tuple[int, ...]]] = set()
    users = index.users_map(done.computation)
    while frontier:
        name, path = frontier.pop()
        for u in users.get(name, []):
            nxt: list[tuple[str, tuple[int, ...]]] = []
            if u.opcode == "get-tuple-element" and not u.is_root:
                if path and u.tuple_index != path[0]:
                    continue  # reads another element of the tuple
                nxt.append((u.name, path[1:]))
            elif u.opcode == "tuple" and not u.is_root:
                nxt.extend((u.name, (i, *path)) for i, o in enumerate(u.operands) if o == name)
            elif is_free(u) and not u.is_root:
                nxt.append((u.name, path))
            elif best is None or u.position < best[0].position:
                best = (u, (u.operands.index(name), *path) if u.opcode == "tuple" else path)
            for key in nxt:
                if key not in seen:
                    seen.add(key)
                    frontier.append(key)
    if best is None:
        return None
    use, element = best
    return FirstUse(use, element, use.is_root and use.opcode == "tuple", use.position - done.position - 1,
                    _work_between(index, done.computation, done.position + 1, use.position))
