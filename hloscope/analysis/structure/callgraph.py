"""The call graph between computations, and how often each runs per step.

Pass: ``build_call_graph(module) -> CallGraph``. Edges are labelled with how a
computation is called (``while_body``, ``while_condition``, ``call``,
``branch``, ``fusion``, ``async``, ``to_apply``). *Scheduled* computations are
the entry and what control flow calls: their instruction order is the GPU
stream order. Fused and async-wrapped computations run inside one instruction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from hloscope.analysis.structure.opclass import SAME_VALUE
from hloscope.hlo.model import Computation, Instruction, Module

if TYPE_CHECKING:  # networkx is imported where a graph is built (views only): ~90 ms off every start
    import networkx as nx


class CallKind(StrEnum):
    """How a computation is called (equal to the edge labels of ``CallGraph.graph``)."""

    WHILE_BODY = "while_body"
    WHILE_CONDITION = "while_condition"
    CALL = "call"
    BRANCH = "branch"  # a conditional's branch
    FUSION = "fusion"
    ASYNC = "async"  # an async-start's wrapped computation
    TO_APPLY = "to_apply"  # a reducer, comparator, scatter combiner, ...


@dataclass(frozen=True, slots=True)
class CallEdge:
    """``caller`` calls ``callee`` through instruction ``via``; kind: how (:class:`CallKind`)."""

    caller: str
    callee: str
    kind: CallKind
    via: Instruction


@dataclass
class CallGraph:
    """edges: every call, in text order. scheduled: the entry and the computations control
    flow runs. executions: runs per step of each scheduled computation (product of the trip
    counts of enclosing loops). callers: computation -> [(caller computation, calling
    instruction)]. unknown_trip: while loops whose trip count is not known. trips: the trip
    count of every while loop of a scheduled computation, by (computation, instruction name)
    (None if unknown), computed once here and read by every pass through :meth:`trip_count`.
    """

    edges: tuple[CallEdge, ...]
    scheduled: set[str]
    executions: dict[str, int]
    callers: dict[str, list[tuple[str, Instruction]]] = field(default_factory=dict)
    unknown_trip: list[str] = field(default_factory=list)
    trips: dict[tuple[str, str], int | None] = field(default_factory=dict)
    module: Module | None = None

    def trip_count(self, loop: Instruction) -> int | None:
        """The loop's trip count (see :func:`trip_count`), computed once per loop."""
        key = (loop.computation, loop.name)
        if key not in self.trips:
            self.trips[key] = trip_count(self.module, loop) if self.module is not None else loop.known_trip_count
        return self.trips[key]

    @property
    def graph(self) -> nx.DiGraph:
        """The call graph as a networkx DiGraph over computation names (built on each access: for
        views); edge data ``kind``, ``via`` (calling instruction name), ``trip_count`` (a while
        body's :meth:`trip_count`, else None)."""
        import networkx as nx  # lazy: networkx is slow to import; views only

        g: nx.DiGraph = nx.DiGraph()
        if self.module is not None:
            g.add_nodes_from(self.module.computations)
        for e in self.edges:
            trip = self.trip_count(e.via) if e.kind is CallKind.WHILE_BODY else None
            g.add_edge(e.caller, e.callee, kind=e.kind, via=e.via.name, trip_count=trip)
        return g


def callee_name(ins: Instruction, key: str) -> str:
    """The computation named by call attribute ``key`` (``body``, ``condition`` ...), without ``%``."""
    return ins.attr(key).lstrip("%")


