"""``hloscope sweep``: the policy x LHS x pipelining matrix in worker processes."""

from __future__ import annotations

import csv
import io
import json

import pytest

from hloscope.cli.main import main


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


def test_sweep_batch_sizes_table_and_csv(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "mlp", "--policies", "offload", "--batch-sizes", "8,16", "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "largest per-device batch that fits: offload 16" in out
    assert main(["sweep", "mlp", "--policies", "remat", "--jobs", "1", "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 4 and {r["policy"] for r in rows} == {"remat"}


def test_sweep_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "nope"]) == 3
    assert main(["sweep", "mlp", "--policies", "offload,magic"]) == 3
    assert main(["sweep", "mlp", "--batch-sizes", "x"]) == 2
    err = capsys.readouterr().err
    assert err.count("hloscope: error:") == 3
