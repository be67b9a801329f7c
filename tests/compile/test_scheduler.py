"""The scheduler axis is real and named (issue 17 item 2), and topologies as the GPUs are wired (item 4).

Facts measured with jaxlib 0.10.2 (XLA 5a9e73cb) and read from these compiles: LHS
leaves ``scheduling_name`` in every scheduled instruction's metadata; the plugin logs
which latency estimator it built (hloscope.compile.cuda.scheduler's docstring quotes the
lines).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from hloscope.cli.main import main
from hloscope.compile.cuda.scheduler import APPROXIMATE, SOL, read_run, resolve
from hloscope.compile.cuda.topology import topology_for
from hloscope.errors import HloscopeError
from hloscope.request import Scheduler
from hloscope.targets import get_target


def _fsdp_step(target: str, devices: int, scheduler: Scheduler) -> Any:
    """A small FSDP matmul step: weights gathered over the mesh (all-gathers for LHS to place)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    from hloscope.compile.step.deviceless import StepOptions, compile_step, make_mesh
    from hloscope.request import CompileRequest

    mesh = make_mesh(target, devices)
    s = NamedSharding(mesh, PartitionSpec("fsdp"))
    w = jax.ShapeDtypeStruct((2048, 2048), jnp.bfloat16, sharding=s)
    x = jax.ShapeDtypeStruct((64 * devices, 2048), jnp.bfloat16, sharding=s)
    request = CompileRequest(target, devices, fn=f"{__name__}:fsdp_step", scheduler=scheduler)
    return compile_step(request, lambda w, x: jnp.tanh(x @ w) @ w.T, (w, x), StepOptions(mesh=mesh))


def test_each_scheduler_sets_its_options_and_is_read_back() -> None:
    results = {s: _fsdp_step("h100-sxm", 8, s) for s in Scheduler}
    lhs, approx, none = results[Scheduler.LHS], results[Scheduler.LHS_APPROX], results[Scheduler.NONE]
    assert lhs.options["xla_gpu_enable_latency_hiding_scheduler"] is True
    assert "xla_gpu_enable_analytical_sol_latency_estimator" not in lhs.options
    assert approx.options["xla_gpu_enable_analytical_sol_latency_estimator"] is False
    assert none.options["xla_gpu_enable_latency_hiding_scheduler"] is False
    assert none.options["xla_gpu_enable_analytical_sol_latency_estimator"] is False
    assert lhs.scheduler.name == approx.scheduler.name == "lhs" and none.scheduler.name == "none"
    assert lhs.scheduler.estimator == SOL and lhs.scheduler.sol_table == "NVIDIA H100 80GB HBM3"
    assert approx.scheduler.estimator == APPROXIMATE and approx.scheduler.sol_table is None
    assert none.scheduler.estimator is None and "scheduling_name=" not in none.optimized_hlo
    # LHS off is another schedule; on a step this small both estimators give LHS the same order.
    md5 = {s: hashlib.md5(r.optimized_hlo.encode()).hexdigest() for s, r in results.items()}
    assert md5[Scheduler.NONE] != md5[Scheduler.LHS]


def test_gb200_has_no_sol_table_and_lhs_falls_back_to_the_approximate_estimator() -> None:
    # XLA's SOL config knows "NVIDIA H100 80GB HBM3" and "NVIDIA B200", not "NVIDIA GB200" (the
    # name a GB200's GPU reports): default config, then no SOL estimator for the step's
    # collectives, so LHS runs on T-shirt sizes, as it would on the real machine.
    result = _fsdp_step("gb200", 16, Scheduler.LHS)
    assert result.scheduler.name == "lhs" and result.scheduler.sol_table == "default"
    assert result.scheduler.estimator == APPROXIMATE
    assert "Non homogenous replica group" in (result.scheduler.reason or "")
    assert result.topology == "1x4x4 (1 NVLink domain x 4 hosts x 4 GPUs)"


def test_lhs_alias_and_conflicts() -> None:
    assert resolve(None, None) is Scheduler.LHS and resolve(None, False) is Scheduler.NONE
    assert resolve("lhs-approx", True) is Scheduler.LHS_APPROX
    for bad in (("none", True), ("lhs", False), ("fast", None)):
        with pytest.raises(HloscopeError) as e:
            resolve(*bad)
        assert e.value.exit_code == 2