#: A comparison with the counter on the right, written with the counter on the left.
_MIRRORED = {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE", "NE": "NE"}


def _source(comp: Computation, name: str) -> Instruction | None:
    """The instruction whose value ``name`` carries: past copies, bitcasts, converts, and an
    element taken out of a tuple built in ``comp``."""
    ins = comp.by_name.get(name)
    for _ in range(len(comp.instructions)):  # each step moves to an earlier instruction
        if ins is None:
            return None
        # XLA's trip count analysis looks through copies; a TPU body copies its counter before the add.
        if ins.opcode in SAME_VALUE and len(ins.operands) == 1:
            ins = comp.by_name.get(ins.operands[0])
        elif ins.opcode == "get-tuple-element" and ins.operands:
            built = comp.by_name.get(ins.operands[0])
            if built is None or built.opcode != "tuple" or ins.tuple_index >= len(built.operands):
                return ins
            ins = comp.by_name.get(built.operands[ins.tuple_index])
        else:
            return ins
    return None


@dataclass(frozen=True, slots=True)
class _Value:
    """A scalar value: instruction ``name`` of computation ``comp``."""

    comp: Computation
    name: str

    def int_constant(self) -> int | None:
        ins = _source(self.comp, self.name)
        kind = ins.shape.element_type if ins is not None else ""
        if ins is None or ins.opcode != "constant" or ins.shape.dims or kind[:1] not in ("s", "u") \
                or not kind[1:].isdigit():  # an integer scalar, as XLA's analysis asks
            return None
        try:
            return int(ins.literal.strip())
        except ValueError:
            return None

    def state_index(self) -> int | None:
        """N when the value is element N of the computation's tuple parameter (a loop's state)."""
        ins = _source(self.comp, self.name)
        if ins is None or ins.opcode != "get-tuple-element" or not ins.operands:
            return None
        src = _source(self.comp, ins.operands[0])
        return ins.tuple_index if src is not None and src.opcode == "parameter" else None


def _operation(module: Module, value: _Value) -> tuple[Instruction, tuple[_Value, ...]] | None:
    """The operation that computes ``value`` and its operands. For a fusion (GPU modules fuse the
    condition's compare and the counter's add), the fused root, with each operand that is a
    fusion parameter read as the fusion's operand outside."""
    ins = _source(value.comp, value.name)
    if ins is None:
        return None
    if ins.opcode != "fusion":
        return ins, tuple(_Value(value.comp, o) for o in ins.operands)
    fused = module.computations.get(ins.called_computations[0]) if ins.called_computations else None
    root = _source(fused, fused.root.name) if fused is not None and fused.root is not None else None
    if fused is None or root is None:
        return None
    operands: list[_Value] = []
    for o in root.operands:
        src = _source(fused, o)
        number = int(src.literal) if src is not None and src.opcode == "parameter" and src.literal.isdigit() else None
        if number is not None and number >= len(ins.operands):
            return None
        operands.append(_Value(value.comp, ins.operands[number]) if number is not None else _Value(fused, o))
    return root, tuple(operands)


@dataclass(frozen=True, slots=True)
class _Counter:
    """A loop's induction variable: state element ``index``, compared as ``counter direction
    bound`` (counter on the left) by the condition."""

    index: int
    direction: str
    bound: int


def _condition_counter(module: Module, cond: Computation) -> _Counter | None:
    """The condition's root compares one state element with a constant, either side."""
    op = _operation(module, _Value(cond, cond.root.name)) if cond.root is not None else None
    if op is None or op[0].opcode != "compare" or len(op[1]) != 2:
        return None
    direction = op[0].attr("direction")
    a, b = op[1]
    index, bound = a.state_index(), b.int_constant()
    if index is None or bound is None:  # the bound on the left: N > i is i < N
        index, bound, direction = b.state_index(), a.int_constant(), _MIRRORED.get(direction, "")
    if index is None or bound is None or direction not in _MIRRORED:
        return None
    return _Counter(index, direction, bound)


def _step(module: Module, body: Computation, index: int) -> int | None:
    """What the body adds to state element ``index`` each iteration: the body's root tuple
    holds ``add(element, constant)`` (either order) or ``subtract(element, constant)``."""
    root = body.root
    if root is None or root.opcode != "tuple" or index >= len(root.operands):
        return None
    op = _operation(module, _Value(body, root.operands[index]))
    if op is None or op[0].opcode not in ("add", "subtract") or len(op[1]) != 2:
        return None
    x, y = op[1]
    if x.state_index() == index:
        step = y.int_constant()
        return -step if step is not None and op[0].opcode == "subtract" else step
    return x.int_constant() if op[0].opcode == "add" and y.state_index() == index else None


def _initial(caller: Computation, loop: Instruction, index: int) -> int | None:
    """The constant the loop's init tuple (built in ``caller``) puts in state element ``index``."""
    init = _source(caller, loop.operands[0]) if loop.operands else None
    if init is None or init.opcode != "tuple" or index >= len(init.operands):
        return None
    return _Value(caller, init.operands[index]).int_constant()


def _runs(start: int, step: int, direction: str, bound: int) -> int | None:
    """How many of ``start, start + step, ...`` pass ``counter direction bound`` before the first
    that fails; None when none fails (the loop would run until the integer wraps)."""
    if step == 0:
        return None
    if direction == "NE":
        k, off = divmod(bound - start, step)
        return k if off == 0 and k >= 0 else None
    if direction in ("LT", "LE"):  # counter < limit
        limit = bound + 1 if direction == "LE" else bound
        if start >= limit:
            return 0
        return -(-(limit - start) // step) if step > 0 else None
    limit = bound - 1 if direction == "GE" else bound  # counter > limit
    if start <= limit:
        return 0
    return -(-(start - limit) // -step) if step < 0 else None


def trip_count(module: Module, loop: Instruction) -> int | None:
    """A while loop's trip count: XLA's ``known_trip_count``, else read from the loop.

    The reading follows XLA's while-loop trip count analysis (``ComputeWhileLoopTripCount`` in
    xla/hlo/analysis/while_loop_analysis.cc): the condition compares one state element, the
    counter, with a constant (LT, LE, GT, GE or NE, either side); the body's root puts
    ``counter + constant`` back in that element; the while's init tuple starts it at a constant.
    Copies, bitcasts and converts around the counter, the step or the bound, constants reached
    through a tuple built in the same computation, and a compare or add fused alone, are looked
    through. A loop XLA peeled starts its counter one step on: the peeled iteration's work lies
    outside the loop and is counted there. TPU modules carry no ``known_trip_count``, nor do
    unoptimized modules. None when any part is not so.
    """
    known = loop.known_trip_count
    if known is not None:
        return known
    cond = module.computations.get(callee_name(loop, "condition"))
    body = module.computations.get(callee_name(loop, "body"))
    caller = module.computations.get(loop.computation)
    if cond is None or body is None or caller is None:
        return None
    counter = _condition_counter(module, cond)
    if counter is None:
        return None
    step = _step(module, body, counter.index)
    start = _initial(caller, loop, counter.index)
    if step is None or start is None:
        return None
    return _runs(start, step, counter.direction, counter.bound)


def enclosing_loops(graph: CallGraph, computation: str) -> tuple[Instruction, ...] | None:
    """The innermost while loops whose body runs ``computation`` (directly or through calls,
    branches, fusions), one per call path; None when some path reaches a computation nothing
    calls (the entry) outside any loop, or ``computation`` is not called at all."""
    found: dict[tuple[str, str], Instruction] = {}
    seen = {computation}
    stack = [computation]
    while stack:
        c = stack.pop()
        callers = graph.callers.get(c, [])
        if not callers:
            return None
        for caller, ins in callers:
            if ins.opcode == "while" and callee_name(ins, "body") == c:
                found[(caller, ins.name)] = ins
            elif caller not in seen:
                seen.add(caller)
                stack.append(caller)
    return tuple(found.values())


_CALL_KIND = {"call": CallKind.CALL, "conditional": CallKind.BRANCH, "fusion": CallKind.FUSION,
              "async-start": CallKind.ASYNC}
#: Edge kinds that run the callee on the GPU stream (scheduled computations).
CONTROL_KINDS = frozenset({CallKind.WHILE_BODY, CallKind.WHILE_CONDITION, CallKind.CALL, CallKind.BRANCH})


def _edges(ins: Instruction) -> list[tuple[str, CallKind]]:
    if ins.opcode == "while":
        return [(callee_name(ins, "body"), CallKind.WHILE_BODY),
                (callee_name(ins, "condition"), CallKind.WHILE_CONDITION)]
    kind = _CALL_KIND.get(ins.opcode, CallKind.TO_APPLY)
    return [(c, kind) for c in ins.called_computations]


def build_call_graph(module: Module) -> CallGraph:
    """One walk over the module's calling instructions, which the parser lists while it checks
    that every called computation exists (``Module.calling``)."""
    edges: list[CallEdge] = []
    callers: dict[str, list[tuple[str, Instruction]]] = {}
    control: dict[str, list[tuple[Instruction, str, CallKind]]] = {}  # caller -> (instruction, callee, kind)
    for ins in module.calling:
        caller = ins.computation
        for callee, kind in _edges(ins):
            edges.append(CallEdge(caller, callee, kind, ins))
            callers.setdefault(callee, []).append((caller, ins))
            if kind in CONTROL_KINDS:
                control.setdefault(caller, []).append((ins, callee, kind))
    # Scheduled: the entry and what control flow reaches from it; ordered callers first.
    reach, order = _callers_first(module.entry_name, control)
    scheduled = set(reach)
    executions: dict[str, int] = dict.fromkeys(reach, 0)
    executions[module.entry_name] = 1
    trips: dict[tuple[str, str], int | None] = {}
    unknown: list[str] = []
    for c in order:
        for ins, callee, kind in control.get(c, ()):
            n = executions[c]
            if ins.opcode == "while":
                key = (c, ins.name)
                if key not in trips:
                    trips[key] = trip_count(module, ins)
                trip = trips[key]
                if trip is None:
                    unknown.append(ins.name)
                    trip = 1
                n *= trip + (1 if kind is CallKind.WHILE_CONDITION else 0)
            executions[callee] = executions.get(callee, 0) + n
    return CallGraph(tuple(edges), scheduled, executions, callers, sorted(set(unknown)), trips, module)


def _callers_first(entry: str, control: dict[str, list[tuple[Instruction, str, CallKind]]],
                   ) -> tuple[list[str], list[str]]:
    """Computations reachable from ``entry`` by control edges, and the same ordered every caller
    before its callees (a computation on a call cycle, which XLA rejects, is left out of the order)."""
    reach: list[str] = []
    seen = {entry}
    stack = [entry]
    while stack:
        c = stack.pop()
        reach.append(c)
        for _, callee, _ in control.get(c, ()):
            if callee not in seen:
                seen.add(callee)
                stack.append(callee)
    indegree = dict.fromkeys(reach, 0)
    for c in reach:
        for _, callee, _ in control.get(c, ()):
            indegree[callee] += 1
    ready = [c for c in reach if indegree[c] == 0]
    order: list[str] = []
    while ready:
        c = ready.pop()
        order.append(c)
        for _, callee, _ in control.get(c, ()):
            indegree[callee] -= 1
            if indegree[callee] == 0:
                ready.append(callee)
    return reach, order
