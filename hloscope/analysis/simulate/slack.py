"""The window each async transfer could have had, from the dependency edges.

Pass: ``find_slack(index, verdicts, cost) -> tuple[Slack | None, ...]`` (one per
verdict, None for a transfer that is not an async pair).

A start can be issued once its inputs are produced: its latest data or control
predecessor (the ``data`` and ``control`` edges of ``hloscope.analysis.structure.graph``'s dependency
graph). Its done can wait until the first instruction that really reads the result: the nearest
successor of the done that does work (looked through bitcasts, tuples and
get-tuple-elements); a result only carried in the loop state waits until the end of
the body. The schedule ranges between those two points, across the loop's back edge
when the pair crosses an iteration, are the window the transfer could have had; the
estimated compute in them (the cost model's, loops and calls included) is set beside
what its own window holds. ``could_hide``: that compute covers the transfer alone on
its link. The edges are read from the model and the index (operands, control predecessors,
users) around each pair only: building the whole networkx graph of the computations that hold
async transfers cost more than the rest of the pass (about 40 ms on a 32-layer Llama step).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.kinds import SegmentKind
from hloscope.analysis.simulate.verdict import Verdict, WindowSegment
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.opclass import OpClass
from hloscope.hlo.model import Instruction


@dataclass(frozen=True)
class Slack:
    """The window a transfer could have had, beside the one it got.

    ready_after: the instruction producing the start's latest input (None: ready from the
    top of its computation: parameters, loop state). needed_by: the first instruction that
    really uses the result (None: only the loop state or the computation's result, so the
    done could wait until the end). segments: the schedule ranges of the possible window.
    possible_ops / possible_compute_us: work ops and estimated compute in them. got_ops /
    got_compute_us: the same for the window the schedule gave it. transfer_us: the transfer
    alone on its link. could_hide: possible_compute_us >= transfer_us.
    """

    computation: str
    start: str
    ready_after: str | None
    needed_by: str | None
    segments: tuple[WindowSegment, ...]
    possible_ops: int
    possible_compute_us: float
    got_ops: int
    got_compute_us: float
    transfer_us: float

    @property
    def could_hide(self) -> bool:
        return self.possible_compute_us >= self.transfer_us

    @property
    def room_us(self) -> float:
        """Compute the schedule left unused around the window it got."""
        return max(0.0, self.possible_compute_us - self.got_compute_us)


def _is_async_edge(user: Instruction, src: Instruction) -> bool:
    """The operand edge an async-update/done has from its async op (not a data edge)."""
    return user.opcode in ("async-update", "async-done") and src.opcode.startswith("async-")


class _Edges:
    """The data and control edges inside one computation, read from the model and the index
    (what the dependency graph, ``hloscope.analysis.structure.graph``, holds as ``data``/``control``
    edges; call and async edges leave a computation or pair ops, and the walks skip them)."""

    def __init__(self, index: ModuleIndex, computation: str) -> None:
        self.by_name = index.computation(computation).by_name
        self.users = index.users_map(computation)
        self._control_succ: dict[str, list[Instruction]] | None = None

    def predecessors(self, ins: Instruction) -> list[Instruction]:
        table = self.by_name
        out = [src for src in (table[o] for o in ins.operands) if not _is_async_edge(ins, src)]
        out.extend(table[p] for p in ins.control_predecessors)
        return out

    def successors(self, ins: Instruction) -> list[Instruction]:
        out = [u for u in self.users.get(ins.name, ()) if not _is_async_edge(u, ins)]
        if self._control_succ is None:
            succ: dict[str, list[Instruction]] = {}
            for x in self.by_name.values():
                if x.attr_text and "control-predecessors" in x.attr_text:
                    for p in x.control_predecessors:
                        succ.setdefault(p, []).append(x)
            self._control_succ = succ
        out.extend(self._control_succ.get(ins.name, ()))
        return out


def _latest_input(edges: _Edges, start: Instruction) -> tuple[int, str | None]:
    """The schedule position of the start's latest data/control predecessor, looked through bitcasts
    (-1: every input is ready from the top: parameters, loop-state elements, constants)."""
    best, name = -1, None
    stack = [start]
    seen: set[str] = set()
    while stack:
        for u in edges.predecessors(stack.pop()):
            if u.name in seen:
                continue
            seen.add(u.name)
            op = u.opcode
            if op == "bitcast" or (op == "get-tuple-element" and _of_parameter(edges, u)):
                stack.append(u)
            elif op not in ("parameter", "constant") and u.position > best:
                best, name = u.position, u.name
    return best, name


def _of_parameter(edges: _Edges, ins: Instruction) -> bool:
    return any(edges.by_name[o].opcode == "parameter" for o in ins.operands
               if not _is_async_edge(ins, edges.by_name[o]))


def _first_real_use(edges: _Edges, done: Instruction, end: int) -> tuple[int, str | None]:
    """The position of the first successor of ``done`` that does work with its result, through
    bitcasts, and through tuples only along the element that holds it (``end``, None: no real use
    in its computation: the loop state, the computation's result)."""
    by_name = edges.by_name
    best, name = end, None
    seen: set[tuple[str, tuple[int, ...]]] = set()
    stack: list[tuple[str, tuple[int, ...]]] = [(done.name, ())]
    while stack:
        node, path = stack.pop()
        for user in edges.successors(by_name[node]):
            op = user.opcode
            if op == "tuple":
                nxt = [(user.name, (i, *path)) for i, o in enumerate(user.operands) if o == node]
            elif op == "get-tuple-element" and path:
                nxt = [(user.name, path[1:])] if user.tuple_index == path[0] else []
            elif op in ("bitcast", "opt-barrier"):
                nxt = [(user.name, path)]
            else:
                if not (user.is_root and op == "tuple") and user.position < best:
                    best, name = user.position, user.name
                continue
            for item in nxt:
                if item not in seen:
                    seen.add(item)
                    stack.append(item)
    return best, name


def _segments(index: ModuleIndex, start: Instruction, done: Instruction, crossed: bool, lo: int,
              hi: int) -> list[WindowSegment]:
    """The ranges after position ``lo`` of the start's computation until ``hi`` (exclusive) of the
    done's, in execution order, as ``overlap.window_segments`` lays out the window itself."""
    a, b = start.computation, done.computation
    na = len(index.computation(a).instructions)
    if a == b:
        if not crossed and hi > lo:
            return [WindowSegment(a, lo + 1, hi, SegmentKind.BETWEEN)]
        return [WindowSegment(a, lo + 1, na, SegmentKind.ITERATION_TAIL),
                WindowSegment(a, 0, hi, SegmentKind.ITERATION_HEAD)]
    loop = index.loop_running(b, a)
    if loop is not None:
        return [WindowSegment(a, lo + 1, loop.position, SegmentKind.PROLOGUE),
                WindowSegment(b, 0, hi, SegmentKind.ITERATION_HEAD)]
    loop = index.loop_running(a, b)
    if loop is not None:
        return [WindowSegment(a, lo + 1, na, SegmentKind.ITERATION_TAIL),
                WindowSegment(b, loop.position + 1, hi, SegmentKind.EPILOGUE)]
    return []


def _compute_in(index: ModuleIndex, cost: CostModel, segments: Iterable[WindowSegment],
                transfers: set[tuple[str, str]]) -> tuple[int, float]:
    ops, us = 0, 0.0
    for seg in segments:
        instructions = index.computation(seg.computation).instructions
        classes = index.op_classes(seg.computation)
        for p in range(max(0, seg.first), min(seg.end, len(instructions))):
            if classes[p] in (OpClass.WORK, OpClass.CONTROL) and (
                    seg.computation, instructions[p].name) not in transfers:
                t = cost.instruction_us(instructions[p])
                if t > 0:
                    ops += 1
                    us += t
    return ops, us


def find_slack(index: ModuleIndex, verdicts: Iterable[Verdict], cost: CostModel) -> tuple[Slack | None, ...]:
    verdicts = list(verdicts)
    transfers = {(v.transfer.computation, v.transfer.instruction.name) for v in verdicts}
    edges: dict[str, _Edges] = {}

    def edges_of(computation: str) -> _Edges:
        got = edges.get(computation)
        if got is None:
            got = edges[computation] = _Edges(index, computation)
        return got

    out: list[Slack | None] = []
    for v in verdicts:
        pair = v.pair
        if pair is None or not v.transfer.is_async:
            out.append(None)
            continue
        start, done = pair.start, pair.done
        lo, ready = _latest_input(edges_of(start.computation), start)
        end = len(index.computation(done.computation).instructions)
        hi, needed = _first_real_use(edges_of(done.computation), done, end)
        segments = _segments(index, start, done, pair.crosses_iteration, lo, hi)
        ops, us = _compute_in(index, cost, segments, transfers)
        out.append(Slack(v.transfer.computation, start.name, ready, needed, tuple(segments), ops, us,
                         len(v.compute), v.est_compute_us, v.est_transfer_us))
    return tuple(out)
