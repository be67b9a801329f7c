"""Convolutions priced from their ``dim_labels`` and ``window``, per-platform cost profiles, and the flag
on estimates that cannot be.

TPU XLA writes every matmul as a ``convolution``. The real TPU v5e module
(fixtures/tpu_v5e/offload_scan_8x128MiB.hlo.txt: 8 scanned MLP layers, tokens 8192 x d 2048 x
ff 8192, bf16) has seven of them, each inside a matmul fusion; every expected figure below is
worked out by hand from the shapes in the HLO (``2 * M * N * K``; bf16 = 2 bytes), and the
measured times are those of the run's profile (``profile/step.trace.json.gz``, "XLA Ops" line
of ``/device:TPU:0``, 24 executions of each fusion over the 3 profiled steps).
"""

from __future__ import annotations

import dataclasses

import pytest

from hloscope.analysis.cost.convolution import convolution_flops, read_convolution
from hloscope.analysis.cost.plausible import FRACTION, STEP_LIMIT_US
from hloscope.analysis.cost.profile import GpuCostProfile, TpuCostProfile, cost_profile
from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.inputs import StepInputs
from hloscope.analysis.report import analyze_step
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.hlo.model import Module
from hloscope.hlo.parser import parse_hlo
from hloscope.render import render_to_string
from hloscope.render.json_report import report_to_dict
from hloscope.targets import Target, get_target
from tests.conftest import fixture_text
from tests.xla_corpus import CORPUS

TPU_MODULE = "tpu_v5e/offload_scan_8x128MiB.hlo.txt"
FORWARD, BACKWARD = "wide.region_0.6.sunk", "wide.region_3.12.sunk"
LAYER_MATMUL = 2 * 8192 * 2048 * 8192  # 274,877,906,944 FLOPs: one [8192 x 2048] x [2048 x 8192] product
MiB = 1 << 20


def v5e_figures() -> Target:
    """TPU v5e's published figures (197e12 bf16 FLOP/s, 819e9 B/s HBM) on a target the cost model
    takes, for the TPU profile to read; its GPU fields are the H100's and are not read by it."""
    return dataclasses.replace(get_target("h100-sxm"), name="v5e-figures", peak_bf16_flops=197e12,
                               hbm_bandwidth=819e9)


@pytest.fixture(scope="module")
def tpu_module() -> Module:
    return parse_hlo(fixture_text(TPU_MODULE))


def tpu_cost(module: Module) -> CostModel:
    target = v5e_figures()
    return CostModel(ModuleIndex(module), target, profile=TpuCostProfile(target, ici_bandwidth=100e9))


# Each convolution: (computation, name, dim_labels, lhs, rhs, result), read from the module.
TPU_CONVOLUTIONS = {
    "forward x @ w1 (bf_io)": ("fused_computation.clone.1", "convolution.33", "bf_io->bf"),
    "forward h @ w2 (bf_io)": ("fused_computation.4.clone.1", "convolution.34", "bf_io->bf"),
    "backward dx from w2 (fb_io)": ("fused_computation.16.clone.1", "convolution.35", "fb_io->bf"),
    "backward rematerialized x @ w1 (bf_io)": ("fused_computation.13.clone.1", "convolution.36", "bf_io->bf"),
    # lhs [8192,2048] bf, rhs [8192,2048] oi: o = 8192, i = 2048; K = 2048, not the 8192 of the
    # kernel's last-but-one dimension (the old formula took every dimension but the last: 4x).
    "backward dh = dy @ w2^T (bf_oi)": ("fused_computation.10.clone.1", "convolution.37", "bf_oi->bf"),
    "backward weight gradient (fb_io)": ("fused_computation.17.clone.1", "convolution.38", "fb_io->bf"),
    # lhs [8192,8192] bf, rhs [2048,8192] oi: o = 2048, i = K = 8192 (the old formula: 2048, 4x under).
    "backward dx = dh @ w1^T (bf_oi)": ("fused_computation.21.clone.1", "convolution.39", "bf_oi->bf"),
}


@pytest.mark.parametrize("case", TPU_CONVOLUTIONS.values(), ids=TPU_CONVOLUTIONS.keys())
def test_each_tpu_convolution_is_the_layers_matmul(tpu_module: Module, case: tuple[str, str, str]) -> None:
    # Given a convolution of the TPU module, each [8192 x 2048] x [2048 x 8192] in some arrangement,
    computation, name, labels = case
    ins = tpu_module.computations[computation].by_name[name]
    assert f"dim_labels={labels}" in ins.attr_text
    conv = read_convolution(ins.attr_text)
    assert conv is not None and conv.is_dot
    # Then its FLOPs are 2 * 8192 * 2048 * 8192, at v5e's 197e12 bf16 peak 1,395.3 us.
    flops, dtype = tpu_cost(tpu_module)._dot_flops(ins)
    assert (flops, dtype) == (LAYER_MATMUL, "bf16")
    us = tpu_cost(tpu_module).op_cost(ins).us
    assert us == pytest.approx(LAYER_MATMUL / 197e12 * 1e6) and us == pytest.approx(1395.3, abs=0.05)


