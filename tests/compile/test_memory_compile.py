"""Memory facts of real deviceless compiles: XLA's peak vs the device allocation, the HBM override.

Figures are computed by hand from the workload shapes (see each comment).
"""

from __future__ import annotations

import pytest
from xla_versions import JAX012, XLA_PEAK_HOST, read_on_jaxlib_0_10

from hloscope.analysis.memory import MemoryFacts, Role, compile_figures
from hloscope.compile.run.jobs import compile_request
from hloscope.hlo.xla_dumps import BUFFER_ASSIGNMENT_FILE, LIVE_AT_PEAK_FILE, MEMORY_REPORT_FILE
from hloscope.request import CompileRequest

pytestmark = pytest.mark.xla

# Q/K/V (32 + 8 + 8 heads of 128) much wider than the model (256): the offloaded bytes
# outgrow the device temporaries.
BIG_HOST = {"layers": "32", "dim": "256", "ffn": "512", "heads": "32", "kv_heads": "8", "head_dim": "128",
            "batch": "2"}


def _facts(report) -> MemoryFacts:  # type: ignore[no-untyped-def]
    assert report.memory is not None  # the pipeline builds them for every compile
    return report.memory


def compile_workload(workload: str, sets: dict[str, str], target: str = "h100-sxm", devices: int = 8,
                     memory_override_bytes: int | None = None):  # type: ignore[no-untyped-def]
    step = compile_request(CompileRequest(target, devices, workload=workload, sets=tuple(sets.items()),
                                          memory_override_bytes=memory_override_bytes))
    return step.result, step.report


@XLA_PEAK_HOST
def test_large_host_heap_is_recognised_in_xla_peak() -> None:
    result, report = compile_workload("llama", BIG_HOST)
    m = result.memory
    facts = _facts(report)
    # Given 32 layers x 2 x 256 tokens x 48 heads x 128 x 2 bytes offloaded
    assert m["host_temp_size_in_bytes"] == 32 * 2 * 256 * 48 * 128 * 2
    # Then the device allocation is arguments + temporaries + non-aliased outputs (the compile records
    # XLA's raw figures only; the manifest's derived one says the same)
    assert "device_allocation_bytes" not in m
    assert facts.device_allocation_bytes == compile_figures(m)["device_allocation_bytes"] == (
        m["argument_size_in_bytes"] + m["temp_size_in_bytes"] + m["output_size_in_bytes"] - m["alias_size_in_bytes"])
    # And XLA's peak is above it, because it counts the (larger) host heap
    assert m["host_temp_size_in_bytes"] > m["temp_size_in_bytes"]
    assert facts.xla_peak_bytes > facts.device_allocation_bytes and facts.xla_peak_counts_host
    assert facts.fits and facts.host_live_at_peak_bytes == m["host_temp_size_in_bytes"]
    # Among the largest device buffers at the peak: the forward loop's stack of saved residuals,
    # bf16[32,2,256,256] (32 layers x batch 2 x 256 tokens x dim 256 x 2 B = 8,388,608 B), at the same
    # offset (58720256) of the temporaries on both versions. XLA 0.10 names that value at the peak by
    # the forward loop's parameter (loop_peel_param{5}, a phi); XLA 0.12 runs the loop body's
    # dynamic-update-slice into the stack as an async fusion (fusion-start.7/fusion-done.7) and names
    # the value by the op fusion-start.7 wraps, loop_dynamic_update_slice_fusion.10, which
    # compiled.as_text() does not print: hloscope reads it where XLA's buffer-assignment-values lists
    # it too, fusion-done.7 (read by hand in each version's dump of this compile).
    saved = [b for b in facts.top_buffers if b.role is Role.SAVED_ACTIVATIONS]
    assert [(b.size_bytes, b.shape) for b in saved] == [(32 * 2 * 256 * 256 * 2, "bf16[32,2,256,256]{3,2,1,0}")]
    position, instruction = (("loop_dynamic_update_slice_fusion.10{}", "fusion-done.7") if JAX012
                             else ("loop_peel_param{5}", "loop_peel_param"))
    assert (saved[0].position, saved[0].instruction, saved[0].stacked_layers) == (position, instruction, 32)
    # XLA's three memory texts are kept (beside the scheduler's log the compile also keeps).
    assert {MEMORY_REPORT_FILE, LIVE_AT_PEAK_FILE, BUFFER_ASSIGNMENT_FILE} <= set(result.extra_files)


