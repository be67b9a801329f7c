"""``hloscope sweep``: the policy x LHS x pipelining matrix in worker processes.

Identical cells: with jaxlib 0.10.2 ``--lhs`` and ``--no-lhs`` give byte-identical
optimized HLO (measured), so each LHS pair shares a fingerprint, while pipelined
offloading changes the schedule (3 transfers instead of 2), so those differ.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.compile.jobs import hlo_fingerprint


def test_sweep_matrix_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "mlp", "--jobs", "2", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    rows = d["rows"]
    assert len(rows) == 12
    assert {(r["policy"], r["lhs"], r["pipelined"]) for r in rows} == {
        (p, lhs, pipe) for p in ("remat", "offload", "save") for lhs in (True, False) for pipe in (True, False)}
    assert all(not r["error"] for r in rows)
    by = {(r["policy"], r["pipelined"]): r for r in rows if r["lhs"]}
    # Hand-computed: 4 layers x (8 x 1024 bf16) offloaded; remat and save keep nothing on the host.
    assert by[("offload", True)]["host_bytes"] == 4 * 8 * 1024 * 2
    assert by[("remat", True)]["host_bytes"] == 0 and by[("save", True)]["host_bytes"] == 0
    assert by[("offload", True)]["transfers"] == 3 and by[("offload", False)]["transfers"] == 2
    assert by[("remat", True)]["transfers"] == 0
    assert all(r["fits"] for r in rows)
    # Saving the activation on device costs more device memory than recomputing it.
    assert by[("save", True)]["peak_device_bytes"] > by[("remat", True)]["peak_device_bytes"]
    # Each cell was compiled and fingerprinted; the LHS flag changes nothing XLA emits,
    # pipelined offloading does.
    assert all(len(r["fingerprint"]) == 12 and int(r["fingerprint"], 16) >= 0 for r in rows)
    fp = {(r["policy"], r["lhs"], r["pipelined"]): r["fingerprint"] for r in rows}
    for p in ("remat", "offload", "save"):
        for pipe in (True, False):
            assert fp[(p, True, pipe)] == fp[(p, False, pipe)]
    assert fp[("offload", True, True)] != fp[("offload", True, False)]
    assert fp[("offload", True, True)] != fp[("remat", True, True)] != fp[("save", True, True)]
    # identical_to names the first cell (in row order) with the same optimized HLO.
    first: dict[str, str] = {}
    for r in rows:
        expected = first.setdefault(r["fingerprint"], r["cell"])
        assert r["identical_to"] == ("" if expected == r["cell"] else expected)
    assert next(r for r in rows if r["cell"] == "offload lhs=off pipelined=on")["identical_to"] == \
        "offload lhs=on pipelined=on"
    groups = d["identical_hlo"]
    assert groups[fp[("offload", True, True)]] == ["offload lhs=on pipelined=on", "offload lhs=off pipelined=on"]
    assert sum(len(g) for g in groups.values()) == 12


def test_sweep_batch_sizes_table_and_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A repeated batch size is the same cell: compiled once (8 cells, not 12).
    assert main(["sweep", "mlp", "--policies", "offload", "--batch-sizes", "8,16,8", "--jobs", "2"]) == 0
    out, err = capsys.readouterr()
    assert "  offload: largest batch that fits 16 (" in out and "every batch tried fits" in out
    assert "[8/8] done" in err and "[9/" not in err
    table = out.splitlines()
    assert table[0].split()[-5:] == ["HLO", "sha256", "same", "HLO", "as"]
    assert table[0].split()[4:8] == ["device", "GiB", "XLA", "peak"]
    identical = next(line for line in table if line.startswith("cells with identical optimized HLO"))
    assert "offload lhs=on pipelined=on batch=16, offload lhs=off pipelined=on batch=16" in identical
    assert main(["sweep", "mlp", "--policies", "remat", "--jobs", "1", "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 4 and {r["policy"] for r in rows} == {"remat"}
    # The fingerprint is the SHA-256 of the optimized HLO that `compile` writes for the same cell.
    assert main(["compile", "--workload", "mlp", "--policy", "remat", "--out", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    text = (tmp_path / "a" / "optimized.hlo.txt").read_text()
    on_on = next(r for r in rows if r["lhs"] == "True" and r["pipelined"] == "True")
    assert on_on["fingerprint"] == hlo_fingerprint(text)


def test_sweep_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "nope"]) == 3
    assert main(["sweep", "mlp", "--policies", "offload,magic"]) == 3
    assert main(["sweep", "mlp", "--batch-sizes", "x"]) == 2
    assert main(["sweep", "mlp", "--set", "layers=0"]) == 2  # out of range: refused before any cell compiles
    err = capsys.readouterr().err
    assert err.count("hloscope: error:") == 4 and "done" not in err


def test_sweep_trace_dir_writes_one_trace_per_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = tmp_path / "traces"
    assert main(["sweep", "mlp", "--policies", "offload", "--jobs", "2", "--json", "--trace-dir", str(traces)]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    files = sorted(p.name for p in traces.iterdir())
    assert len(files) == len(rows) == 4 and all(f.endswith(".trace.json") for f in files)
    for f in files:
        doc = json.loads((traces / f).read_text())
        assert any(e["ph"] == "X" for e in doc["traceEvents"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces"]  # nothing written beside it