# The layer's seven matmul fusions and their measured time on the chip (µs, mean of 24 executions;
# each ran within 1.2 us of its mean).
MEASURED_US = {
    (FORWARD, "convolution_tanh_fusion.4"): 1420.1,
    (FORWARD, "fusion.68"): 1466.1,
    (BACKWARD, "convolution_tanh_fusion.5"): 1539.1,
    (BACKWARD, "multiply_add_fusion.2"): 1436.5,
    (BACKWARD, "bitcast_dynamic-update-slice_fusion.5"): 1505.0,
    (BACKWARD, "fusion.80"): 1440.6,
    (BACKWARD, "fusion.79"): 1466.6,
}


@pytest.mark.parametrize("where", MEASURED_US, ids=[n for _, n in MEASURED_US])
def test_tpu_matmul_fusions_come_out_just_under_the_measured_time(tpu_module: Module,
                                                                  where: tuple[str, str]) -> None:
    ins = tpu_module.computations[where[0]].by_name[where[1]]
    cost = tpu_cost(tpu_module).op_cost(ins)
    # One matmul each, at the bf16 peak: the nested bitcast fusions carry no math and no f32 type.
    assert cost.flops == LAYER_MATMUL
    assert cost.us == pytest.approx(1395.3, abs=0.05)
    # The roofline is a lower bound: 0.91 (convolution_tanh_fusion.5) to 0.98 (convolution_tanh_fusion.4)
    # of the measured time.
    assert 0.90 < cost.us / MEASURED_US[where] < 1.0
    assert not cost.implausible


def test_tpu_fusion_bytes_leave_vmem_out_and_read_through_nested_bitcast_fusions(tpu_module: Module) -> None:
    tpu = tpu_cost(tpu_module)
    target = get_target("h100-sxm")
    gpu = CostModel(ModuleIndex(tpu_module), target)
    fwd = tpu_module.computations[FORWARD].by_name
    # convolution_tanh_fusion.4 reads x (bf16[8192,2048], S(1): VMEM, on the chip), one layer of w1
    # (a [2048,8192] dynamic-slice of the [8,2048,8192] stack: 32 MiB) and the s32 index (4 B), and
    # writes h (bf16[8192,8192]: 128 MiB) to HBM.
    assert tpu.moved_bytes(fwd["convolution_tanh_fusion.4"]).device == 32 * MiB + 4 + 128 * MiB
    # fusion.68 reads x (S(1)), h (128 MiB, through the nested bitcast fusion.67), one layer of w2
    # (32 MiB) and the index, and writes x + h @ w2 back to S(1): nothing written to HBM.
    got = tpu.moved_bytes(fwd["fusion.68"])
    assert (got.device_read, got.device_write) == (128 * MiB + 32 * MiB + 4, 0)
    # A GPU profile has no on-chip memory space: S(1) bytes are HBM bytes there.
    got = gpu.moved_bytes(fwd["fusion.68"])
    assert (got.device_read, got.device_write) == (32 * MiB + 128 * MiB + 32 * MiB + 4, 32 * MiB)


def test_no_op_of_the_tpu_module_is_implausible_on_either_profile(tpu_module: Module) -> None:
    for cost in (tpu_cost(tpu_module), CostModel(ModuleIndex(tpu_module), get_target("h100-sxm"))):
        for c in tpu_module.computations.values():
            for ins in c.instructions:
                cost.op_cost(ins)
        assert cost.implausible() == ()


def _corpus_conv(path: str, name: str) -> float | None:
    m = parse_hlo((CORPUS / path).read_text())
    ins = next(i for c in m.computations.values() for i in c.instructions if i.name == name)
    table = m.computations[ins.computation].by_name
    conv = read_convolution(ins.attr_text)
    assert conv is not None
    return convolution_flops(conv, table[ins.operands[0]].shape.dims, table[ins.operands[1]].shape.dims,
                             ins.shape.dims)


