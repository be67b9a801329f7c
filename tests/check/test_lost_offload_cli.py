"""Issue 27 from the CLI on compiled steps (the mlp workload, 2 layers, 8 compile-only H100s):
a lost offload keeps the configured rule in check's output, and a step-wide violation names
each transfer's checkpoint name and user line.

The mlp layer tags its hidden activation ``checkpoint_name(jnp.tanh(x @ p["w_in"]), "hidden")``
at workloads/mlp.py:40, and the offload policy offloads "hidden": 3 transfers of 16 KiB.
With ``policy=remat`` nothing is offloaded (no host transfer in the module)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.errors import EXIT_CHECK_FAILED, EXIT_NOTHING_TO_CHECK, EXIT_OK

pytestmark = pytest.mark.xla

MLP = ["--workload", "mlp", "--set", "layers=2"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out + err


def test_a_lost_offload_keeps_the_configured_rule_with_a_baseline(capsys: pytest.CaptureFixture[str],
                                                                  tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a baseline of the offloading step and a project that expects "hidden" offloaded
    monkeypatch.chdir(tmp_path)
    code, out = run(capsys, "check", "--no-config", *MLP, "--write-baseline", "base.json")
    assert code == EXIT_OK, out
    (tmp_path / "pyproject.toml").write_text('[tool.hloscope]\nexpect-offloaded = ["hidden"]\n')
    # When the policy changes to remat and the offload is gone
    code, out = run(capsys, "check", *MLP, "--set", "policy=remat", "--baseline", "base.json")
    # Then the check fails (it did not say "nothing to check", exit 8) and names the configured rule
    assert code == EXIT_CHECK_FAILED, out
    assert "FAIL expect-offloaded = ['hidden']" in out
    assert "expected offload 'hidden' not found among 0 transfer(s) to host" in out
    assert out.count("REGRESSION lost") == 3  # the baseline's three transfers of 'hidden'
    # and without the baseline the configured rule still fails the step
    code, out = run(capsys, "check", *MLP, "--set", "policy=remat")
    assert code == EXIT_CHECK_FAILED and "FAIL expect-offloaded" in out, out
    # while a project that expects nothing still has nothing to check
    (tmp_path / "pyproject.toml").write_text("[tool.hloscope]\n")
    code, out = run(capsys, "check", *MLP, "--set", "policy=remat")
    assert code == EXIT_NOTHING_TO_CHECK, out


def test_a_step_wide_violation_names_the_checkpoint_and_the_line(capsys: pytest.CaptureFixture[str],
                                                                 tmp_path: Path) -> None:
    # Given the step compiled without the latency-hiding scheduler (its offloads are exposed)
    art = tmp_path / "nolhs"
    code, out = run(capsys, "compile", *MLP, "--no-lhs", "--out", str(art))
    assert code == EXIT_OK, out
    # When max-exposed-us fails
    code, out = run(capsys, "check", "--no-config", str(art), "--max-exposed-us", "1")
    assert code == EXIT_CHECK_FAILED, out
    largest = next(line for line in out.splitlines() if "(largest: " in line)
    # Then each largest transfer reads with its checkpoint name and the user's line, not only its op
    # (mlp.py:45 is `h = checkpoint_name(jnp.tanh(x @ p["w_in"]), "hidden")`; :40, which this test
    # read before, is the `from jax.ad_checkpoint import checkpoint_name` line: the stack-frame parent
    # id of XLA's text printer was read one off, fixed in hlo/building.py)
    assert "dynamic-slice-start.1 ('hidden' at " in largest and "workloads/mlp.py:45) ~" in largest
