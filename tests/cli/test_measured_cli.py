"""Predicted vs measured on a real GPU run: ``hloscope analyze ARCHIVE`` and ``--measured PROFILE``.

Fixture: fixtures/measured/pax_fsdp4_proc0.nsys.zip, cut from NVIDIA JAX-Toolbox's nsys-jax archive
of a PAXML FSDP run on 4 A100-SXM4-40GB (Apache-2.0; fixtures/measured/README.md). Facts read by
hand in its trace.parquet and HloProto: the step module pjit__wrapped_step_fn ran 5 times,
147.966759, 143.040768, 127.31243, 127.464524 and 126.859056 ms (projected GPU durations of its
TSL:XlaModule ranges); each execution has 2,610 thunk rows naming 2,576 distinct instructions, every
one of the module; copy_fusion runs 8 times per execution; the entry has 10 all-gather-start, 9
all-reduce-start and 4 reduce-scatter-start; in the median execution (127.46 ms) the thunk of
all-gather-start.2 starts 183,455 ns after the module and lasts 2,224,693 ns, that of
all-reduce-start lasts 11,072 ns. The GpuTargetConfig names an NVIDIA A100-SXM4-40GB.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.cli.main import main
from tests.conftest import FIXTURES

pytest.importorskip("pyarrow", reason="nsys-jax archives need the 'measured' extra (pyarrow)")

ARCHIVE = FIXTURES / "measured" / "pax_fsdp4_proc0.nsys.zip"
RUNS_MS = (147.966759, 143.040768, 127.31243, 127.464524, 126.859056)


@pytest.fixture(scope="module")
def profile():  # type: ignore[no-untyped-def]
    from hloscope.analysis.measured.read import parse_measured
    from hloscope.hlo.profile_files import read_measured_file

    return parse_measured(read_measured_file(ARCHIVE))


def test_archive_profile_reads_the_executions_and_thunks(profile) -> None:  # type: ignore[no-untyped-def]
    assert profile.kind == "nsys" and profile.module == "pjit__wrapped_step_fn"
    assert profile.step_us == pytest.approx([ms * 1e3 for ms in RUNS_MS], abs=1e-3)
    assert profile.median_step_us == pytest.approx(127464.524, abs=1e-3)
    assert len(profile.ops) == 2576 and profile.ops["copy_fusion"].calls == 8
    assert len(profile.intervals) == 2610  # the median execution's thunks
    ag = next(iv for iv in profile.intervals if iv.name == "all-gather-start.2")
    assert (ag.start_us, ag.end_us) == pytest.approx((183.455, 183.455 + 2224.693))
    ar = next(iv for iv in profile.intervals if iv.name == "all-reduce-start")
    assert ar.end_us - ar.start_us == pytest.approx(11.072)
    # median and spread over the five executions, per execution
    assert profile.ops["all-reduce-start"].spread_us >= 0


def test_analyze_archive_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(ARCHIVE), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["target"] == "a100-sxm4-40gb"  # from the archive's GpuTargetConfig
    m = d["measured"]
    assert m["step_us"] == pytest.approx(127464.5, abs=0.1) and len(m["step_us_runs"]) == 5
    assert m["matched_fraction"] == 1.0 and m["measured_ops"] == 2576
    classes = {c["name"]: c for c in m["classes"]}
    assert {"gemm", "fusion/kernel", "all-gather", "all-reduce", "reduce-scatter"} == set(classes)
    assert (classes["all-gather"]["ops"], classes["all-reduce"]["ops"], classes["reduce-scatter"]["ops"]) == (10, 9, 4)
    assert all(c["predicted_us"] > 0 and c["measured_us"] > 0 for c in classes.values())
    assert m["simulated_step_us"] == pytest.approx(d["summary"]["simulated_step"]["step_us"], abs=0.1)
    starts = {a["start"] for a in m["async"]}
    assert len(starts) == 23 and {"all-gather-start.2", "reduce-scatter-start.3"} <= starts
    assert all(0.0 <= a["measured_overlap"] <= 1.0 for a in m["async"])


def test_analyze_archive_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(ARCHIVE)]) == 0
    out = capsys.readouterr().out
    assert "module pjit__wrapped_step_fn" in out
    assert "measured median 127.5 ms over 5 executions (147.97, 143.04, 127.31, 127.46, 126.86 ms)" in out
    assert "coverage: 2576 of 2576" in out
    assert "all-gather-start.2 (all-gather): measured 2.2 ms" in out


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hloscope: error: "), err
    return err[0]


def test_profile_of_another_module_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(FIXTURES / "mlp_offload.hlo.txt"), "--measured", str(ARCHIVE)]) == 2
    assert "measured module 'pjit__wrapped_step_fn', not this module ('jit_step')" in _one_error_line(capsys)


def test_profile_that_matches_nothing_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prof = tmp_path / "other.pbtxt"
    prof.write_text('costs { name: "fusion.99999" cost_us: 3.5 }\ncosts { name: "copy.77777" cost_us: 1 }\n')
    assert main(["analyze", str(FIXTURES / "mlp_offload.hlo.txt"), "--measured", str(prof)]) == 2
    assert "none of its 2 op names is an instruction of module 'jit_step'" in _one_error_line(capsys)


@pytest.mark.parametrize("cut", [0, 100, 300_000], ids=["empty", "cut in the header", "cut mid-archive"])
def test_truncated_or_empty_archive_is_one_line(tmp_path: Path, cut: int, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "cut.zip"
    bad.write_bytes(ARCHIVE.read_bytes()[:cut])
    assert main(["analyze", str(FIXTURES / "mlp_offload.hlo.txt"), "--measured", str(bad)]) == 2
    line = _one_error_line(capsys)
    assert "Traceback" not in line and "cut.zip" in line


def test_trace_has_measured_lanes_beside_the_simulated_ones(tmp_path: Path) -> None:
    trace = tmp_path / "step.trace.json"
    assert main(["analyze", str(ARCHIVE), "--trace", str(trace), "-o", str(tmp_path / "r.txt")]) == 0
    events = json.loads(trace.read_text())["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert {"compute", "collective", "measured (GPU)"} <= set(procs.values())
    measured = [e for e in events if e.get("cat") == "measured"]
    assert len(measured) == 2610  # the median execution's thunks
    ag = next(e for e in measured if e["name"] == "all-gather-start.2")
    assert (ag["ts"], ag["dur"]) == pytest.approx((183.455, 2224.693))


def test_the_tui_detail_clause_reads_the_op(profile) -> None:  # type: ignore[no-untyped-def]
    """The TUI's detail pane line (render.measured_text.measured_clause) for one GEMM."""
    from hloscope.analysis.simulate.overlap import AnalysisOptions
    from hloscope.artifact import load_report
    from hloscope.render.measured_text import measured_clause

    report = load_report(str(ARCHIVE), None, AnalysisOptions(compare_with=profile))
    assert report.measured is not None
    gemm = profile.ops["custom-call.219.0"]
    clause = measured_clause(report.measured, "custom-call.219.0")
    assert clause.startswith("measured ") and "(1 run(s), spread" in clause and "of measured" in clause
    op = next(o for o in report.measured.ops if o.instruction == "custom-call.219.0")
    assert op.measured_us == gemm.median_us and str(op.op_class) == "gemm"
    assert measured_clause(report.measured, "no-such-op") == ""


def test_profile_and_measured_compose(tmp_path: Path, profile, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    """--profile replaces figures, --measured compares: the GEMMs' measured times (per run) given as a
    PGLE profile make the model's GEMM class equal the measured one; the other classes keep the model's."""
    assert main(["analyze", str(ARCHIVE), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["measured"]
    plain = {c["name"]: c for c in first["classes"]}
    gemms = [o["name"] for o in first["ops"] if o["class"] == "gemm"]
    assert len(gemms) == plain["gemm"]["ops"]
    pgle = tmp_path / "gemms.pbtxt"
    pgle.write_text("".join(f'costs {{ name: "{n}" cost_us: {profile.ops[n].median_us / profile.ops[n].calls!r} }}\n'
                            for n in gemms))
    assert main(["analyze", str(ARCHIVE), "--profile", str(pgle), "--json"]) == 0
    both = {c["name"]: c for c in json.loads(capsys.readouterr().out)["measured"]["classes"]}
    assert both["gemm"]["predicted_us"] == pytest.approx(both["gemm"]["measured_us"], abs=0.5)
    assert plain["gemm"]["predicted_us"] != pytest.approx(plain["gemm"]["measured_us"], rel=0.05)
    assert both["all-gather"] == plain["all-gather"]