# XLA's own tests' convolutions (fixtures/xla-tests), FLOPs worked out by hand; XLA's
# HloCostAnalysis gives the same figures for these modules (jaxlib 0.10.2).
CORPUS_CONVOLUTIONS = {
    # f32[4000,4000] x f32[4000,4000], bf_io->bf: a plain matmul, 2 * 4000^3.
    "matmul written as a convolution": ("spmd_partitioner/DotInputsAreIdentical.hlo", "convolution",
                                        2 * 4000**3),
    # [128,224,224,3] b01f * [7,7,3,64] 01io, stride 2, pad 3: out [128,112,112,64]. Per spatial
    # dimension, kernel positions 0..6 reach 110, 111, 111, 112, 112, 111, 111 of the 112 outputs
    # (the others read padding): 778 pairs; 2 * 128 * 64 * 3 * 778 * 778.
    "7x7 stride-2 convolution with padding": ("spmd_partitioner/ConvolutionLhsTiledRhsReplicated.hlo", "conv",
                                              2 * 128 * 64 * 3 * 778 * 778),
    # depthwise: feature_group_count=1024, [16,801,1,1024] * [5,1,1,1024] (i = 1), pad 2_2: the 5 taps
    # reach 799 + 800 + 801 + 800 + 799 = 3,999 of the 801 * 5 pairs; 2 * 16 * 1024 * 1 * 3999.
    "depthwise (feature groups)": ("spmd_partitioner/PartitionConvWithFeatureGroupCountLHSAlignWithRHS.hlo",
                                   "conv", 2 * 16 * 1024 * 3999),
    # its weight gradient: batch_group_count=1024, f01b [16,801,1,1024] * i01o [16,801,1,1024] ->
    # 01bf [5,1,1,1024], window 801 pad 2_2: again 3,999 valid pairs, i = 16; 2 * 1024 * 16 * 3999.
    "weight gradient (batch groups)": ("spmd_partitioner/PartitionConvWithBathGroupCount.hlo", "conv",
                                       2 * 1024 * 16 * 3999),
    # transposed convolution: [128,7,7,512] * [3,3,512,512] (01oi), lhs_dilate 2, pad 1_2 -> [128,14,14,512]:
    # each of the 7 inputs reaches 3 outputs but the first loses one: 20 pairs per spatial dimension.
    "lhs-dilated (transposed) convolution": ("hlo_parser/ConvolutionBackward.hlo", "convolution-base-dilated",
                                             2 * 128 * 512 * 512 * 20 * 20),
    # TPU's windowed einsum: 0b34f12 [128,1024,4,4,1152,1,1] * 34i12o0 [4,4,1152,4,176,256,1] with
    # windows 1x4x176x4x4, pads 0,3,175,0,0: the padded spatial dimensions 1 and 2 have one valid
    # position per output, so it is the matmul M = 128*1024, N = 4*176*256, K = 4*4*1152
    # (counting every window position would count 704x that).
    "windowed einsum": ("spmd_partitioner/WindowedEinsumPreferNumberIterations.hlo", "convolution.3",
                        2 * (128 * 1024) * (4 * 176 * 256) * (4 * 4 * 1152)),
}


@pytest.mark.parametrize("case", CORPUS_CONVOLUTIONS.values(), ids=CORPUS_CONVOLUTIONS.keys())
def test_corpus_convolution_flops(case: tuple[str, str, int]) -> None:
    path, name, expected = case
    assert _corpus_conv(path, name) == expected


def test_the_window_is_read_per_spatial_dimension() -> None:
    conv = read_convolution("window={size=1x4x176x4x4 pad=0_0x3_3x175_175x0_0x0_0 rhs_reversal=0x1x1x0x0}, "
                            "dim_labels=0b34f12_34i12o0->0b12f34")
    assert conv is not None and not conv.is_dot
    # (size, stride, pad_low, pad_high, lhs_dilate, rhs_dilate) of spatial dimensions 0..4
    assert conv.window == ((1, 1, 0, 0, 1, 1), (4, 1, 3, 3, 1, 1), (176, 1, 175, 175, 1, 1), (4, 1, 0, 0, 1, 1),
                           (4, 1, 0, 0, 1, 1))
    assert read_convolution("window={size=3}") is None  # no dim_labels: not read


def test_the_target_picks_the_gpu_profile_and_the_tpu_profile_prices_the_mxu() -> None:
    h100 = get_target("h100-sxm")
    assert cost_profile(h100) == GpuCostProfile(h100)
    assert cost_profile(h100).matmul_efficiency(1, 256, 512) == pytest.approx(8 / 132)  # 8 tiles on 132 SMs
    tpu = TpuCostProfile(v5e_figures(), ici_bandwidth=100e9, ici_hop_us=1.0)
    assert tpu.matmul_efficiency(1, 256, 512) == 1.0 and tpu.launch_us == 0.0
    assert (tpu.peak_flops("bf16"), tpu.peak_flops("f32")) == (197e12, h100.peak_fp32_flops)
    assert tpu.on_chip(1) and tpu.on_chip(2) and not tpu.on_chip(5) and not tpu.on_chip(0)
    # An all-gather of 8 MiB over 4 chips: 3 ring steps of 1 us, 3/4 of 8 MiB at 100 GB/s.
    assert tpu.collective_us("all-gather", 8 * MiB, (0, 1, 2, 3), 4) == pytest.approx(3.0 + 0.75 * 8 * MiB / 100e9
                                                                                       * 1e6)


