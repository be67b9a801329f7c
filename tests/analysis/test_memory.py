"""Memory facts on real dumps (fixtures/memory/, made by fixtures/generate_memory.py).

Every figure asserted here was read by hand from the fixture files; the arithmetic
beside each one says how.
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from hloscope.analysis.memory import (
    Action,
    Limit,
    MemoryFacts,
    Role,
    bytes_by_role,
    memory_facts,
    peak_buffers,
    scheduler_memory_limit,
)
from hloscope.hlo.parser import parse_hlo
from hloscope.hlo.xla_dumps import parse_assigned_values, parse_live_at_peak, report_space_totals
from hloscope.render.memory_text import buffer_detail, step_words, xla_peak_words
from hloscope.targets import get_target

MEMORY = Path(__file__).resolve().parents[2] / "fixtures" / "memory"


@cache
def _files(name: str) -> dict[str, Any]:
    d = MEMORY / name
    return {
        "meta": json.loads((d / "memory.json").read_text()),
        "report": (d / "memory-usage-report.txt").read_text(),
        "live": (d / "live-range-at-peak.txt").read_text(),
        "assignment": (d / "buffer-assignment-at-peak.txt").read_text(),
        "module": parse_hlo((d / "optimized.hlo.txt").read_text(), str(d / "optimized.hlo.txt")),
    }


@cache
def _facts(name: str) -> MemoryFacts:
    f = _files(name)
    return memory_facts(f["meta"]["memory"], get_target("h100-sxm"), f["report"], f["assignment"], f["module"],
                        f["live"], vocab_size=f["meta"]["config"].get("vocab"))


def test_mlp_device_allocation_and_xla_peak() -> None:
    m = _facts("mlp_offload")
    # memory.json: arguments 5,251,072 + temporaries 5,176,896 + outputs 5,242,940 - aliased 5,242,880.
    assert m.device_allocation_bytes == 10_428_028
    # XLA's peak (10,420,308) is below the allocation: the device heap is the largest trace.
    assert m.xla_peak_bytes == 10_420_308 and not m.xla_peak_counts_host
    # 4 layers x (8 x 1024) bf16 offloaded.
    assert m.host_bytes == m.host_temp_bytes == 4 * 8 * 1024 * 2
    assert m.fits and m.hbm_bytes == 80 * 2**30
    assert m.next_steps == ()


def test_memory_usage_report_totals() -> None:
    # "Memory Space: default (color=0) / Total bytes: 10428170" and "cmem (color=5) / 65536".
    assert report_space_totals(_files("mlp_offload")["report"]) == {0: 10_428_170, 5: 65_536}
    assert _facts("llama_offload_big_host").report_space_bytes == {0: 224_832_530, 5: 201_326_592}


def test_live_at_peak_list() -> None:
    live = parse_live_at_peak(_files("mlp_offload")["live"])
    assert live is not None
    # "Live ranges at 157 (peak):" ... "Stack trace breakdown for peak usage: 9 420 944 bytes".
    assert live.schedule_point == 157 and live.total_bytes == 9_420_944
    assert live.values[0] == ("gemm_fusion_dot.8{}", 1_048_576)
    assert ("wrapped_dynamic-update-slice.1{}", 65_536) in live.values
    assert parse_live_at_peak("HloLiveRange (max 3):\n  InstructionSequence:\n") is None


def test_assigned_values_space_and_shape() -> None:
    values = parse_assigned_values(_files("mlp_offload")["assignment"])
    # " value: <325 wrapped_dynamic-update-slice.1 @5> (size=65536,offset=0): bf16[4,8,1024]{2,1,0:S(5)}"
    assert values["wrapped_dynamic-update-slice.1"] == (5, "bf16[4,8,1024]{2,1,0:S(5)}")
    # The live-range dump names it "...{}"; both spellings resolve.
    assert values["wrapped_dynamic-update-slice.1{}"] == values["wrapped_dynamic-update-slice.1"]
    assert values["while.26{3}"] == (0, "bf16[4,8,512]{2,1,0}")


@pytest.mark.parametrize(("fixture", "position", "role", "space", "size", "detail", "layers"), [
    # mlp: Adam's first moment of w_in is an argument; its name comes from the parameter's op_name.
    ("mlp_offload", "param.7{}", Role.ARGUMENT, 0, 1_048_576, "m['w_in']", 0),
    # The forward loop's carried residual stack: 4 layers x 8 x 512 bf16 = 32,768 bytes.
    ("mlp_offload", "while.26{3}", Role.SAVED_ACTIVATIONS, 0, 32_768, "while.26", 4),
    ("mlp_offload", "wrapped_dynamic-update-slice.1{}", Role.OFFLOADED, 5, 65_536, "", 0),
    # Inside the sugared reduce-scatter-start: named in the dump, not in compiled.as_text().
    ("mlp_offload", "reduce-scatter.4{0}", Role.COLLECTIVE, 0, 131_072, "reduce-scatter", 0),
    # llama: Q of 32 layers offloaded, 32 x 2 x 256 x 32 heads x 128 x 2 bytes.
    ("llama_offload_big_host", "wrapped_dynamic-update-slice{}", Role.OFFLOADED, 5, 134_217_728, "", 0),
    ("llama_offload_big_host", "loop_peel_param{5}", Role.SAVED_ACTIVATIONS, 0, 8_388_608, "while.44", 32),
])
def test_roles_of_live_values(fixture: str, position: str, role: Role, space: int, size: int, detail: str,
                              layers: int) -> None:
    f = _files(fixture)
    live = parse_live_at_peak(f["live"])
    assert live is not None
    by = {b.position: b for b in peak_buffers(live, parse_assigned_values(f["assignment"]), f["module"],
                                              f["meta"]["config"].get("vocab"))}
    b = by[position]
    assert (b.role, b.memory_space, b.size_bytes, b.detail, b.stacked_layers) == (role, space, size, detail, layers)
    # and in words: the loop, then the layer count of a stack
    assert buffer_detail(b) == (f"{detail}, stacked over {layers} layers" if layers else detail)


def test_attention_scores_in_the_loop_are_not_logits() -> None:
    # llama vocab is 1024 and gemm_fusion_dot.104 is bf16[16,128,1024], but inside the layer loop.
    f = _files("llama_offload_big_host")
    live = parse_live_at_peak(f["live"])
    assert live is not None
    by = {b.position: b for b in peak_buffers(live, parse_assigned_values(f["assignment"]), f["module"], 1024)}
    assert by["gemm_fusion_dot.104{}"].role is Role.TEMPORARY
    assert by["gemm_fusion_dot.104{}"].source.endswith("common.py:115")


def test_big_host_heap_makes_xla_peak_count_host() -> None:
    m = _facts("llama_offload_big_host")
    # arguments 121,412,096 + temporaries 103,419,584 + outputs 121,408,300 - aliased 121,408,000.
    assert m.device_allocation_bytes == 224_831_980
    # 32 layers x 2 x 256 tokens x (32 + 8 + 8 heads) x 128 x 2 bytes of Q/K/V in pinned host memory.
    assert m.host_temp_bytes == 32 * 2 * 256 * 48 * 128 * 2 == 201_326_592
    # XLA's peak 322,739,004 = arguments and non-aliased outputs (121,412,396) + 201,326,608:
    # the host heap (plus 16 bytes), not the device one.
    assert m.xla_peak_bytes == 322_739_004 > m.device_allocation_bytes
    assert m.xla_peak_counts_host and m.xla_peak_io_bytes == 121_412_396 and m.xla_peak_heap_bytes == 201_326_608
    assert "host (S(5)) temporaries (201326592)" in xla_peak_words(m)
    assert m.host_live_at_peak_bytes == m.host_temp_bytes
    # Top device buffers exclude host ones and are sorted; the largest is a 16 MiB f32 temporary.
    assert all(b.memory_space == 0 for b in m.top_buffers)
    assert [b.size_bytes for b in m.top_buffers] == sorted((b.size_bytes for b in m.top_buffers), reverse=True)
    assert m.top_buffers[0].position == "loop_broadcast_fusion.8{}" and m.top_buffers[0].size_bytes == 16_777_216


def test_scheduler_limit_formula() -> None:
    # (80 GiB x 80% - (arguments + non-aliased outputs)) x 95 / 100, by hand for the mlp step.
    io = 5_251_072 + 5_242_940 - 5_242_880
    assert scheduler_memory_limit(80 * 2**30, io) == (68_719_476_736 - io) * 95 // 100 == 65_278_514_323
    assert _facts("mlp_offload").pressure.scheduler_limit_bytes == 65_278_514_323


def test_pressure_and_next_steps_when_over_hbm() -> None:
    f = _files("llama_offload_big_host")
    # Same step, as if the GPU had 200 MB: 224,831,980 bytes do not fit.
    m = memory_facts(f["meta"]["memory"], get_target("h100-sxm"), f["report"], f["assignment"], f["module"],
                     f["live"], hbm_bytes=200_000_000, vocab_size=1024)
    assert not m.fits and m.pressure.over_hbm and m.pressure.excess_bytes == 24_831_980
    # 200 MB x 80% = 160 MB, minus 121,412,396 of arguments/outputs, x 95% = 36,658,223 < temporaries.
    assert m.pressure.scheduler_limit_bytes == 36_658_223 and m.pressure.over_scheduler_limit
    assert 0 < len(m.next_steps) <= 3
    assert m.next_steps[0].action is Action.OFFLOAD_SAVED and "--policy offload" in step_words(m.next_steps[0])["via"]
    assert m.next_steps[0].because is Role.SAVED_ACTIVATIONS and m.next_steps[0].offloaded == ()


def test_next_steps_name_what_is_offloaded_already() -> None:
    # The same over-HBM step, told that Q/K/V are offloaded today: the advice is to name the saved
    # tensor and add it to the offload list (not to switch --policy offload on).
    f = _files("llama_offload_big_host")
    m = memory_facts(f["meta"]["memory"], get_target("h100-sxm"), f["report"], f["assignment"], f["module"],
                     f["live"], hbm_bytes=200_000_000, vocab_size=1024, offloaded_names=("k_proj", "q_proj"))
    step = m.next_steps[0]
    assert step.action is Action.OFFLOAD_SAVED and step.offloaded == ("k_proj", "q_proj")
    words = step_words(step)
    assert words["via"].endswith("offloaded today: k_proj, q_proj") and "--policy offload" not in words["via"]
    assert words["because"] == "saved activations"


def test_over_scheduler_limit_but_fits_suggests_slop() -> None:
    f = _files("llama_offload_big_host")
    # 250 MB of HBM: fits (224,831,980), but (200,000,000 - 121,412,396) x 95% = 74,658,223 < 103,419,584.
    m = memory_facts(f["meta"]["memory"], get_target("h100-sxm"), hbm_bytes=250_000_000)
    assert m.fits and m.pressure.over_scheduler_limit
    assert m.next_steps[0].action is Action.RAISE_SLOP and m.next_steps[0].because is Limit.SCHEDULER
    assert "xla_gpu_memory_limit_slop_factor" in step_words(m.next_steps[0])["via"]
    assert m.top_buffers == () and m.live_at_peak is None


def test_peak_not_from_xla_is_not_read() -> None:
    mem = dict(_files("mlp_offload")["meta"]["memory"], peak_memory_from_xla=0)
    m = memory_facts(mem, get_target("h100-sxm"))
    assert m.xla_peak_bytes == 0 and not m.xla_peak_counts_host and xla_peak_words(m) == ""


def test_bytes_by_role_sums_sizes() -> None:
    m = _facts("llama_offload_big_host")
    roles = bytes_by_role(m.top_buffers)
    assert sum(roles.values()) == sum(b.size_bytes for b in m.top_buffers)
    assert list(roles.values()) == sorted(roles.values(), reverse=True)
    assert replace(m.top_buffers[0], size_bytes=1).size_bytes == 1  # frozen, copyable


def test_host_bytes_checked_against_host_memory_per_gpu() -> None:
    # GB200: one Grace's 480 GB for two GPUs -> 240 GB per GPU; DeepSeek-V3 at batch 8 offloads
    # 238.64 GiB per device (docs/memory.md), which does NOT fit in 240 GB (223.5 GiB).
    from hloscope.analysis.memory import memory_facts
    from hloscope.targets import get_target

    gb200 = get_target("gb200")
    assert gb200.host_memory_per_gpu == 240 * 10**9
    figures = {"argument_size_in_bytes": 10, "temp_size_in_bytes": 10, "output_size_in_bytes": 0,
               "alias_size_in_bytes": 0, "host_temp_size_in_bytes": int(238.64 * 2**30)}
    m = memory_facts(figures, gb200)
    assert m.host_limit_bytes == 240 * 10**9 and m.host_fits is False
    m = memory_facts(dict(figures, host_temp_size_in_bytes=100 * 2**30), gb200)
    assert m.host_fits is True


DERIVED = ("device_allocation_bytes", "host_total_bytes", "peak_memory_from_xla", "report_device_total_bytes",
           "report_host_total_bytes")


@pytest.mark.parametrize("name", ["mlp_offload", "llama_offload_big_host"])
def test_compile_figures_derive_the_documented_figures_from_raw_ones(name: str) -> None:
    # The compile layer records XLA's raw figures; every derived figure of the manifest
    # (docs/compile.md) is computed by analysis.memory.compile_figures, and equals what the
    # fixture's compile recorded.
    from hloscope.analysis.memory import compile_figures
    from hloscope.hlo.xla_dumps import XlaDumpTexts

    recorded = _files(name)["meta"]["memory"]
    raw = {k: v for k, v in recorded.items() if k not in DERIVED}
    assert compile_figures(raw, XlaDumpTexts(_files(name)["report"])) == recorded
    # Without XLA's memory-usage report there are no report totals; the rest is the same.
    no_report = compile_figures(raw)
    assert "report_device_total_bytes" not in no_report
    assert no_report["host_total_bytes"] == recorded["host_total_bytes"]
    # XLA gave no peak: the peak is the device allocation, and says so.
    no_peak = compile_figures(dict(raw, peak_memory_in_bytes=0))
    assert no_peak["peak_memory_from_xla"] == 0
    assert no_peak["peak_memory_in_bytes"] == no_peak["device_allocation_bytes"] == recorded["device_allocation_bytes"]



# Lines of jax 0.12.0.1's dump of the big-host-heap llama compile (tests/compile/test_memory_compile.py,
# BIG_HOST), as XLA wrote them but for the "from instruction:" lines, cut short: the head of its
# *-live-range.txt peak list and the line of the value XLA names by the op the sugared fusion-start.7
# wraps; two blocks of its *-buffer-assignment-values.txt, that value's and loop_add_fusion.5's (not
# live at the peak).
_LIVE_012 = """\
HloLiveRange (max 759):
  Live ranges at 235 (peak):
    wrapped_dynamic-update-slice{}: 134217728 bytes (cumulative: 134217728 bytes)
    loop_dynamic_update_slice_fusion.10{}: 8388608 bytes (cumulative: 293601280 bytes)
