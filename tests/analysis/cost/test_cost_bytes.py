"""Bytes a fusion really moves: one hand-written fusion per rule, then a real fixture.

Every expected figure below is worked out by hand from the shapes in the HLO
(bf16 = 2 bytes, f32/s32 = 4 bytes), not copied from the tool's output.
"""

from __future__ import annotations

import pytest

from hloscope.analysis.cost.roofline import CostModel, MovedBytes
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.hlo.parser import parse_hlo
from hloscope.targets import get_target
from tests.conftest import fixture_text


def _moved(body: str, call: str, params: str) -> MovedBytes:
    """MovedBytes of the fusion ``%f`` in an entry with ``params``, whose body is ``body``."""
    text = f"""HloModule m, is_scheduled=true

%add (x: f32[], y: f32[]) -> f32[] {{
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}}

%fused (b: f32[]) -> f32[] {{
{body}
}}

ENTRY %main () -> f32[] {{
{params}
  ROOT %f = {call}, kind=kLoop, calls=%fused
}}
"""
    m = parse_hlo(text)
    return CostModel(ModuleIndex(m), get_target("h100-sxm")).moved_bytes(m.entry.by_name["f"])


STACK = "  %s = bf16[126,64,1024]{2,1,0} parameter(0)\n  %i = s32[] parameter(1)"

