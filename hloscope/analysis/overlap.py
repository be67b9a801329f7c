"""Judge whether the schedule hides each host transfer behind compute or collectives.

Pass: ``judge_overlap(module, transfers, pairs, cost, ...) -> list[Verdict]``.

The *window* of an async transfer is what the schedule places between its start
and its done: one range of one computation, or, for a pair that crosses a loop
iteration, the tail of the loop body plus its head (or prologue plus head, or
tail plus epilogue). A while/call/conditional in the window counts with its
body (times the trip count). Collectives count when their own start..done
interval intersects the window. The window's estimated time is the larger of its
compute time and its collective time (they run on different streams); the
hidden time is ``min(transfer, window)``. See docs/verdicts.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hloscope.analysis.cost import CostModel
from hloscope.analysis.opclass import CONTROL_FLOW, collective_kind, is_done, is_free, is_start
from hloscope.analysis.pairs import AsyncPair
from hloscope.analysis.transfers import HostTransfer
from hloscope.hlo.model import Computation, Instruction, Module

SYNC, EXPOSED, PARTIAL, HIDDEN, UNSCHEDULED = "sync", "exposed", "partial", "hidden", "unscheduled"
VERDICTS = (SYNC, EXPOSED, PARTIAL, HIDDEN, UNSCHEDULED)


@dataclass
class Verdict:
    """The judgement for one transfer. Times are estimates in microseconds."""

    transfer: HostTransfer
    done: Instruction | None
    crosses_iteration: bool
    window_size: int
    overlapped_compute: list[str] = field(default_factory=list)
    overlapped_collectives: list[str] = field(default_factory=list)
    other_transfers: list[str] = field(default_factory=list)
    est_transfer_us: float = 0.0
    est_compute_us: float = 0.0
    est_collective_us: float = 0.0
    est_hidden_us: float = 0.0
    verdict: str = EXPOSED
    why: str = ""


Segment = tuple[str, int, int]  # computation, first position, end position (exclusive)


def window_segments(module: Module, start: Instruction, done: Instruction, crossed: bool) -> list[Segment]:
    a, b = start.computation, done.computation
    ps, pd = start.position, done.position
    ca = module.computations[a]
    if a == b:
        if not crossed and pd > ps:
            return [(a, ps + 1, pd)]
        return [(a, ps + 1, len(ca.instructions)), (a, 0, pd)]
    cb = module.computations[b]
    for w in ca.instructions:  # start in the caller, done in the loop body (prologue)
        if w.opcode == "while" and w.attr("body").lstrip("%") == b and w.position > ps:
            return [(a, ps + 1, w.position), (b, 0, pd)]
    for w in cb.instructions:  # start in the loop body, done after the loop (epilogue)
        if w.opcode == "while" and w.attr("body").lstrip("%") == a and w.position < pd:
            return [(a, ps + 1, len(ca.instructions)), (b, w.position + 1, pd)]
    return []


def judge_overlap(
    module: Module, transfers: list[HostTransfer], pairs: list[AsyncPair], cost: CostModel,
    hidden_ratio: float = 0.95, exposed_ratio: float = 0.05,
) -> list[Verdict]:
    by_start: dict[tuple[str, str], list[AsyncPair]] = {}
    coll_pairs: dict[str, list[AsyncPair]] = {}
    for p in pairs:
        by_start.setdefault((p.start.computation, p.start.name), []).append(p)
        if p.kind == "collective" and p.start.computation == p.done.computation:
            coll_pairs.setdefault(p.start.computation, []).append(p)
    transfer_ops = {(t.computation, t.instruction.name) for t in transfers}
    users_cache: dict[str, dict[str, list[Instruction]]] = {}

    out: list[Verdict] = []
    for t in transfers:
        v = Verdict(transfer=t, done=None, crosses_iteration=False, window_size=0)
        v.est_transfer_us = cost.transfer_us(t.bytes, t.direction)
        out.append(v)
        if t.is_annotation or not module.is_scheduled:
            v.verdict = UNSCHEDULED
            v.why = "module is not scheduled (before optimizations): no order to judge; compile it to see the schedule"
            continue
        if not t.is_async:
            v.verdict = SYNC
            v.why = "synchronous: the stream waits for the whole transfer"
            continue
        mine = by_start.get((t.computation, t.instruction.name), [])
        if not mine:
            v.verdict = EXPOSED
            v.why = "no matching done found: cannot place the transfer's window"
            continue
        # Prefer the pair within one iteration; a peeled prologue's pair is the fallback.
        pair = min(mine, key=lambda p: (p.crosses_iteration, p.done.computation != p.start.computation))
        v.done = pair.done
        v.crosses_iteration = pair.crosses_iteration
        segments = window_segments(module, t.instruction, pair.done, pair.crosses_iteration)
        _fill_window(v, module, segments, transfer_ops, coll_pairs, cost)
        _decide(v, bool(segments), hidden_ratio, exposed_ratio)
        if v.verdict in (EXPOSED, PARTIAL):
            v.why += _dependency_hint(module, t, pair.done, users_cache)
    return out


def _fill_window(v: Verdict, module: Module, segments: list[Segment], transfer_ops: set[tuple[str, str]],
                 coll_pairs: dict[str, list[AsyncPair]], cost: CostModel) -> None:
    """Classify what the window holds and add up its estimated times."""
    for comp, lo, hi in segments:
        for w in module.computations[comp].instructions[lo:hi]:
            v.window_size += 1
            if (comp, w.name) in transfer_ops:
                v.other_transfers.append(w.name)
                continue
            if collective_kind(w) and not (is_start(w) or is_done(w)):
                v.overlapped_collectives.append(w.name)  # a synchronous collective
                v.est_collective_us += cost.collective_us(w)
                continue
            us = cost.instruction_us(w)
            if w.opcode in CONTROL_FLOW or (us > 0 and not is_free(w) and not is_start(w) and not is_done(w)):
                v.overlapped_compute.append(w.name)
                v.est_compute_us += us
        for cp in coll_pairs.get(comp, []):  # async collectives in flight during the window
            cs, cd = cp.start.position, cp.done.position
            inter = min(cd, hi) - max(cs, lo)
            if inter > 0 or (cs < lo <= cd and hi > lo):
                frac = min(1.0, max(inter, 1) / max(cd - cs, 1))
                if cp.start.name not in v.overlapped_collectives:
                    v.overlapped_collectives.append(cp.start.name)
                v.est_collective_us += frac * cost.collective_us(cp.start)


def _decide(v: Verdict, known_window: bool, hidden_ratio: float, exposed_ratio: float) -> None:
    window_us = max(v.est_compute_us, v.est_collective_us)
    v.est_hidden_us = min(v.est_transfer_us, window_us)
    ratio = v.est_hidden_us / v.est_transfer_us if v.est_transfer_us > 0 else (1.0 if window_us > 0 else 0.0)
    if not known_window:
        v.verdict = EXPOSED
        v.why = "start and done are in computations hloscope cannot relate; window unknown"
    elif not v.overlapped_compute and not v.overlapped_collectives:
        v.verdict = EXPOSED
        v.why = ("done placed directly after start: nothing scheduled in between" if v.window_size == 0
                 else f"window holds {v.window_size} instruction(s) but no compute and no collective")
    else:
        v.verdict = HIDDEN if ratio >= hidden_ratio else EXPOSED if ratio <= exposed_ratio else PARTIAL
        v.why = (f"window: {len(v.overlapped_compute)} compute op(s) ~{v.est_compute_us:.1f} us, "
                 f"{len(v.overlapped_collectives)} collective(s) ~{v.est_collective_us:.1f} us, "
                 f"vs transfer ~{v.est_transfer_us:.1f} us (estimates)")
    if v.other_transfers:
        v.why += f"; shares the host link with {len(v.other_transfers)} other transfer(s) in its window"


def _dependency_hint(module: Module, t: HostTransfer, done: Instruction,
                     users_cache: dict[str, dict[str, list[Instruction]]]) -> str:
    """Why the window could not be wider: who produced the data, who waits for it."""
    comp = module.computations[t.computation]
    start = t.instruction
    hints = []
    # Device-side inputs (the update being offloaded, or the slice index being fetched),
    # looked at through bitcasts: when did they become available?
    inputs = []
    for o in start.operands:
        src = comp.by_name.get(o)
        while src is not None and src.opcode == "bitcast" and src.operands:
            src = comp.by_name.get(src.operands[0])
        if src is not None and src.opcode != "constant" and not src.shape.in_memory_space(t.host_space):
            inputs.append(src)
    if inputs:
        last = max(inputs, key=lambda p: p.position)
        if last.opcode in ("get-tuple-element", "parameter"):
            hints.append("its inputs are available from the top of the computation, "
                         f"{start.position} op(s) before the start")
        else:
            gap = start.position - last.position - 1
            hints.append(f"its input {last.name} is produced {gap} op(s) before the start"
                         if gap > 0 else f"the start follows the op producing its input ({last.name}) directly")
    dcomp = module.computations[done.computation]
    if dcomp.name not in users_cache:
        users_cache[dcomp.name] = _users(dcomp)
    use = _first_real_use(users_cache[dcomp.name], done)
    if use is not None:
        gap = use.position - done.position - 1
        what = "the loop state for the next iteration" if use.is_root and use.opcode == "tuple" else use.name
        if gap > 0:
            hints.append(f"nothing forced the early done: the first real use of its result ({what}) "
                         f"comes {gap} op(s) later")
        else:
            hints.append(f"its result is needed at once by {what}")
    return ("; " + "; ".join(hints)) if hints else ""


def _users(comp: Computation) -> dict[str, list[Instruction]]:
    users: dict[str, list[Instruction]] = {}
    for ins in comp.instructions:
        for o in ins.operands:
            users.setdefault(o, []).append(ins)
    return users


def _first_real_use(users: dict[str, list[Instruction]], done: Instruction) -> Instruction | None:
    """The earliest-scheduled user of ``done``'s value, looking through free ops
    (bitcasts, tuples, get-tuple-element) that only rename it."""
    best: Instruction | None = None
    frontier = [done.name]
    seen: set[str] = set()
    while frontier:
        for u in users.get(frontier.pop(), []):
            if u.name in seen:
                continue
            seen.add(u.name)
            if is_free(u) and not u.is_root:
                frontier.append(u.name)
            elif best is None or u.position < best.position:
                best = u
    return best
