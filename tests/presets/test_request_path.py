"""What a workload's config decides reaches the compile through a CompileRequest (the path of
``hloscope compile``, ``check --workload``, ``sweep`` and the TUI): its mesh and its XLA options."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.xla


def _job(workload: str, **sets: str) -> object:
    from hloscope.compile.run.jobs import compile_job
    from hloscope.request import CompileRequest

    return compile_job(CompileRequest(target="h100-sxm", devices=8, workload=workload,
                                      sets=tuple(sorted(sets.items()))))[0]


def test_ep_builds_the_fsdp_by_expert_mesh() -> None:
    result = _job("deepseek", ep="4", layers="2")
    assert "expert" in str(result.mesh_shape) and "fsdp" in str(result.mesh_shape)  # type: ignore[attr-defined]
    assert " all-to-all-start(" in result.optimized_hlo  # type: ignore[attr-defined]


def test_recipe_flags_and_fp8_options_reach_xla() -> None:
    result = _job("llama", recipe_flags="true", quantization="fp8", layers="1")
    options = result.options  # type: ignore[attr-defined]
    assert options["xla_gpu_enable_while_loop_double_buffering"] is True
    assert options["xla_gpu_all_gather_combine_threshold_bytes"] == 17179869184
    assert options["xla_allow_excess_precision"] is False
    assert "f8e4m3fn" in result.optimized_hlo  # type: ignore[attr-defined]


def test_an_ep_that_does_not_divide_the_devices_is_one_line() -> None:
    from hloscope.compile.workloads import mesh_axes, resolve
    from hloscope.errors import HloscopeError

    _, cfg = resolve("deepseek", {"ep": "8", "experts": "16"})
    with pytest.raises(HloscopeError, match="12 devices do not split into ep=8"):
        mesh_axes(cfg, 12)
