"""Llama with the B200 recipe's choices: FP8 matmuls, NVFP4 MLP weights, flash attention, its XLA flags.

Facts read in the optimized HLO of ``llama`` (2 layers, dim 512, 8 heads of 64, 2 KV heads,
ffn 1536, seq 256), h100-sxm, 8 devices, per-device batch 1, jaxlib 0.10.2.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest

from hloscope.compile.workloads import resolve, xla_flags
from hloscope.compile.workloads.llama import RECIPE_FLAGS

#: a Triton GEMM fusion's computation signature: its operand types
GEMM = re.compile(r"^%gemm_fusion_dot[.0-9]*_computation \((.*)\) -> ", re.M)


@functools.cache
def _compile(target: str = "h100-sxm", devices: int = 8, **sets: str) -> Any:
    from hloscope.compile.step.deviceless import StepOptions, compile_step, make_mesh
    from hloscope.request import CompileRequest, xla_flag_texts

    wl, cfg = resolve("llama", dict(sets))
    mesh = make_mesh(target, devices)
    fn, args = wl.build(cfg, mesh)
    request = CompileRequest(target, devices, workload="llama", xla_flags=tuple(xla_flag_texts(xla_flags(cfg))))
    return compile_step(request, fn, args, StepOptions(mesh=mesh, donate_argnums=(0, 1, 2)))


def _gemm_operand_types(text: str) -> list[str]:
    return list(GEMM.findall(text))


@pytest.mark.xla
def test_fp8_matmuls_are_gemms_of_fp8_operands() -> None:
    text = _compile(quantization="fp8").optimized_hlo
    sigs = _gemm_operand_types(text)
    fp8 = [s for s in sigs if s.count("f8e4m3fn[") == 2]
    assert fp8, sigs  # forward: both operands float8_e4m3fn
    assert any("f8e5m2[" in s for s in sigs), sigs  # backward: the gradient in float8_e5m2
    # bf16 is the default: no f8 anywhere
    assert "f8e4m3fn" not in _compile().optimized_hlo


@pytest.mark.xla
def test_nvfp4_quantizes_the_mlp_weights_to_fp4_blocks() -> None:
    text = _compile(quantization="nvfp4").optimized_hlo
    assert re.search(r"f4e2m1fn\[", text)  # the weights' values in float4_e2m1fn
    assert 'op_name="jit(step)/jvp()/while/body/closed_call/nvfp4/convert_element_type"' in text
    # attention projections stay FP8 GEMMs
    assert any(s.count("f8e4m3fn[") == 2 for s in _gemm_operand_types(text))


@pytest.mark.xla
def test_flash_attention_compiles_for_blackwell_as_triton() -> None:
    text = _compile("gb200", 4, attention="flash").optimized_hlo
    names = set(re.findall(r'custom_call_target="__gpu\$xla\.gpu\.triton"[^\n]*?name = "([a-z_]+)"', text))
    assert names == {"mha_forward", "mha_preprocess_backward", "mha_backward"}
    assert "bkgqs" not in text  # no XLA attention einsum left


def test_recipe_flags_and_quantization_flags() -> None:
    assert xla_flags(resolve("llama3-405b")[1]) == {}
    fp8 = xla_flags(resolve("llama3-405b-fp8")[1])
    assert fp8["xla_allow_excess_precision"] is False
    assert {k: fp8[k] for k in RECIPE_FLAGS} == RECIPE_FLAGS
    assert fp8["xla_gpu_all_gather_combine_threshold_bytes"] == 16 * 2**30
    assert "xla_gpu_enable_latency_hiding_scheduler" not in xla_flags(resolve("llama3-405b-nvfp4")[1])
