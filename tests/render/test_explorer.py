"""Model Explorer data (``render/explorer.py``, ``hloscope export --format model-explorer``, the
``hloscope.explorer`` adapter) on the real llama step, checked against Model Explorer's formats.

Facts read in ``fixtures/llama_offload.hlo.txt``: the entry computation runs two while loops,
``while.43`` (body ``region_13.23_spmd``, trip count 2: the layer loop of the backward pass
holding the three H->D ``dynamic-slice-start``s) and ``while.44``; ``dynamic-slice-start.2.0``
is the exposed transfer, its done ``dynamic-slice-done.2.0``; a fusion such as
``gemm_fusion_dot.77`` is one instruction whose fused computation is a separate computation.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.analysis.kinds import VerdictKind
from hloscope.cli.main import main
from hloscope.errors import EXIT_BAD_INPUT
from hloscope.render.explorer import NODE_DATA, explorer_graphs, node_data
from hloscope.render.html import VERDICT_COLOURS
from tests.conftest import FIXTURES, fixture_report

LLAMA = "llama_offload.hlo.txt"


def _graph() -> dict:  # type: ignore[type-arg]
    [g] = explorer_graphs(fixture_report(LLAMA))["graphs"]
    return g  # type: ignore[no-any-return]


def test_graph_json_has_model_explorers_shape() -> None:
    g = _graph()
    ids = [n["id"] for n in g["nodes"]]
    assert len(ids) == len(set(ids))
    for n in g["nodes"]:
        assert set(n) <= {"id", "label", "namespace", "attrs", "incomingEdges", "style"}
        assert all(set(a) == {"key", "value"} and isinstance(a["value"], str) for a in n["attrs"])
        for e in n["incomingEdges"]:
            assert set(e) == {"sourceNodeId", "sourceNodeOutputId", "targetNodeInputId"} and e["sourceNodeId"] in ids
    json.dumps(g)  # plain JSON all the way down


def test_loops_are_namespaces_with_trip_counts_and_fusions_stay_collapsed() -> None:
    report = fixture_report(LLAMA)
    g = _graph()
    by_id = {n["id"]: n for n in g["nodes"]}
    assert by_id["dynamic-slice-start.2.0"]["namespace"] == "while.43 x2 trips"
    assert by_id["while.43"]["namespace"] == ""
    assert by_id["gemm_fusion_dot.77"]["label"] == "fusion"
    fused = {ins.name for c in report.module.computations.values() if c.name.startswith("gemm_fusion_dot.77")
             for ins in c.instructions}
    assert fused and not fused & set(by_id)  # the fused body is not expanded


def test_transfers_are_painted_by_verdict_with_their_facts() -> None:
    report = fixture_report(LLAMA)
    by_id = {n["id"]: n for n in _graph()["nodes"]}
    for v in report.verdicts:
        node = by_id[v.transfer.instruction.name]
        attrs = {a["key"]: a["value"] for a in node["attrs"]}
        assert node["style"]["backgroundColor"] == VERDICT_COLOURS[v.verdict][0]
        assert attrs["hloscope verdict"] == str(v.verdict) and attrs["bytes"].startswith(f"{v.transfer.bytes} ")
    exposed = {a["key"]: a["value"] for a in by_id["dynamic-slice-done.2.0"]["attrs"]}
    assert exposed["hloscope verdict"] == "exposed" and float(exposed["exposed us per execution"]) > 0


def test_edge_overlays_run_from_each_start_to_its_done() -> None:
    report = fixture_report(LLAMA)
    [data] = _graph()["tasksData"]["edgeOverlaysDataListLeftPane"]
    assert data["type"] == "edge_overlays"
    edges = {(e["sourceNodeId"], e["targetNodeId"]): o["name"] for o in data["overlays"] for e in o["edges"]}
    assert len(edges) == len(report.pairs)
    assert edges[("dynamic-slice-start.2.0", "dynamic-slice-done.2.0")] == "host transfer start -> done: exposed"
    colours = {o["name"]: o["edgeColor"] for o in data["overlays"]}
    assert colours["host transfer start -> done: exposed"] == VERDICT_COLOURS[VerdictKind.EXPOSED][0]


def test_node_data_is_keyed_by_graph_and_node() -> None:
    report = fixture_report(LLAMA)
    data = node_data(report)
    assert tuple(data) == NODE_DATA
    ids = {n["id"] for n in _graph()["nodes"]}
    for stem, sets in data.items():
        [(gid, one)] = sets.items()
        assert gid == report.module.name and set(one["results"]) <= ids, stem
        assert all(isinstance(r["value"], int | float) for r in one["results"].values())
    verdicts = data["verdicts"][report.module.name]["results"]
    assert verdicts["dynamic-slice-start.2.0"]["bgColor"] == VERDICT_COLOURS[VerdictKind.EXPOSED][0]
    exposed = next(v for v in report.verdicts if v.transfer.instruction.name == "dynamic-slice-start.2.0")
    assert verdicts["dynamic-slice-start.2.0"]["value"] == pytest.approx(exposed.est_exposed_us, abs=1e-3)
    assert report.timeline is not None
    starts = data["start-us"][report.module.name]["results"]
    assert all(0 <= r["value"] <= report.timeline.step_us for r in starts.values())


def test_export_writes_the_files_and_never_overwrites_silently(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "me"
    assert main(["export", str(FIXTURES / LLAMA), "--format", "model-explorer", "-o", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["graph.json", "node-data-bytes.json", "node-data-start-us.json", "node-data-verdicts.json"]
    assert "--node_data_paths=" in capsys.readouterr().out
    assert json.loads((out / "graph.json").read_text())["graphs"][0]["id"] == "jit_step"
    assert main(["export", str(FIXTURES / LLAMA), "--format", "model-explorer", "-o", str(out)]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err == (f"hloscope: error: {out}: {', '.join(names)} already exist; --force "
                                       "replaces them\n")  # issue 36 item 13: was "already exist(s)"
    assert main(["export", str(FIXTURES / LLAMA), "--format", "model-explorer", "-o", str(out), "--force"]) == 0
    one = tmp_path / "one"
    one.mkdir()
    (one / "graph.json").write_text("{}")
    capsys.readouterr()
    assert main(["export", str(FIXTURES / LLAMA), "--format", "model-explorer", "-o", str(one)]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err == f"hloscope: error: {one}: graph.json already exists; --force replaces it\n"


def test_the_adapter_converts_to_model_explorers_dataclasses() -> None:
    pytest.importorskip("model_explorer", reason="the explorer extra: pip install 'hloscope[explorer]'")
    from model_explorer.utils import convert_adapter_response

    from hloscope.explorer.main import HloscopeAdapter

    resp = convert_adapter_response(HloscopeAdapter().convert(str(FIXTURES / LLAMA), {}))
    [g] = resp["graphs"]
    assert len(g["nodes"]) == len(_graph()["nodes"])
    node = next(n for n in g["nodes"] if n["id"] == "dynamic-slice-start.2.0")
    assert node["style"]["backgroundColor"] == VERDICT_COLOURS[VerdictKind.EXPOSED][0]
    assert g["tasksData"]["edgeOverlaysDataListLeftPane"][0]["overlays"]
