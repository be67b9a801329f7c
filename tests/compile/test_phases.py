"""Compile phases: reported in order in-process and from the worker process; shown only on a terminal."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from hloscope.cli.compiling import PHASE_WRITING, PhaseStatus
from hloscope.cli.main import main
from hloscope.compile.run.jobs import PHASE_ANALYSIS, compile_request
from hloscope.compile.step.deviceless import PHASES
from hloscope.request import CompileRequest

EXPECTED = ["starting JAX", "tracing", "lowering", "XLA compile", "analysis"]


def test_phase_names_in_order() -> None:
    assert [*PHASES, PHASE_ANALYSIS] == EXPECTED


@pytest.mark.parametrize("in_process", [True, False], ids=["in-process", "worker-process"])
def test_compile_reports_each_phase_once_in_order(in_process: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # In-process, the callback is called directly; in the worker, each name crosses the pipe.
    monkeypatch.setenv("HLOSCOPE_IN_PROCESS", "1" if in_process else "0")
    seen: list[str] = []
    step = compile_request(CompileRequest("h100-sxm", 8, workload="mlp", sets=(("layers", "2"),), policy="offload"),
                           phase=seen.append)
    assert seen == EXPECTED
    assert ":S(5)" in step.result.optimized_hlo and step.report.summary.transfers > 0


def test_compile_failure_after_tracing_started_reports_the_phases_it_reached() -> None:
    from hloscope.errors import EXIT_TRACE_FAILED, HloscopeError

    seen: list[str] = []
    with pytest.raises(HloscopeError) as e:
        compile_request(CompileRequest("h100-sxm", 8, workload="mlp", sets=(("width", "12"),), policy="remat"),
                        phase=seen.append)
    # JAX refuses to shard 12 over 8 devices while tracing or lowering; nothing reached XLA.
    assert e.value.exit_code == EXIT_TRACE_FAILED
    assert seen[:2] == ["starting JAX", "tracing"] and "XLA compile" not in seen


def test_phase_status_on_a_terminal_shows_the_phase() -> None:
    buf = io.StringIO()
    with PhaseStatus(Console(file=buf, force_terminal=True, width=100)) as phase:
        phase("tracing")
        phase(PHASE_WRITING)
    assert phase.seen == ["tracing", "writing artifacts"]
    assert "compiling: writing artifacts" in buf.getvalue()


def test_phase_status_off_a_terminal_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with PhaseStatus() as phase:  # pytest's captured stderr is not a TTY
        phase("tracing")
    assert phase.console is None and capsys.readouterr() == ("", "")


def test_cli_compile_off_a_terminal_prints_no_phases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "--workload", "mlp", "--set", "layers=2", "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr()
    for name in [*EXPECTED, PHASE_WRITING]:
        assert f"compiling: {name}" not in out.err + out.out
    assert out.err == ""  # nothing extra: the report and its trailer go to stdout
    assert "compiled in" in out.out


def test_sweep_progress_on_a_terminal_names_the_cell_and_phase() -> None:
    from hloscope.cli.compiling import progress_bar
    from hloscope.compile.search.sweep import FINISHED, cells

    buf = io.StringIO()
    event, phase, stop = progress_bar(2, Console(file=buf, force_terminal=True, width=160))
    assert phase is not None
    cell = cells("mlp", {}, "h100-sxm", 8, ["offload"], [None])[1]
    phase(cell, "XLA compile")
    event(FINISHED, cell, {})
    stop()
    assert f"{cell.label}: XLA compile" in buf.getvalue()


def test_sweep_progress_off_a_terminal_has_no_phases(capsys: pytest.CaptureFixture[str]) -> None:
    from hloscope.cli.compiling import progress_bar
    from hloscope.compile.search.sweep import FINISHED, cells

    event, phase, _ = progress_bar(2)
    assert phase is None
    cell = cells("mlp", {}, "h100-sxm", 8, ["offload"], [None])[0]
    event(FINISHED, cell, {})
    assert capsys.readouterr().err == f"[1/2] compiled: {cell.label}\n"