def test_small_host_heap_leaves_xla_peak_on_device() -> None:
    _, report = compile_workload("mlp", {})
    facts = _facts(report)
    assert facts.xla_peak_bytes <= facts.device_allocation_bytes and not facts.xla_peak_counts_host


def test_memory_override_reaches_xla() -> None:
    # The override replaces the target's HBM in the topology XLA compiles for.
    result, report = compile_workload("mlp", {}, memory_override_bytes=3 * 2**30)
    assert result.device_memory_size == result.memory["device_memory_size"] == 3 * 2**30
    facts = _facts(report)
    assert facts.hbm_bytes == 3 * 2**30 and facts.fits


@pytest.mark.slow
@read_on_jaxlib_0_10("XLA's peak is 116030661184 B (0.044% above the 115979686208 B asserted), the argument "
                     "figure the same")
def test_deepseek_v3_batch8_xla_peak_counts_host() -> None:
    # DeepSeek-V3 671B as MaxText runs it (float32 weights, dropless sorted MoE, MaxText's
    # offloaded tensors), 128 GB200s, per-device batch 8 with offload. Arguments 62,921,150,464 B
    # + XLA's temporaries + 780 B of outputs not aliased = the device allocation, which fits in
    # 186 GB. XLA's temporaries differ by version (its buffer packing, not the step): 115,979,686,208 B
    # on jax 0.10.2 (device allocation 178,900,837,452 B, 166.6 GiB); 108,732,002,880 B on jax
    # 0.12.0.1 (171,653,154,124 B, 159.9 GiB; the memory-usage report's default space totals
    # 171,653,155,346 B). The rest is read alike on both: the host heap is
    # 61 x bf16[8,4096,2048] (per layer, mla_q [8,4096,1536] and mla_kv [8,4096,512] side by side)
    # + 58 MoE layers x 2 x bf16[262144,2048] (moe_mlpwi_0/1, B*S*K = 8*4096*8 rows)
    # = 132,741,332,992 B; XLA's peak (195,662,484,308 B) is the arguments and outputs not aliased
    # (62,921,151,244 B) plus a heap of 132,741,333,064 B: the host heap, larger than the device one.
    _, report = compile_workload("deepseek-v3-671b", {"batch": "8"}, "gb200", 128)
    facts = _facts(report)
    temp_bytes = 108_732_002_880 if JAX012 else 115_979_686_208
    assert (facts.argument_bytes, facts.temp_bytes) == (62_921_150_464, temp_bytes)
    assert facts.device_allocation_bytes == 62_921_150_464 + temp_bytes + 780 and facts.fits
    assert facts.device_allocation_bytes == (171_653_154_124 if JAX012 else 178_900_837_452)
    assert facts.host_temp_bytes == 61 * 8 * 4096 * 2048 * 2 + 58 * 2 * 262144 * 2048 * 2 == 132_741_332_992
    assert facts.xla_peak_bytes == 195_662_484_308 and facts.xla_peak_counts_host
    # The heap in XLA's peak is the host heap, not the device temporaries (XLA's peak figure is
    # arguments and outputs + the larger heap, both versions; 72 B of it beyond the host buffers).
    heap = facts.xla_peak_bytes - (facts.argument_bytes + facts.output_bytes - facts.alias_bytes)
    assert heap == 132_741_333_064 and facts.host_temp_bytes < heap < facts.host_temp_bytes + 1024
    assert heap > facts.temp_bytes
