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

from hloscope.hlo.model import Instruction, Module


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


def _edges(ins: Instruction) -> list[tuple[str, str]]:
    op = ins.opcode
    out: list[tuple[str, str]] = []
    if op == "while":
        out.append((ins.attr("body").lstrip("%"), "while_body"))
        out.append((ins.attr("condition").lstrip("%"), "while_condition"))
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
                    trip = ins_caller.known_trip_count
                    if trip is None:
                        unknown.append(ins_caller.name)
                        trip = 1
                    n *= trip + (1 if kind == "while_condition" else 0)
                executions[callee] += n
    return CallGraph(g, scheduled, executions, callers, sorted(set(unknown)))