def test_read_run_without_the_log_does_not_guess() -> None:
    run = read_run("ROOT %x = f32[] add(%a, %b), metadata={scheduling_name=\"x\"}", "", Scheduler.LHS)
    assert run.name == "lhs" and run.estimator is None and "unknown" in run.source


def test_cli_scheduler_reaches_the_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seen = {}
    for name in ("lhs", "lhs-approx", "none"):
        out = tmp_path / name
        assert main(["compile", "--workload", "mlp", "--set", "layers=2", "--scheduler", name,
                     "--out", str(out)]) == 0
        # The report names one estimator, the one XLA used (issue 27: the scheduler line said
        # speed-of-light while the xla-us legend said "unknown").
        text = capsys.readouterr().out
        named = {"speed-of-light" if n == "SOL" else n for n in
                 re.findall(r"\b(speed-of-light|SOL|approximate|analytical|profile-guided|unknown) (?:latency )?"
                            r"estimator", text)}
        assert named == {"lhs": {"speed-of-light"}, "lhs-approx": {"approximate"}, "none": set()}[name], text
        if name == "none":
            assert "xla us: no latency hiding scheduler ran (see the scheduler line)" in text
        manifest = json.loads((out / "manifest.json").read_text())
        seen[name] = (manifest["scheduler"]["name"], manifest["scheduler"]["estimator"],
                      manifest["scheduler"]["requested"])
        assert manifest["topology"] == "1x1x8 (1 NVLink domain x 1 host x 8 GPUs)"
    assert seen == {"lhs": ("lhs", "sol", "lhs"), "lhs-approx": ("lhs", "approximate", "lhs-approx"),
                    "none": ("none", None, "none")}
    capsys.readouterr()
    assert main(["compile", "--workload", "mlp", "--scheduler", "lhs", "--no-lhs", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "contradicts --no-lhs" in err and err.count("\n") == 1
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("target, devices, name", [
    ("h100-sxm", 8, "1x1x8"), ("h100-sxm", 128, "16x1x8"), ("b200", 64, "8x1x8"),
    ("gb200", 4, "1x1x4"), ("gb200", 72, "1x18x4"), ("gb200", 128, "2x16x4"), ("gb200", 144, "2x18x4"),
    ("gh200", 8, "8x1x1"),
])
def test_topology_per_target(target: str, devices: int, name: str) -> None:
    topo = topology_for(get_target(target), devices)
    assert topo.name == name and topo.devices == devices


@pytest.mark.parametrize("target, devices, message", [
    ("h100-sxm", 12, "multiple of 8"), ("gb200", 6, "multiple of 4"), ("h100-sxm", 0, "at least 1")])
def test_topology_rejects_counts_that_fill_no_host(target: str, devices: int, message: str) -> None:
    with pytest.raises(HloscopeError) as e:
        topology_for(get_target(target), devices)
    assert e.value.exit_code == 2 and message in str(e.value)


def test_get_topology_desc_takes_the_wiring() -> None:
    # 128 GB200s: 32 hosts (process indices 0..31) of 4, in 2 NVLink domains.
    from hloscope.compile.cuda.topology import compile_only_devices

    devs = compile_only_devices(get_target("gb200"), 128)
    assert len(devs) == 128 and devs[-1].process_index == 31 and devs[0].device_kind == "NVIDIA GB200"


def test_a_target_file_sets_its_wiring(tmp_path: Path) -> None:
    good = tmp_path / "nvl16.toml"
    good.write_text('base = "h100-sxm"\nname = "h100-nvl16"\ngpus_per_host = 8\nhosts_per_nvlink_domain = 2\n')
    assert topology_for(get_target(str(good)), 32).name == "2x2x8"
    bad = tmp_path / "bad.toml"
    bad.write_text('base = "h100-sxm"\nname = "bad"\ngpus_per_host = 0\n')
    with pytest.raises(HloscopeError) as e:
        get_target(str(bad))
    assert e.value.exit_code == 2 and "gpus_per_host" in str(e.value)
