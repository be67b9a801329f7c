"""The default gate as a CI job runs it (``hloscope check PATH``, ``analyze --fail-on``), read as text.

The measured TPU v5e runs (fixtures/measured/tpu_v5e/README.md): ``big`` offloads 128 MiB per layer
both ways; both transfers are ``partial`` (none exposed) and the chip waited 100.45 ms of its
187.2 ms step at their dones (60.63 + 39.82 ms, 53.7%); the model, at the shares of HBM and the MXU the
chip achieves, says ~101.1 of ~187.5 ms (53.9%). ``square`` waited 25.57 of 113.3 ms (22.6%; the model:
23.4%). ``wide`` waited 3.04 of 92.5 ms (3.3%; the model: 3.4%). ``mlp_offload.hlo.txt`` (a compiled H100 step) has three transfers, all hidden.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from check_helpers import FIXTURES

from hloscope.cli.main import main
from hloscope.errors import EXIT_CHECK_FAILED, EXIT_NOTHING_TO_CHECK, EXIT_OK

TPU = FIXTURES / "measured" / "tpu_v5e"
BIG = str(TPU / "big" / "dump")


@pytest.fixture(autouse=True)
def _no_pyproject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no pyproject.toml above a tmp folder


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_default_gate_fails_the_tpu_step_that_waits_on_partial_transfers(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", BIG)
    assert code == EXIT_CHECK_FAILED, out
    lines = out.splitlines()
    assert lines[0].endswith("target tpu-v5e: FAILED (1 violation(s))")
    assert lines[1].startswith("rules: the default gate (no rule given by a flag or [tool.hloscope]): no sync, "
                               "no exposed, and the step waits on host transfers at most 10% of its time")
    assert "pass no-exposed (this step: 0 of 2 transfers exposed)" in out  # neither is exposed: both partial
    # the reading beside the limit, and how to loosen it
    assert "FAIL max-exposed-fraction = 0.1 (this step: 0.539, 53.9%)" in out
    assert "the step waits on host transfers 53.9% of its estimated time (~101.1 ms of ~187.5 ms) > 10.0% allowed" \
        in out
    assert "loosen it with --max-exposed-fraction 0.54 or max-exposed-fraction = 0.54 in [tool.hloscope]" in out
    # the loosened gate, as the words give it, passes
    code, out, _ = run(capsys, "check", BIG, "--max-exposed-fraction", "0.54", "--no-sync", "--no-exposed")
    assert code == EXIT_OK and "pass max-exposed-fraction = 0.54 (this step: 0.539, 53.9%)" in out
    assert "rules: the default gate" not in out


def test_the_same_bound_from_pyproject(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.hloscope]\nmax-exposed-fraction = 0.55\n")
    code, out, _ = run(capsys, "check", BIG)
    assert code == EXIT_OK and "pass max-exposed-fraction = 0.55" in out and "pass no-exposed" not in out


@pytest.mark.parametrize("case, reading, code", [
    ("square", "FAIL max-exposed-fraction = 0.1 (this step: 0.234, 23.4%)", EXIT_CHECK_FAILED),
    ("wide", "pass max-exposed-fraction = 0.1 (this step: 0.0345, 3.4%)", EXIT_OK),
])
def test_partial_steps_on_both_sides_of_the_bound(capsys: pytest.CaptureFixture[str], case: str, reading: str,
                                                  code: int) -> None:
    got, out, _ = run(capsys, "check", str(TPU / case / "dump"))
    assert got == code and reading in out, out


def test_a_step_whose_transfers_are_all_hidden_passes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", str(FIXTURES / "mlp_offload.hlo.txt"))
    assert code == EXIT_OK, out
    assert "pass no-exposed (this step: 0 of 3 transfers exposed)" in out
    assert "pass max-exposed-fraction = 0.1 (this step: 0, 0.0%)" in out


def test_the_default_gate_never_passes_on_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "check", str(TPU / "big_remat" / "dump"))  # the remat twin: no host transfer
    assert code == EXIT_NOTHING_TO_CHECK and "no host transfer" in err


def test_fail_on_without_partial_says_the_step_waits(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "analyze", BIG, "--fail-on", "exposed,sync")
    assert code == EXIT_OK  # the verdicts asked for: none
    assert ("--fail-on exposed,sync passed, but the step waits on host transfers 53.9% of its estimated time "
            "(~101.1 ms of ~187.5 ms; 2 partial transfer(s)): `hloscope check` fails on it") in err
    code, _, err = run(capsys, "analyze", BIG, "--fail-on", "partial,exposed,sync")
    assert code == EXIT_CHECK_FAILED and "passed, but" not in err
    code, _, err = run(capsys, "analyze", str(FIXTURES / "mlp_offload.hlo.txt"), "--fail-on", "exposed,sync")
    assert code == EXIT_OK and "passed, but" not in err


def test_the_json_says_the_default_gate_ran(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    code, out, _ = run(capsys, "check", BIG, "--format", "json")
    d = json.loads(out)
    assert code == EXIT_CHECK_FAILED and d["default_gate"] is True
    assert d["rules"] == {"no-sync": True, "no-exposed": True, "max-exposed-fraction": 0.1}
    assert d["readings"]["max-exposed-fraction"]["value"] == pytest.approx(0.5393, abs=1e-4)  # ~101.1 of ~187.5 ms
    (v,) = d["violations"]
    assert v["rule"] == "max-exposed-fraction" and "loosen it with --max-exposed-fraction 0.54" in v["message"]
    code, out, _ = run(capsys, "check", BIG, "--format", "json", "--no-sync")
    assert json.loads(out)["default_gate"] is False


def test_the_markdown_summary_says_the_default_gate_ran(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", BIG, "--format", "markdown")
    assert code == EXIT_CHECK_FAILED
    assert "rules: the default gate \\(no rule given by a flag or \\[tool.hloscope\\]\\)" in out
    row = next(line for line in out.splitlines() if line.startswith("| `max-exposed-fraction`"))
    assert "| **FAIL** (1) | 0.1 | 0.539, 53.9% |" in row
