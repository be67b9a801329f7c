"""The instruction dependency graph of one module, as a networkx MultiDiGraph.

Pass: ``build_dependency_graph(module, pairs=None) -> nx.MultiDiGraph``. Nodes are
``(computation, instruction)``; each edge has ``kind``: ``data`` (operand to
user), ``control`` (control-predecessor), ``async`` (start -> update -> done,
including pairs matched across loop iterations) and ``call`` (a calling
instruction to the root of the computation it calls). Node data: ``opcode``,
``position`` (0-based schedule index), ``bytes``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from hloscope.analysis.structure.pairs import AsyncPair
from hloscope.hlo.model import Module

if TYPE_CHECKING:  # networkx is imported where a graph is built (views only): ~90 ms off every start
    import networkx as nx


def build_dependency_graph(module: Module, pairs: list[AsyncPair] | None = None,
                           computations: Iterable[str] | None = None) -> nx.MultiDiGraph:
    """``computations``: only these (the pipeline's slack pass builds the computations that hold
    async transfers); default every computation."""
    import networkx as nx  # lazy: networkx is slow to import

    g: nx.MultiDiGraph = nx.MultiDiGraph()
    only = set(computations) if computations is not None else None
    for comp in module.computations.values():
        c = comp.name
        if only is not None and c not in only:
            continue
        for ins in comp.instructions:
            g.add_node((c, ins.name), opcode=ins.opcode, position=ins.position, bytes=ins.shape.byte_size)
        for ins in comp.instructions:
            for op in ins.operands:
                src = comp.by_name[op]
                is_async = ins.opcode in ("async-update", "async-done") and src.opcode.startswith("async-")
                kind = "async" if is_async else "data"
                g.add_edge((c, op), (c, ins.name), kind=kind)
            if ins.attr_text and "control-predecessors" in ins.attr_text:
                for pred in ins.control_predecessors:
                    g.add_edge((c, pred), (c, ins.name), kind="control")
            for callee in ins.called_computations:
                if only is not None and callee not in only:
                    continue
                root = module.computations[callee].root
                if root is not None:
                    g.add_edge((callee, root.name), (c, ins.name), kind="call")
    for p in pairs or []:
        if only is not None and not {p.start.computation, p.done.computation} <= only:
            continue
        key = ((p.start.computation, p.start.name), (p.done.computation, p.done.name))
        if not any(d.get("kind") == "async" for d in g.get_edge_data(*key, default={}).values()):
            g.add_edge(*key, kind="async", crosses_iteration=p.crosses_iteration)
    return g
