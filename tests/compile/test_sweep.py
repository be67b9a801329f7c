"""``hloscope sweep``: the policy x scheduler x pipelining matrix in worker processes.

Identical cells are found by comparing what XLA emitted (the fingerprint), never
assumed: the tests check that rows sharing a fingerprint share every figure read
from the HLO, and that pipelined offloading changes the schedule of the offload
policy (3 transfers instead of 2), so those cells differ.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
from xla_versions import NEWEST

from hloscope.cli.main import main
from hloscope.compile.run.jobs import hlo_fingerprint

FIGURES = ("peak_device_bytes", "host_bytes", "fits", "transfers", "hidden", "partial", "exposed", "sync",
           "device_allocation_bytes")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HLOSCOPE_NO_CACHE", raising=False)


@pytest.mark.slow  # 40-80 s of compiles on 2 cores: the README test command stays under 10 minutes (issue 46)
def test_sweep_matrix_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "mlp", "--schedulers", "lhs,none", "--jobs", "2", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    rows = d["rows"]
    assert len(rows) == 12
    assert {(r["policy"], r["scheduler"], r["pipelined"]) for r in rows} == {
        (p, s, pipe) for p in ("remat", "offload", "save") for s in ("lhs", "none") for pipe in (True, False)}
    assert all(not r["error"] for r in rows)
    by = {(r["policy"], r["pipelined"]): r for r in rows if r["scheduler"] == "lhs"}
    # Hand-computed: 4 layers x (8 x 1024 bf16) offloaded; remat and save keep nothing on the host.
    assert by[("offload", True)]["host_bytes"] == 4 * 8 * 1024 * 2
    assert by[("remat", True)]["host_bytes"] == 0 and by[("save", True)]["host_bytes"] == 0
    assert by[("offload", True)]["transfers"] == 3 and by[("offload", False)]["transfers"] == 2
    assert by[("remat", True)]["transfers"] == 0
    assert all(r["fits"] for r in rows)
    # Saving the activation on device costs more device memory than recomputing it (jaxlib 0.10's
    # XLA; 0.9.2 planned both at 5251136 B: docs/jax-versions.md).
    if NEWEST:
        assert by[("save", True)]["peak_device_bytes"] > by[("remat", True)]["peak_device_bytes"]
    # Each cell was compiled and fingerprinted; pipelined offloading changes what XLA emits.
    assert all(len(r["fingerprint"]) == 12 and int(r["fingerprint"], 16) >= 0 for r in rows)
    fp = {(r["policy"], r["scheduler"], r["pipelined"]): r["fingerprint"] for r in rows}
    assert fp[("offload", "lhs", True)] != fp[("offload", "lhs", False)]
    assert fp[("offload", "lhs", True)] != fp[("remat", "lhs", True)] != fp[("save", "lhs", True)]
    # Rows with one fingerprint have one set of figures (the same optimized HLO).
    for r in rows:
        twin = next(x for x in rows if x["fingerprint"] == r["fingerprint"])
        assert {k: r[k] for k in FIGURES} == {k: twin[k] for k in FIGURES}
    # identical_to names the first cell (in row order) with the same optimized HLO.
    first: dict[str, str] = {}
    for r in rows:
        expected = first.setdefault(r["fingerprint"], r["cell"])
        assert r["identical_to"] == ("" if expected == r["cell"] else expected)
    groups = d["identical_hlo"]
    assert sum(len(g) for g in groups.values()) == sum(1 for r in rows if r["fingerprint"] in groups)
    # A fresh cache: every cell was compiled, none read back; the summary counts them.
    assert all(r["cached"] is False and r["compile_s"] > 0 for r in rows)
    assert all(r["model_tflops_per_device"] is None for r in rows)  # mlp has no MaxText FLOP count
    assert d["summary"]["cells"] == 12 and d["summary"]["compiled"] == 12 and d["summary"]["cached"] == 0


@pytest.mark.slow  # 40-80 s of compiles on 2 cores: the README test command stays under 10 minutes (issue 46)
def test_sweep_batch_sizes_table_and_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib", reason="--plot needs the plot extra (pip install -e '.[all]')")
    # A repeated batch size is the same cell: compiled once (4 cells, not 6).
    plot = tmp_path / "capacity.svg"
    assert main(["sweep", "mlp", "--policies", "offload", "--schedulers", "lhs", "--batch-sizes", "8,16,8",
                 "--jobs", "2", "--plot", str(plot)]) == 0
    out, err = capsys.readouterr()
    # The plot marks the capacity answer (every batch tried fits, 16 the largest tried: not a limit)
    # and the target's HBM line (h100-sxm: 80 GiB).
    svg = plot.read_text()
    assert svg.startswith("<?xml") and "offload: every batch tried fits (largest tried 16)" in svg
    assert "HBM 80 GiB (h100-sxm)" in svg and "largest batch that fits 16" not in svg
    assert "  offload: every batch tried fits; the largest tried, 16, needs " in out
    assert "[4/4] compiled: " in err and "[5/" not in err
    assert "hloscope: 4 cells: 4 compiled, 0 from the cache, 0 failed (local executor" in err
    table = out.splitlines()
    assert table[0].split()[-8:] == ["cached", "compile", "s", "HLO", "sha256", "same", "HLO", "as"]
    assert table[0].split()[1] == "scheduler"
    assert main(["sweep", "mlp", "--policies", "remat", "--schedulers", "lhs,none", "--jobs", "1", "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 4 and {r["policy"] for r in rows} == {"remat"}
    assert {r["cached"] for r in rows} == {"False"} and all(float(r["compile_s"]) > 0 for r in rows)
    # The fingerprint is the SHA-256 of the optimized HLO that `compile` writes for the same cell.
    assert main(["compile", "--workload", "mlp", "--policy", "remat", "--out", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    text = (tmp_path / "a" / "optimized.hlo.txt").read_text()
    lhs_on = next(r for r in rows if r["scheduler"] == "lhs" and r["pipelined"] == "True")
    assert lhs_on["fingerprint"] == hlo_fingerprint(text)


def test_sweep_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "nope"]) == 3
    assert main(["sweep", "mlp", "--policies", "offload,magic"]) == 3
    assert main(["sweep", "mlp", "--schedulers", "lhs,fifo"]) == 3
    assert main(["sweep", "mlp", "--pipelined", "maybe"]) == 3
    assert main(["sweep", "mlp", "--batch-sizes", "x"]) == 2
    assert main(["sweep", "mlp", "--set", "layers=0"]) == 2  # out of range: refused before any cell compiles
    assert main(["sweep", "mlp", "--address", "127.0.0.1:6379"]) == 2  # --address without --executor ray
    assert main(["sweep", "mlp", "--plot", "out.pdf"]) == 2
    err = capsys.readouterr().err
    assert err.count("hloscope: error:") == 8 and "done" not in err and "compiled" not in err
    assert "--address needs --executor ray" in err and "must end in .svg or .png" in err


def test_sweep_trace_dir_writes_one_trace_per_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = tmp_path / "traces"
    assert main(["sweep", "mlp", "--policies", "offload", "--schedulers", "lhs,none", "--jobs", "2", "--json",
                 "--trace-dir", str(traces), "--no-cache"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert not any(r["cached"] for r in rows) and all(r["cache_key"] == "" for r in rows)
    assert "HLOSCOPE_NO_CACHE" not in os.environ  # --no-cache lasted for the sweep only
    files = sorted(p.name for p in traces.iterdir())
    assert len(files) == len(rows) == 4 and all(f.endswith(".trace.json") for f in files)
    for f in files:
        doc = json.loads((traces / f).read_text())
        assert any(e["ph"] == "X" for e in doc["traceEvents"])
    # Nothing written beside it, and --no-cache did not even create the cache folder.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces"]
