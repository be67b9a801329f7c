"""A report as Model Explorer data: the graph JSON, node-data JSON and start-to-done edge overlays.

Pure data (no ``model_explorer`` import): ``hloscope export --format model-explorer`` writes
it for ``model-explorer graph.json --node_data_paths=...``, and the extension
(``hloscope.explorer``) returns the same graph from its adapter.

The graph (Model Explorer's graph JSON: ``{"graphs": [{"id", "nodes": [{"id", "label",
"namespace", "attrs": [{"key", "value"}], "incomingEdges": [{"sourceNodeId",
"sourceNodeOutputId", "targetNodeInputId"}], "style"}], "tasksData"}]}``) is one graph
for the module: the entry computation's instructions at the top level, each while
loop's body in a namespace named after the loop and its trip count
(``while.4 x4 trips``), nested as the loops are; a fusion stays one node (its fused
computation is not expanded), as do the computations of reducers and async wrappers.
Node ids are the instruction names (unique in an HLO module); edges are the operands
within a computation. Host transfers (their start and done) are painted by verdict
(``style.backgroundColor``) and carry the verdict, the exposed µs, bytes and source as
attributes.

Node data (``{graphId: {"results": {nodeId: {"value", "bgColor"}}, "thresholds" |
"gradient"}}``), one file each: ``verdicts`` (value = exposed µs per execution, colour by
verdict), ``start-us`` (each instruction's first simulated start, µs into the step) and
``bytes`` (bytes a transfer or collective moves). Edge overlays
(``tasksData.edgeOverlaysDataListLeftPane``): one edge from each async start to its done,
one overlay per host-transfer verdict and one for the other async pairs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from hloscope.analysis.report import Report
from hloscope.hlo.model import Instruction
from hloscope.render.html import VERDICT_COLOURS
from hloscope.render.name_words import name_cell
from hloscope.units import human_bytes

#: Edge colour of async pairs that are not host transfers (collectives, other async ops).
OTHER_ASYNC_COLOUR = "#1e88e5"
#: The node-data sets :func:`node_data` returns, by file stem.
NODE_DATA = ("verdicts", "start-us", "bytes")


def graph_id(report: Report) -> str:
    return report.module.name


def _namespaces(report: Report) -> Iterator[tuple[str, str]]:
    """(computation, namespace) for the entry and, recursively, every while body it runs."""
    index = report.index
    stack = [(report.module.entry_name, "")]
    seen: set[str] = set()
    while stack:
        comp, ns = stack.pop()
        if comp in seen or comp not in report.module.computations:
            continue
        seen.add(comp)
        yield comp, ns
        for ins in report.module.computations[comp].instructions:
            if ins.opcode != "while":
                continue
            body = index.while_body(ins)
            if body is None:
                continue
            trips = index.trip_count(ins)
            label = f"{ins.name} x{trips} trips" if trips is not None else f"{ins.name} (trip count unknown)"
            stack.append((body.name, f"{ns}/{label}" if ns else label))


def _first_starts(report: Report) -> dict[str, float]:
    """Each instruction's first simulated start (µs), over every resource of the timeline."""
    out: dict[str, float] = {}
    if report.timeline is None:
        return out
    for slices in report.timeline.slices.values():
        for s in slices:
            if s.name not in out or s.start_us < out[s.name]:
                out[s.name] = s.start_us
    return out


def _kv(key: str, value: object) -> dict[str, str]:
    return {"key": key, "value": str(value)}


def _node(ins: Instruction, ns: str, known: set[str]) -> dict[str, Any]:
    attrs = [_kv("opcode", ins.text_opcode or ins.opcode), _kv("shape", ins.shape), _kv("computation", ins.computation),
             _kv("schedule position", ins.position)]
    calls = ins.attr("calls")
    if calls:
        attrs.append(_kv("calls", calls))
    edges = [{"sourceNodeId": op, "sourceNodeOutputId": "0", "targetNodeInputId": str(i)}
             for i, op in enumerate(ins.operands) if op in known]
    return {"id": ins.name, "label": ins.text_opcode or ins.opcode, "namespace": ns, "attrs": attrs,
            "incomingEdges": edges}


def _overlays(report: Report) -> list[dict[str, Any]]:
    by_start = {v.transfer.instruction.name: v for v in report.verdicts}
    groups: dict[str, tuple[str, list[dict[str, str]]]] = {}
    for p in report.pairs:
        v = by_start.get(p.start.name)
        if v is not None:
            key, colour = f"host transfer start -> done: {v.verdict}", VERDICT_COLOURS[v.verdict][0]
            label = f"{v.verdict}, ~{v.est_exposed_us:.1f} us exposed"
        else:
            key, colour, label = "other async start -> done", OTHER_ASYNC_COLOUR, p.op
        groups.setdefault(key, (colour, []))[1].append(
            {"sourceNodeId": p.start.name, "targetNodeId": p.done.name, "label": label})
    overlays = [{"name": name, "edgeColor": colour, "edgeWidth": 3, "edges": edges}
                for name, (colour, edges) in groups.items()]
    return [{"name": "hloscope: async start -> done", "type": "edge_overlays", "overlays": overlays}]


