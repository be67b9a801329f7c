"""A compile on the installed JAX, read as its own XLA wrote it: XLA's log kept in the artifact
folder but its status blocks off the terminal, the step module's scheduler limit, and the stream
model of the jaxlib that compiled it. On jax 0.12.0.1 (the Python 3.12 CI environment, .ci/run)
these are the 0.12 facts of fixtures/jax012/ (tests/hlo/test_xla_log.py, test_streams.py,
test_native_noise.py); on jaxlib 0.10.2 the same assertions hold with 0.10.2's model."""

from __future__ import annotations

import json
from importlib.metadata import version

import pytest

from hloscope.cli.main import main
from hloscope.compile.seam.jaxcompat import jaxlib_at_least
from hloscope.hlo.xla_log import parse_xla_log

XLA_012 = jaxlib_at_least(0, 12)


def test_a_compile_keeps_xla_noise_in_the_artifact_not_on_the_terminal(  # type: ignore[no-untyped-def]
        tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "art"
    assert main(["compile", "--workload", "mlp", "--out", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert "Source Location Trace" not in captured.err and "sol_latency_estimator.cc" not in captured.err
    log_text = (out / "xla-scheduler.log").read_text()
    log = parse_xla_log(log_text, "jit_step")
    assert log.module is not None and log.module.startswith("jit_step(") and log.estimator == "sol"
    assert {s.computation for s in log.stats} == {"region_0.1_spmd.clone", "region_3.4_spmd", "main.6_spmd"}
    # H100 80 GiB, no allocator share: XLA plans for 80% of the HBM less the step's inputs and outputs.
    assert log.memory_limit_bytes == report["memory"]["pressure"]["scheduler_limit_bytes"]
    streams = {t["name"]: t["xla_stream"] for t in report["transfers"]}
    host_copies = ("dynamic-update-slice-start.1.0", "dynamic-update-slice-start.2", "dynamic-slice-start.1")
    assert json.loads((out / "manifest.json").read_text())["versions"]["jaxlib"] == version("jaxlib")
    if XLA_012:
        assert len(log.modules) > 1  # the autotuning sub-modules XLA 0.12 schedules in the same log
        assert [streams[n] for n in host_copies] == ["memcpy_d2h", "memcpy_d2h", "memcpy_h2d"]
    else:
        assert all(streams[n].startswith("compute:") for n in host_copies if n in streams)
