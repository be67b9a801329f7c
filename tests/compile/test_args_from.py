"""``--args-from``: a step taking pytrees (params, optimizer state, batch) compiles with no wrapper,
and its optimizer-state reads from host memory are named by their argument path (issue 27)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from xla_versions import MEMORY_KINDS

from hloscope.cli.main import main

pytestmark = pytest.mark.xla
STEPS = "tests.compile.pytree_steps"


@MEMORY_KINDS
def test_a_pytree_step_compiles_from_args_from_and_names_its_argument_reads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # the user's package is importable from here
    out = tmp_path / "step"
    assert main(["compile", "--fn", f"{STEPS}:train_step", "--args-from", f"{STEPS}:abstract_args", "--devices", "1",
                 "--out", str(out), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert json.loads((out / "manifest.json").read_text())["args"] == f"@{STEPS}:abstract_args"
    # The entry parameters carry the pytree paths (read in optimized.hlo.txt: parameter(2) and (3)
    # are opt_state['mu']['layers']['wo'] / ['wq'] in S(5), each read by one copy-start to the device).
    hlo = (out / "optimized.hlo.txt").read_text()
    assert "op_name=\"opt_state[\\'mu\\'][\\'layers\\'][\\'wo\\']\"" in hlo
    reads = {t["checkpoint_name"]: t for t in d["transfers"] if t["direction"] == "to_device"}
    assert set(reads) == {"opt_state['mu']['layers']['wo']", "opt_state['mu']['layers']['wq']"}
    for t in reads.values():
        assert t["bytes"] == 512 * 1024 * 4 and t["source"].endswith("pytree_steps.py:27")  # the update reading mu

    # Both --args and --args-from: one line, exit 2, before anything compiles.
    assert main(["compile", "--fn", f"{STEPS}:train_step", "--args", "f32[8]", "--args-from",
                 f"{STEPS}:abstract_args", "--out", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err == "hloscope: error: --args and --args-from both describe the arguments: give one\n"