def explorer_graphs(report: Report) -> dict[str, Any]:
    """The module as Model Explorer's graph JSON (``{"graphs": [graph]}``)."""
    comps = list(_namespaces(report))
    known = {ins.name for comp, _ in comps for ins in report.module.computations[comp].instructions}
    nodes: dict[str, dict[str, Any]] = {}
    for comp, ns in comps:
        for ins in report.module.computations[comp].instructions:
            nodes[ins.name] = _node(ins, ns, known)
    starts = _first_starts(report)
    for name, start in starts.items():
        if name in nodes:
            nodes[name]["attrs"].append(_kv("simulated start us", f"{start:.3f}"))
    for v in report.verdicts:
        t = v.transfer
        facts = [_kv("hloscope verdict", v.verdict), _kv("exposed us per execution", f"{v.est_exposed_us:.3f}"),
                 _kv("transfer us", f"{v.est_transfer_us:.3f}"), _kv("bytes", f"{t.bytes} ({human_bytes(t.bytes)})"),
                 _kv("direction", t.direction), _kv("executions per step", t.executions)]
        if t.checkpoint_name:
            facts.append(_kv("checkpoint name", name_cell(t)))
            facts.append(_kv("named by", "bytes only (a guess)" if t.name_guessed else "data flow"))
        if t.source is not None:
            facts.append(_kv("source", t.source))
        ends = [t.instruction.name] + ([v.pair.done.name] if v.pair is not None else [])
        for name in ends:
            if name in nodes:
                nodes[name]["attrs"] += facts
                nodes[name]["style"] = {"backgroundColor": VERDICT_COLOURS[v.verdict][0],
                                        "borderColor": "#000000"}
    graph = {"id": graph_id(report), "nodes": list(nodes.values()),
             "tasksData": {"edgeOverlaysDataListLeftPane": _overlays(report), "edgeOverlaysDataListRightPane": []}}
    return {"graphs": [graph]}


def node_data(report: Report) -> dict[str, dict[str, Any]]:
    """The node-data sets (:data:`NODE_DATA`), each ``{graphId: {"results": ..., ...}}``."""
    gid = graph_id(report)
    verdicts: dict[str, dict[str, Any]] = {}
    moved: dict[str, dict[str, Any]] = {}
    for v in report.verdicts:
        names = [v.transfer.instruction.name] + ([v.pair.done.name] if v.pair is not None else [])
        for name in names:
            verdicts[name] = {"value": round(v.est_exposed_us, 3), "bgColor": VERDICT_COLOURS[v.verdict][0]}
            moved[name] = {"value": v.transfer.bytes}
    if report.timeline is not None:
        for slices in report.timeline.slices.values():
            for s in slices:
                if s.bytes and s.name not in moved:
                    moved[s.name] = {"value": s.bytes}
    starts = {name: {"value": round(t, 3)} for name, t in _first_starts(report).items()}
    # only nodes of the graph (a loop's condition is simulated but not drawn)
    ids = {n["id"] for n in explorer_graphs(report)["graphs"][0]["nodes"]}
    verdicts, moved, starts = ({k: v for k, v in d.items() if k in ids} for d in (verdicts, moved, starts))
    return {
        "verdicts": {gid: {"name": "hloscope: exposed us per execution (colour: verdict)", "results": verdicts,
                           "thresholds": [], "gradient": []}},
        "start-us": {gid: {"name": "hloscope: simulated start us", "results": starts, "thresholds": [],
                           "gradient": [{"stop": 0, "bgColor": "#e3f2fd"}, {"stop": 1, "bgColor": "#0d47a1"}]}},
        "bytes": {gid: {"name": "hloscope: bytes moved", "results": moved, "thresholds": [],
                        "gradient": [{"stop": 0, "bgColor": "#fff3e0"}, {"stop": 1, "bgColor": "#e65100"}]}},
    }


def explorer_files(report: Report) -> dict[str, str]:
    """File name -> JSON text: ``graph.json`` and ``node-data-<set>.json`` for each of :data:`NODE_DATA`."""
    files = {"graph.json": json.dumps(explorer_graphs(report), indent=1)}
    for stem, data in node_data(report).items():
        files[f"node-data-{stem}.json"] = json.dumps(data, indent=1)
    return files


#: ``hloscope export --format NAME``: name -> the files it writes (one folder of them).
EXPORT_FORMATS = {"model-explorer": explorer_files}
