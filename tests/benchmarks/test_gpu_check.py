"""benchmarks/gpu_offload_check.py on this machine's CPU: its profiler run and its reader path (issue 38 item 5).

The figures a GPU run would print come from the same ``figures`` function: read here on the real
``jax.profiler`` trace of ``fixtures/measured/cpu_step`` (a tanh layer's SGD step, three executions:
no host transfer), and once end to end on a step compiled, run and profiled on the CPU.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import FIXTURES

ROOT = FIXTURES.parent
CPU = FIXTURES / "measured" / "cpu_step"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_offload_check", ROOT / "benchmarks" / "gpu_offload_check.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.xla
def test_the_reader_path_on_a_real_cpu_trace(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("jax")
    mod = _script()
    fig = mod.figures(CPU / "step.hlo.txt", CPU / "step.xplane.pb", "h100-sxm")
    # Every measured op of the trace names an instruction of the module it ran; no transfer in it.
    assert fig["measured_ops"] > 0 and fig["matched_ops"] == fig["measured_ops"]
    assert fig["transfers"] == [] and fig["simulated_step_us"] > 0 and fig["measured_step_us"] > 0
    assert mod.main(["--read", str(CPU / "step.hlo.txt"), str(CPU / "step.xplane.pb")]) == 0
    assert "no host transfer in the module" in capsys.readouterr().out


@pytest.mark.xla
def test_the_script_compiles_runs_and_profiles_a_step_on_the_cpu(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("jax")
    mod = _script()
    out = tmp_path / "check"
    assert mod.main(["--platform", "cpu", "--out", str(out), "--layers", "2", "--seq", "32", "--dim", "64",
                     "--steps", "2"]) == 0
    assert {p.name for p in out.iterdir()} == {"step.hlo.txt", "step.xplane.pb", "figures.json"}
    fig = json.loads((out / "figures.json").read_text())
    assert fig["measured_ops"] > 0 and fig["matched_ops"] > 0
    assert "while" in (out / "step.hlo.txt").read_text()  # the layers' lax.scan
    for row in fig["transfers"]:  # on the CPU the placement may leave none; any there carries every figure
        assert {"verdict", "blame_us", "marginal_us", "margin", "measured_overlap"} <= set(row)
    assert "target h100-sxm" in capsys.readouterr().out