"""
_VALUES_012 = """\
<1792 loop_dynamic_update_slice_fusion.10 @0>
 positions:
  loop_dynamic_update_slice_fusion.10
  tuple.69 {5}
  fusion-start.7 {1}
  fusion-done.7
 uses:
  fusion-done.7, operand 0 {1}
  tuple.69, operand 5
 from instruction: %loop_dynamic_update_slice_fusion.10 = bf16[32,2,256,256]{3,2,1,0} fusion(%param_0.1256, ...
<1794 loop_add_fusion.5 @0>
 positions:
  loop_add_fusion.5
  tuple.69 {0}
 uses:
  tuple.69, operand 0
 from instruction: %loop_add_fusion.5 = s32[] fusion(%copy.86), kind=kLoop, calls=%fused_add.5, ...
"""


def test_value_positions_kept_for_the_values_live_at_peak() -> None:
    from hloscope.compile.step.memory_dumps import positions_at_peak
    from hloscope.hlo.xla_dumps import parse_value_positions

    kept = positions_at_peak(_VALUES_012, _LIVE_012)
    # loop_add_fusion.5 is not live at the peak; uses and the instruction text are dropped.
    assert kept == "\n".join(_VALUES_012.splitlines()[:6]) + "\n"
    assert parse_value_positions(kept) == {
        "loop_dynamic_update_slice_fusion.10{}": ("tuple.69{5}", "fusion-start.7{1}", "fusion-done.7{}")}
    assert parse_value_positions(_VALUES_012)["loop_add_fusion.5{}"] == ("tuple.69{0}",)
    assert parse_value_positions("") == {} and positions_at_peak(_VALUES_012, "") == ""
