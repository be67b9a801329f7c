"""The call graph between computations, and how often each runs per step.

Pass: ``build_call_graph(module) -> CallGraph``. Edges are labelled with how a
computation is called (``while_body``, ``while_condition``, ``call``,
``branch``, ``fusion``, ``async``, ``to_apply``). *Scheduled* computations are
the entry and what control flow calls: their instruction order is the GPU
stream order. Fused and async-wrapped computations run inside one instruction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from hloscope.hlo.model import Computation, Instruction, Module


@dataclass
class CallGraph:
    """graph: networkx DiGraph over computation names; edge data ``kind``, ``via``
    (calling instruction name), ``trip_count`` (while bodies; None if unknown).
    executions: runs per step of each scheduled computation (product of the trip
    counts of enclosing loops). callers: computation -> [(caller computation,
    calling instruction)]. unknown_trip: while loops whose trip count XLA did not prove.
    """

    graph: nx.DiGraph
    scheduled: set[str]
    executions: dict[str, int]
    callers: dict[str, list[tuple[str, Instruction]]] = field(default_factory=dict)
    unknown_trip: list[str] = field(default_factory=list)


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


def _edges(ins: Instruction) -> list[tuple[str, str]]:
    op = ins.opcode
    out: list[tuple[str, str]] = []
    if op == "while":
        out.append((callee_name(ins, "body"), "while_body"))
        out.append((callee_name(ins, "condition"), "while_condition"))
        return out
    kind = {
        "call": "call", "conditional": "branch", "fusion": "fusion", "async-start": "async",
    }.get(op, "to_apply")
    return [(c, kind) for c in ins.called_computations]


def build_call_graph(module: Module) -> CallGraph:
    g: nx.DiGraph = nx.DiGraph()
    callers: dict[str, list[tuple[str, Instruction]]] = {}
    for comp in module.computations.values():
        g.add_node(comp.name)
        for ins in comp.instructions:
            if not ins.attr_text:
                continue
            for callee, kind in _edges(ins):
                trip = ins.known_trip_count if kind == "while_body" else None
                g.add_edge(comp.name, callee, kind=kind, via=ins.name, trip_count=trip)
                callers.setdefault(callee, []).append((comp.name, ins))
    control = nx.DiGraph()
    control.add_node(module.entry_name)
    for a, b, d in g.edges(data=True):
        if d["kind"] in ("while_body", "while_condition", "call", "branch"):
            control.add_edge(a, b)
    scheduled = {module.entry_name} | nx.descendants(control, module.entry_name)
    executions: dict[str, int] = {c: 0 for c in scheduled}
    executions[module.entry_name] = 1
    unknown: list[str] = []
    for c in nx.topological_sort(control.subgraph(scheduled)):
        callers_here = [x for x in module.computations[c].instructions if x.opcode in ("while", "call", "conditional")]
        for ins_caller in callers_here:
            for callee, kind in _edges(ins_caller):
                if callee not in executions:
                    continue
                n = executions[c]
                if ins_caller.opcode == "while":
                    trip = trip_count(module, ins_caller)
                    if trip is None:
                        unknown.append(ins_caller.name)
                        trip = 1
                    n *= trip + (1 if kind == "while_condition" else 0)
                executions[callee] += n
    return CallGraph(g, scheduled, executions, callers, sorted(set(unknown)))
