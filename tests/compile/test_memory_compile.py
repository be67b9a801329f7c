"""Memory facts of real deviceless compiles: XLA's peak vs the device allocation, the HBM override.

Figures are computed by hand from the workload shapes (see each comment).
"""

from __future__ import annotations

import pytest

from hloscope.analysis.memory import MemoryFacts, Role, compile_figures
from hloscope.compile.jobs import compile_request
from hloscope.compile.request import CompileRequest
from hloscope.hlo.xla_dumps import BUFFER_ASSIGNMENT_FILE, LIVE_AT_PEAK_FILE, MEMORY_REPORT_FILE

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
    assert any(b.role is Role.SAVED_ACTIVATIONS for b in facts.top_buffers)
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
def test_deepseek_v3_batch8_xla_peak_counts_host() -> None:
    # DeepSeek-V3 671B, 128 GB200s, per-device batch 8 with offload (measured with jax 0.10.2):
    # device allocation 144.1 GiB, XLA's peak 287.5 GiB = arguments + outputs + the 238.6 GiB host heap.
    _, report = compile_workload("deepseek-v3-671b", {"batch": "8"}, "gb200", 128)
    facts = _facts(report)
    assert facts.device_allocation_bytes == 154_749_884_204
    assert facts.xla_peak_bytes == 308_676_802_364 and facts.xla_peak_counts_host
    assert facts.host_temp_bytes == 256_242_614_272 and facts.fits