# A convolution whose kernel is [i=4096, o=4096, spatial=1] printed without dim_labels: the
# fallback takes the kernel's last dimension as its output features, so it counts 2 * |out| *
# 4096 * 4096 FLOPs, 4096x what a [4096 x 4096] x [4096 x 4096] product can do
# (2 * sqrt(|lhs| * |rhs| * |out|) = 2 * 4096^3): the miscount MaxText's 405B step met.
MISCOUNTED = """HloModule miscounted, is_scheduled=true

ENTRY %main (a: bf16[1,4096,4096], w: bf16[4096,4096,1]) -> bf16[1,4096,4096] {
  %a = bf16[1,4096,4096] parameter(0)
  %w = bf16[4096,4096,1] parameter(1)
  ROOT %c = bf16[1,4096,4096] convolution(%a, %w), window={size=1}
}
"""

# A 4096^3 f32 matmul in a loop XLA counts 1e9 times: 2.05 ms per trip at H100's 67e12 f32 peak, 24.5 days.
DAYS = """HloModule days, is_scheduled=true

%body (p: (s32[], f32[4096,4096])) -> (s32[], f32[4096,4096]) {
  %p = (s32[], f32[4096,4096]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %x = f32[4096,4096] get-tuple-element(%p), index=1
  %d = f32[4096,4096] dot(%x, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[4096,4096]) tuple(%j, %d)
}

%cond (p: (s32[], f32[4096,4096])) -> pred[] {
  %p = (s32[], f32[4096,4096]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(1000000000)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main (a: f32[4096,4096]) -> (s32[], f32[4096,4096]) {
  %a = f32[4096,4096] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4096,4096]) tuple(%zero, %a)
  ROOT %w = (s32[], f32[4096,4096]) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"1000000000"}}
}
"""


def test_an_op_priced_beyond_its_shapes_is_flagged_and_said_in_one_line() -> None:
    m = parse_hlo(MISCOUNTED)
    h100 = get_target("h100-sxm")
    cost = CostModel(ModuleIndex(m), h100)
    c = cost.op_cost(m.entry.by_name["c"])
    assert c.flops == 2 * 4096 * 4096 * (4096 * 4096) and c.implausible
    (flagged,) = cost.implausible()
    assert flagged.flops_ceiling == 2 * 4096**3
    # the ceiling: 2 * 4096^3 FLOPs at 1 % of the bf16 peak (the op reads 2 x 32 MiB, writes 32 MiB:
    # less time at 1 % of HBM bandwidth), plus the 1 us launch
    assert flagged.ceiling_us == pytest.approx(2 * 4096**3 / (FRACTION * h100.peak_bf16_flops) * 1e6 + 1.0)
    assert flagged.us > 4000 * (flagged.ceiling_us - 1.0) / 100  # 4096x its FLOPs over 1 % of peak
    report = analyze_step(StepInputs(m, "miscounted"), h100)
    assert report.summary.implausible is not None and report.summary.implausible.step_us is None
    text = render_to_string("table", report)
    lines = [line for line in text.splitlines() if "IMPLAUSIBLE" in line]
    assert len(lines) == 1 and "c in main at ~569.2 ms" in lines[0] and "~13.9 ms" in lines[0]
    summary = report_to_dict(report)["summary"]
    assert [x["instruction"] for x in summary["implausible"]["ops"]] == ["c"]
    assert summary["implausible"]["line"] == lines[0]


def test_a_step_of_days_is_flagged_and_a_plain_step_is_not() -> None:
    report = analyze_step(StepInputs(parse_hlo(DAYS), "days"), get_target("h100-sxm"))
    found = report.summary.implausible
    assert found is not None and found.ops == ()  # every op is what its shapes allow
    assert report.summary.step is not None and found.step_us == report.summary.step.step_us >= STEP_LIMIT_US
    text = render_to_string("table", report)
    lines = [line for line in text.splitlines() if "IMPLAUSIBLE" in line]
    assert len(lines) == 1 and "24.5 days" in lines[0]
    # never printed as a figure: the step line says it is not shown
    assert "simulated step: not shown" in text and "simulated step: 24" not in text
    assert report_to_dict(report)["summary"]["implausible"]["step_us"] == round(found.step_us, 3)
    # The same loop run 1,000 times: 2 s, nothing said, no key in the JSON.
    plain = analyze_step(StepInputs(parse_hlo(DAYS.replace("1000000000", "1000")), "days"), get_target("h100-sxm"))
    assert plain.summary.implausible is None
    assert "IMPLAUSIBLE" not in render_to_string("table", plain)
    assert "implausible" not in report_to_dict(plain)["summary"]
