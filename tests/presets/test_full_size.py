"""The full-size presets on 128 GB200s, as the published runs were compiled (minutes each: slow).

Through the compile cache, as ``hloscope sweep`` compiles them, so a machine that already ran
the comparison's sweep reads them back. Facts read in the optimized HLO (jaxlib 0.10.2).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xla]


def _compile(workload: str, **sets: str) -> Any:
    from hloscope.compile.run.jobs import compile_job
    from hloscope.request import CompileRequest

    request = CompileRequest(target="gb200", devices=128, workload=workload, sets=tuple(sorted(sets.items())))
    return compile_job(request)[0]


def test_deepseek_v3_offloads_maxtexts_tensors_at_batch_8() -> None:
    result = _compile("deepseek-v3-671b-flash", batch="8", policy="offload")
    text = result.optimized_hlo
    host = set(re.findall(r"bf16\[([0-9,]+)\]\{[0-9,]+:S\(5\)\}", text))
    # per GPU, stacked over the 3 dense and 58 MoE layers: mla_q [8,4096,1536], mla_kv [8,4096,512],
    # moe_mlpwi_0/1 [8*4096*8, 2048] = 1 GiB each per layer
    assert host == {"3,8,4096,1536", "3,8,4096,512", "58,8,4096,1536", "58,8,4096,512", "58,262144,2048"}
    names = set(re.findall(r'custom_call_target="__gpu\$xla\.gpu\.triton"[^\n]*?name = "([a-z_]+)"', text))
    assert names == {"mha_forward", "mha_preprocess_backward", "mha_backward"}
    # host memory per GPU: exactly those buffers (61 x [8,4096,1536+512] + 58 x 2 x [262144,2048], bf16)
    from hloscope.analysis.memory import compile_figures

    assert compile_figures(result.memory)["host_total_bytes"] == 61 * 8 * 4096 * 2048 * 2 + 58 * 2 * 262144 * 2048 * 2


def test_llama_405b_fp8_recipe_compiles_with_fp8_gemms_and_flash() -> None:
    result = _compile("llama3-405b-fp8", policy="offload")
    text = result.optimized_hlo
    assert re.search(r"^%gemm_fusion_dot[.0-9]*_computation \([^)]*f8e4m3fn\[[^)]*f8e4m3fn\[", text, re.M)
    assert 'name = "mha_forward"' in text
    assert result.options["xla_gpu_enable_while_loop_double_buffering"] is True
