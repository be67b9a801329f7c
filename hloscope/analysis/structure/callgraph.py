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
        import networkx as nx

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


def _int_constant(comp: Computation, name: str) -> int | None:
    ins = comp.by_name.get(name)
    while ins is not None and ins.opcode in ("copy", "convert") and ins.operands:
        ins = comp.by_name.get(ins.operands[0])
    if ins is None or ins.opcode != "constant" or ins.shape.dims:
        return None
    try:
        return int(ins.literal.strip())
    except ValueError:
        return None


def _param_index(comp: Computation, name: str) -> int | None:
    ins = comp.by_name.get(name)
    if ins is None or ins.opcode != "get-tuple-element" or not ins.operands:
        return None
    src = comp.by_name.get(ins.operands[0])
    return ins.tuple_index if src is not None and src.opcode == "parameter" else None


def trip_count(module: Module, loop: Instruction) -> int | None:
    """A while loop's trip count: XLA's ``known_trip_count``, else read from the loop.

    Unoptimized modules carry no ``known_trip_count``; the common counted loop
    (``i < N`` in the condition, ``i`` starting at a constant and growing by a
    constant step in the body) is recognised directly.
    """
    known = loop.known_trip_count
    if known is not None:
        return known
    cond = module.computations.get(callee_name(loop, "condition"))
    body = module.computations.get(callee_name(loop, "body"))
    caller = module.computations.get(loop.computation)
    if cond is None or body is None or caller is None or not loop.operands:
        return None
    root = cond.root
    if root is None or root.opcode != "compare" or len(root.operands) != 2:
        return None
    direction = root.attr("direction")
    a, b = root.operands
    index, bound = _param_index(cond, a), _int_constant(cond, b)
    if direction == "GT":  # N > i
        index, bound, direction = _param_index(cond, b), _int_constant(cond, a), "LT"
    if index is None or bound is None or direction not in ("LT", "LE"):
        return None
    init_tuple = caller.by_name.get(loop.operands[0])
    if init_tuple is None or init_tuple.opcode != "tuple" or index >= len(init_tuple.operands):
        return None
    start = _int_constant(caller, init_tuple.operands[index])
    body_root = body.root
    if start is None or body_root is None or body_root.opcode != "tuple" or index >= len(body_root.operands):
        return None
    step_ins = body.by_name.get(body_root.operands[index])
    if step_ins is None or step_ins.opcode != "add" or len(step_ins.operands) != 2:
        return None
    x, y = step_ins.operands
    step = _int_constant(body, y) if _param_index(body, x) == index else (
        _int_constant(body, x) if _param_index(body, y) == index else None)
    if not step or step <= 0:
        return None
    end = bound + (1 if direction == "LE" else 0)
    return max(0, -(-(end - start) // step))


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