CASES = {
    # A [126,64,1024] bf16 stack (16,515,072 B) read through a dynamic-slice of one layer:
    # the layer (131,072 B) plus the s32 index (4 B) is read, the layer is written.
    "parameter read only through dynamic-slice costs the slice": (
        """  %p0 = bf16[126,64,1024]{2,1,0} parameter(0)
  %p1 = s32[] parameter(1)
  %z = s32[] constant(0)
  %ds = bf16[1,64,1024]{2,1,0} dynamic-slice(%p0, %p1, %z, %z), dynamic_slice_sizes={1,64,1024}
  ROOT %c = bf16[1,64,1024]{2,1,0} copy(%ds)""",
        "bf16[1,64,1024]{2,1,0} fusion(%s, %i)", STACK, MovedBytes(131_076, 131_072)),
    "static slice costs the slice": (
        """  %p0 = bf16[126,64,1024]{2,1,0} parameter(0)
  %p1 = s32[] parameter(1)
  ROOT %sl = bf16[2,64,1024]{2,1,0} slice(%p0), slice={[0:2], [0:64], [0:1024]}""",
        "bf16[2,64,1024]{2,1,0} fusion(%s, %i)", STACK, MovedBytes(262_144, 262_144)),
    # gather of 8 rows of 1024 f32 out of a [4096,1024] table: 32,768 B of rows, 32 B of indices.
    "gather costs the gathered rows": (
        """  %p0 = f32[4096,1024]{1,0} parameter(0)
  %p1 = s32[8,1]{1,0} parameter(1)
  ROOT %g = f32[8,1024]{1,0} gather(%p0, %p1), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,1024}""",
        "f32[8,1024]{1,0} fusion(%t, %ix)",
        "  %t = f32[4096,1024]{1,0} parameter(0)\n  %ix = s32[8,1]{1,0} parameter(1)",
        MovedBytes(32_800, 32_768)),
    # In place: the stack is not read; the f32 update (262,144 B) and index (4 B) are read,
    # one bf16 layer (131,072 B) is written.
    "in-place dynamic-update-slice costs the update": (
        """  %p0 = bf16[126,64,1024]{2,1,0} parameter(0)
  %p1 = s32[] parameter(1)
  %p2 = f32[64,1024]{1,0} parameter(2)
  %cv = bf16[64,1024]{1,0} convert(%p2)
  %u = bf16[1,64,1024]{2,1,0} bitcast(%cv)
  %z = s32[] constant(0)
  ROOT %d = bf16[126,64,1024]{2,1,0} dynamic-update-slice(%p0, %u, %p1, %z, %z)""",
        "bf16[126,64,1024]{2,1,0} fusion(%s, %i, %g)",
        STACK + "\n  %g = f32[64,1024]{1,0} parameter(2)", MovedBytes(262_148, 131_072)),
    # A fresh zero buffer updated: nothing aliases, the whole [126,64,1024] result is written.
    "dynamic-update-slice into a fresh buffer writes it whole": (
        """  %p0 = bf16[1,64,1024]{2,1,0} parameter(0)
  %p1 = s32[] parameter(1)
  %zero = bf16[] constant(0)
  %b = bf16[126,64,1024]{2,1,0} broadcast(%zero), dimensions={}
  %z = s32[] constant(0)
  ROOT %d = bf16[126,64,1024]{2,1,0} dynamic-update-slice(%b, %p0, %p1, %z, %z)""",
        "bf16[126,64,1024]{2,1,0} fusion(%l, %i)",
        "  %l = bf16[1,64,1024]{2,1,0} parameter(0)\n  %i = s32[] parameter(1)",
        MovedBytes(131_076, 16_515_072)),
    # A broadcast scalar and an iota read 4 B and nothing; the 4,096 f32 result is 16,384 B.
    "broadcast of a scalar and iota read (next to) nothing": (
        """  %p0 = f32[] parameter(0)
  %b = f32[4096]{0} broadcast(%p0), dimensions={}
  %io = f32[4096]{0} iota(), iota_dimension=0
  ROOT %a = f32[4096]{0} add(%b, %io)""",
        "f32[4096]{0} fusion(%x)", "  %x = f32[] parameter(0)", MovedBytes(4, 16_384)),
    # Through a bitcast to [64,126,1024] and a reshape: still one [64,1,1024] slice, 131,072 B.
    "bitcast and reshape of a parameter follow to the slice": (
        """  %p0 = bf16[126,64,1024]{2,1,0} parameter(0)
  %p1 = s32[] parameter(1)
  %bc = bf16[64,126,1024]{2,1,0} bitcast(%p0)
  %rs = bf16[64,126,1024]{2,1,0} reshape(%bc)
  %z = s32[] constant(0)
  ROOT %ds = bf16[64,1,1024]{2,1,0} dynamic-slice(%rs, %z, %p1, %z), dynamic_slice_sizes={64,1,1024}""",
        "bf16[64,1,1024]{2,1,0} fusion(%s, %i)", STACK, MovedBytes(131_076, 131_072)),
    # A slice and a full reduction of the same stack: the stack is read once, whole.
    "a parameter also read whole costs its whole size, once": (
        """  %p0 = f32[16,1024]{1,0} parameter(0)
  %sl = f32[1,1024]{1,0} slice(%p0), slice={[0:1], [0:1024]}
  %zero = f32[] constant(0)
  %r = f32[1024]{0} reduce(%p0, %zero), dimensions={0}, to_apply=%add
  %b = f32[1,1024]{1,0} bitcast(%r)
  ROOT %a = f32[1,1024]{1,0} add(%sl, %b)""",
        "f32[1,1024]{1,0} fusion(%x)", "  %x = f32[16,1024]{1,0} parameter(0)", MovedBytes(65_536, 4_096)),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_fusion_bytes_rule(case: str) -> None:
    body, call, params, expected = CASES[case]
    assert _moved(body, call, params) == expected


def test_nested_fusion_costs_what_its_body_reads() -> None:
    # The outer fusion passes its stack to an inner fusion that slices one [1,64,1024] layer.
    text = """HloModule m, is_scheduled=true

%inner (a: bf16[126,64,1024], b: s32[]) -> bf16[1,64,1024] {
  %a = bf16[126,64,1024]{2,1,0} parameter(0)
  %b = s32[] parameter(1)
  %z = s32[] constant(0)
  ROOT %ds = bf16[1,64,1024]{2,1,0} dynamic-slice(%a, %b, %z, %z), dynamic_slice_sizes={1,64,1024}
}

%outer (p: bf16[126,64,1024], q: s32[]) -> bf16[1,64,1024] {
  %p = bf16[126,64,1024]{2,1,0} parameter(0)
  %q = s32[] parameter(1)
  %n = bf16[1,64,1024]{2,1,0} fusion(%p, %q), kind=kLoop, calls=%inner
  ROOT %neg = bf16[1,64,1024]{2,1,0} negate(%n)
}

ENTRY %main (s: bf16[126,64,1024], i: s32[]) -> bf16[1,64,1024] {
  %s = bf16[126,64,1024]{2,1,0} parameter(0)
  %i = s32[] parameter(1)
  ROOT %f = bf16[1,64,1024]{2,1,0} fusion(%s, %i), kind=kLoop, calls=%outer
}
"""
    m = parse_hlo(text)
    assert CostModel(ModuleIndex(m), get_target("h100-sxm")).moved_bytes(m.entry.by_name["f"]) == MovedBytes(131_076, 131_072)


def test_host_side_of_a_transfer_is_the_slice() -> None:
    # mlp_offload.hlo.txt, region_3.4_spmd: dynamic-slice-start.1 reads one bf16[1,8,1024] row
    # block (16,384 B) out of the bf16[4,8,1024]{...:S(5)} host stack (65,536 B): the host side is
    # the slice, the device side writes it, and only the three s32 indices (12 B) come from HBM.
    m = parse_hlo(fixture_text("mlp_offload.hlo.txt"))
    ins = m.computations["region_3.4_spmd"].by_name["dynamic-slice-start.1"]
    assert CostModel(ModuleIndex(m), get_target("h100-sxm")).moved_bytes(ins) == MovedBytes(12, 16_384, 16_384, 0)


def test_fixture_layer_slice_fusions_are_charged_their_slices() -> None:
    # mlp_offload.hlo.txt, region_3.4_spmd (the backward loop, 4 trips). The window of the reload
    # dynamic-slice-start.1 (position 5) .. dynamic-slice-done.1 (position 12) holds three compute
    # ops, all copies of one layer out of a 4-layer stack, no GEMM:
    #   loop_dynamic_slice_fusion.1: bf16[1,8,512] out of bf16[4,8,512]   ->  8,192 B read + 4 B index + 8,192 B written
    #   loop_dynamic_slice_fusion.2: bf16[1,64,1024] out of bf16[4,64,1024] -> 131,072 + 4 + 131,072
    #   loop_dynamic_slice_fusion:   bf16[64,1,1024] out of a bitcast of bf16[4,1024,64] -> 131,072 + 4 + 131,072
    m = parse_hlo(fixture_text("mlp_offload.hlo.txt"))
    cost = CostModel(ModuleIndex(m), get_target("h100-sxm"))
    body = m.computations["region_3.4_spmd"].by_name
    expected = {"loop_dynamic_slice_fusion.1": 16_388, "loop_dynamic_slice_fusion.2": 262_148,
                "loop_dynamic_slice_fusion": 262_148}
    assert {n: cost.hbm_bytes(body[n]) for n in expected} == expected
    # 540,684 B at 3.35 TB/s is 0.161 us of window, against 16,384 B over the link: 0.256 us at the
    # 64 GB/s peak, 0.298 us at the 55 GB/s achieved. Charged whole stacks (40,964 + 655,364 +
    # 655,364 = 1,351,692 B, 0.403 us) the window looked long enough to hide the reload.
    # Each of the three kernels also costs its 1 us launch, and the reload its 2 us DMA setup
    # (docs/cost-model.md): the bandwidth parts are compared without them.
    window_us = sum(cost.op_cost(body[n]).us for n in expected)
    assert window_us == pytest.approx(540_684 / 3.35e12 * 1e6 + 3 * 1.0)
    assert window_us - 3 * 1.0 < (cost.transfer_us(16_384, "to_device") - 2.0) * 0.95
    assert CostModel(ModuleIndex(m), get_target("h100-sxm"), link_mode="peak").transfer_us(16_384, "to_device") == \
        pytest.approx(2.0 + 0.256)


def test_unknown_link_mode_is_refused() -> None:
    m = parse_hlo(fixture_text("mlp_offload.hlo.txt"))
    with pytest.raises(ValueError, match="link mode"):
        CostModel(ModuleIndex(m), get_target("h100-sxm"), link_mode="fast")
