"""Launch and DMA latency, FP8/FP4 peaks, GEMM tiling efficiency and ring collectives,
on hand-written HLO. Every expected figure is worked out by hand from the shapes and the
target's figures (docs/targets.md), not copied from the tool's output."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hloscope.analysis.cost.collectives import collective_time_us, first_replica_group, nvlink_domain_size
from hloscope.analysis.cost.kernels import gemm_efficiency
from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.report import analyze_module
from hloscope.analysis.simulate.contention import memory_bound_share
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.hlo.model import Instruction
from hloscope.hlo.parser import parse_hlo
from hloscope.render.verdict_words import explain
from hloscope.targets import get_target

H100 = get_target("h100-sxm")
GB200 = get_target("gb200")


def _model(entry: str, target: str = "h100-sxm", params: str = "", header: str = "") -> tuple[CostModel, dict[str, Instruction]]:
    m = parse_hlo(f"HloModule m{header}\n\nENTRY %e ({params}) -> f32[] {{\n{entry}\n}}\n")
    return CostModel(ModuleIndex(m), get_target(target)), m.entry.by_name


def _dot(lt: str, rt: str, n: int, out: str = "bf16") -> str:
    return (f"  %a = {lt}[{n},{n}] parameter(0)\n  %b = {rt}[{n},{n}] parameter(1)\n"
            f"  ROOT %d = {out}[{n},{n}] dot(%a, %b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}")


def test_a_tiny_kernel_costs_its_launch() -> None:
    cost, ins = _model("  %x = f32[4] parameter(0)\n  ROOT %y = f32[4] add(%x, %x)", params="x: f32[4]")
    # an unfused add reads both operands (16 B each) and writes 16 B: 48 B at 3.35 TB/s, plus 1 us launch
    assert cost.op_cost(ins["y"]).us == pytest.approx(48 / 3.35e12 * 1e6 + 1.0)
    assert cost.op_cost(ins["x"]).us == 0.0  # a parameter is no kernel


def test_a_twelve_byte_transfer_is_not_free() -> None:
    cost, _ = _model("  ROOT %x = f32[] parameter(0)", params="x: f32[]")
    # 2 us DMA setup + 12 B at the achieved 55 GB/s of PCIe Gen5
    assert cost.transfer_us(12, "to_host") == pytest.approx(2.0 + 12 / 55e9 * 1e6)
    assert cost.transfer_us(12, "to_host") > 2.0


def test_fp8_dot_runs_at_the_fp8_peak() -> None:
    cost, ins = _model(_dot("f8e4m3fn", "f8e4m3fn", 4096), params="a: f8e4m3fn[4096,4096], b: f8e4m3fn[4096,4096]")
    flops = 2 * 4096**3
    # 32 x 32 = 1024 tiles of 128x128 on 132 SMs: 8 waves, 1024 / 1056 of peak
    compute = flops / (1024 / 1056) / 1979e12 * 1e6
    memory = (2 * 4096 * 4096 + 2 * 4096 * 4096) / 3.35e12 * 1e6  # two f8 inputs read, bf16 written
    assert compute > memory
    assert cost.op_cost(ins["d"]).us == pytest.approx(compute + 1.0)
    assert cost.op_cost(ins["d"]).flops == flops


def test_a_mixed_fp8_bf16_dot_runs_at_the_bf16_peak() -> None:
    cost, ins = _model(_dot("f8e5m2", "bf16", 4096), params="a: f8e5m2[4096,4096], b: bf16[4096,4096]")
    compute = 2 * 4096**3 / (1024 / 1056) / 989e12 * 1e6
    assert cost.op_cost(ins["d"]).us == pytest.approx(compute + 1.0)


def test_fp4_peaks_on_blackwell_and_not_on_hopper() -> None:
    assert GB200.peak_flops("f4e2m1fn") == 10000e12
    assert get_target("b200").peak_flops("f4e2m1fn") == 9000e12
    assert H100.peak_flops("f4e2m1fn") == H100.peak_fp8_flops  # no FP4 tensor cores: the FP8 rate
    cost, ins = _model(_dot("f4e2m1fn", "f4e2m1fn", 8192, out="f32"), target="gb200",
                       params="a: f4e2m1fn[8192,8192], b: f4e2m1fn[8192,8192]")
    # 64 x 64 = 4096 tiles on 148 SMs: 28 waves of 148 = 4144 slots
    compute = 2 * 8192**3 / (4096 / 4144) / 10000e12 * 1e6
    memory = (8192 * 8192 // 2 * 2 + 8192 * 8192 * 4) / 8e12 * 1e6
    assert cost.op_cost(ins["d"]).us == pytest.approx(max(compute, memory) + 1.0)


def test_small_gemms_do_not_reach_peak() -> None:
    assert gemm_efficiency(1, 256, 512, 132) == pytest.approx(8 / 132)  # 2 x 4 tiles, one wave
    assert gemm_efficiency(1, 129, 128, 132) == pytest.approx(2 / 132)
    assert gemm_efficiency(1, 128 * 132, 128, 132) == 1.0  # exactly one full wave
    assert gemm_efficiency(1, 128 * 133, 128, 132) == pytest.approx(133 / 264)  # a second, nearly empty wave
    assert gemm_efficiency(4, 256, 256, 132) == pytest.approx(16 / 132)


def test_replica_groups_in_every_form() -> None:
    assert first_replica_group("replica_groups={{0,1,2,3},{4,5,6,7}}, dimensions={0}", 8) == (0, 1, 2, 3)
    assert first_replica_group("replica_groups=[2,4]<=[8], dimensions={0}", 8) == (0, 1, 2, 3)
    assert first_replica_group("replica_groups=[4,2]<=[2,4]T(1,0), dimensions={0}", 8) == (0, 4)
    assert first_replica_group("replica_groups=mesh['a'=2,'b'=4] {'a'}, x=1", 8) == (0, 4)
    assert first_replica_group("replica_groups=mesh['a'=2,'b'=4] {'b'}, x=1", 8) == (0, 1, 2, 3)
    assert first_replica_group("replica_groups={}, dimensions={0}", 4) == (0, 1, 2, 3)


def test_nvlink_domains_follow_the_compile_topology() -> None:
    # docs/targets.md: h100-sxm 128 GPUs is 16x1x8, gb200 128 is 2x16x4, gb200 8 is 1x2x4
    assert nvlink_domain_size(H100, 128) == 8
    assert nvlink_domain_size(GB200, 128) == 64
    assert nvlink_domain_size(GB200, 8) == 8
    assert nvlink_domain_size(GB200, 72) == 72
    assert nvlink_domain_size(H100, 4) == 4


def test_ring_all_gather_inside_and_across_nvlink_domains() -> None:
    mib16 = 16 * 2**20
    # 8 H100s in one node: launch 5 + 7 hops x 2.5 + 7/8 of 16 MiB at 450 GB/s
    assert collective_time_us("all-gather", mib16, tuple(range(8)), H100) == pytest.approx(
        5 + 7 * 2.5 + 7 / 8 * mib16 / 450e9 * 1e6)
    # 16 H100s span two nodes: the rings cross InfiniBand, one per NIC: 8 x 50 GB/s per node
    assert collective_time_us("all-gather", mib16, tuple(range(16)), H100) == pytest.approx(
        5 + 15 * 2.5 + 15 / 16 * mib16 / (8 * 50e9) * 1e6)
    # a group of one GPU per node (ids 0, 8): one NIC each
    assert collective_time_us("all-gather", mib16, (0, 8), H100, devices=16) == pytest.approx(
        5 + 2.5 + 1 / 2 * mib16 / 50e9 * 1e6)
    # 128 GB200s: two NVL72 racks of 64 (2x16x4); the second rack's 64 GPUs are one domain.
    # All 128 cross the network: 64 NICs per rack, NCCL's 32 channels use 32 of them
    # (1.6 TB/s), more than a GPU's NVLink 900 GB/s, so the rings run at NVLink's rate
    assert collective_time_us("all-gather", mib16, tuple(range(64, 128)), GB200, devices=128) == pytest.approx(
        5 + 63 * 2.5 + 63 / 64 * mib16 / 900e9 * 1e6)
    assert collective_time_us("all-gather", mib16, tuple(range(128)), GB200, devices=128) == pytest.approx(
        5 + 127 * 2.5 + 127 / 128 * mib16 / 900e9 * 1e6)
    # a group of one GPU per tray in each rack (ids 0, 4, ..., 124): 16 per rack, 16 x 50 GB/s
    trays = tuple(range(0, 128, 4))
    assert collective_time_us("all-gather", mib16, trays, GB200, devices=128) == pytest.approx(
        5 + 31 * 2.5 + 31 / 32 * mib16 / (16 * 50e9) * 1e6)
    # 16 H100 nodes, all 128: 8 NICs per node as before (the node is the NVLink domain)
    assert collective_time_us("all-gather", mib16, tuple(range(128)), H100, devices=128) == pytest.approx(
        5 + 127 * 2.5 + 127 / 128 * mib16 / (8 * 50e9) * 1e6)
    # 16 GB200s sit in one NVL72 domain: NVLink 5 at 900 GB/s
    assert collective_time_us("all-reduce", mib16, tuple(range(16)), GB200) == pytest.approx(
        5 + 30 * 2.5 + 2 * 15 / 16 * mib16 / 900e9 * 1e6)
    assert collective_time_us("all-gather", mib16, (0,), H100) == 5.0  # a group of one: the launch only


def test_reduce_scatter_is_priced_on_its_full_operand() -> None:
    entry = ("  %p = bf16[8192,1024] parameter(0)\n"
             "  ROOT %rs = bf16[1024,1024] reduce-scatter(%p), replica_groups=[1,8]<=[8], dimensions={0}, "
             "to_apply=%add")
    text = ("HloModule m, num_partitions=8\n\n%add (x: bf16[], y: bf16[]) -> bf16[] {\n  %x = bf16[] parameter(0)\n"
            "  %y = bf16[] parameter(1)\n  ROOT %s = bf16[] add(%x, %y)\n}\n\n"
            f"ENTRY %e (p: bf16[8192,1024]) -> bf16[1024,1024] {{\n{entry}\n}}\n")
    m = parse_hlo(text)
    cost = CostModel(ModuleIndex(m), H100)
    full = 8192 * 1024 * 2
    assert cost.collective_us(m.entry.by_name["rs"]) == pytest.approx(5 + 7 * 2.5 + 7 / 8 * full / 450e9 * 1e6)


def test_zero_latency_target_is_the_plain_roofline() -> None:
    cost, ins = _model("  %x = f32[4] parameter(0)\n  ROOT %y = f32[4] add(%x, %x)", params="x: f32[4]")
    bare = CostModel(cost.index, dataclasses.replace(H100, kernel_launch_us=0.0, host_dma_latency_us=0.0))
    assert bare.op_cost(ins["y"]).us == pytest.approx(48 / 3.35e12 * 1e6)
    assert bare.transfer_us(12, "to_host") == pytest.approx(12 / 55e9 * 1e6)


def test_the_simulation_charges_the_dma_latency() -> None:
    from tests.conftest import fixture_text

    report = analyze_module(parse_hlo(fixture_text("mlp_offload.hlo.txt")), H100)
    assert report.timeline is not None
    for t in report.timeline.transfers.values():
        bw = H100.host_link_bandwidth(t.direction)
        assert t.transfer_us == pytest.approx(2.0 + t.bytes / bw * 1e6)
        if t.executions:
            assert t.duration_us >= t.transfer_us - 1e-9


BESIDE_A_MEMORY_BOUND_KERNEL = """HloModule hbm, is_scheduled=true

ENTRY %main (a: f32[1024,1024], x: f32[8192,8192], y: f32[8192,8192]) -> f32[8192,8192] {
  %a = f32[1024,1024]{1,0} parameter(0)
  %x = f32[8192,8192]{1,0} parameter(1)
  %y = f32[8192,8192]{1,0} parameter(2)
  %cs = (f32[1024,1024]{1,0:S(5)}, f32[1024,1024]{1,0}, u32[]) copy-start(%a)
  %big = f32[8192,8192]{1,0} add(%x, %y)
  %cd = f32[1024,1024]{1,0:S(5)} copy-done(%cs)
  ROOT %r = f32[8192,8192]{1,0} negate(%big)
}
"""


def test_a_copy_beside_a_memory_bound_kernel_gets_the_hbm_it_leaves() -> None:
    report = analyze_module(parse_hlo(BESIDE_A_MEMORY_BOUND_KERNEL), H100)
    assert report.timeline is not None
    t = report.timeline.transfers[("main", "cs")]
    # %big reads 2 x 256 MiB and writes 256 MiB: 805,306,368 B in 240.39 us + 1 us launch. It
    # leaves 3.35e6 - 805,306,368 / 241.39 B/us of HBM, about 13.9 GB/s, below the link's 55.
    big_us = 805_306_368 / 3.35e12 * 1e6 + 1.0
    free = 3.35e12 / 1e6 - 805_306_368 / big_us  # bytes/us
    assert 0 < free < 55e3
    # The copy's 4 MiB enter the link 2 us after its start, flow at `free` until %big ends, then
    # at 55 GB/s; the done right after %big waits for the rest.
    moved = (big_us - 2.0) * free
    finish = big_us + (4 * 2**20 - moved) / 55e3
    assert t.finish_us == pytest.approx(finish)
    assert t.wait_us == pytest.approx(finish - big_us)
    # Without the shared HBM the same copy (78.3 us) is hidden by %big
    index = report.index
    from hloscope.analysis.simulate.step import simulate_step
    from hloscope.analysis.simulate.timeline import SimSettings
    from hloscope.analysis.structure.pairs import pair_async_ops
    from hloscope.analysis.structure.transfers import find_host_transfers

    alone = simulate_step(report.module, report.cost, pair_async_ops(index), find_host_transfers(index),
                          index.callgraph, SimSettings(share_hbm=False))
    assert alone.transfers[("main", "cs")].wait_us == 0.0
    # The verdict's hint: all the compute beside it is memory-bound
    v = report.verdict_for("cs")
    assert v is not None and str(v.verdict) == "partial"
    share = memory_bound_share(v.timing)
    assert share is not None and share.fraction == pytest.approx(1.0)
    assert share.compute_us == pytest.approx(big_us)
    assert "100% of the compute beside it" in explain(v) and "memory-bound" in explain(v)


def test_a_copy_beside_a_gemm_has_no_memory_bound_hint() -> None:
    entry = ONE_GEMM
    report = analyze_module(parse_hlo(entry), H100)
    v = report.verdict_for("cs")
    assert v is not None and v.timing is not None
    share = memory_bound_share(v.timing)
    assert share is not None and share.memory_bound_us == 0.0 and share.compute_us > 0
    assert "memory-bound" not in explain(v)


ONE_GEMM = """HloModule gemm, is_scheduled=true

ENTRY %main (a: bf16[4096,4096]) -> bf16[4096,4096] {
  %a = bf16[4096,4096]{1,0} parameter(0)
  %cs = (bf16[4096,4096]{1,0:S(5)}, bf16[4096,4096]{1,0}, u32[]) copy-start(%a)
  %m = bf16[4096,4096]{1,0} dot(%a, %a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %cd = bf16[4096,4096]{1,0:S(5)} copy-done(%cs)
  ROOT %r = bf16[4096,4096]{1,0} negate(%m)
}
"""


def _attention(call: str) -> str:
    return f"""HloModule att

ENTRY %e (q: bf16[2,1024,16,128], k: bf16[2,1024,16,128], v: bf16[2,1024,16,128]) -> bf16[2,1024,16,128] {{
  %q = bf16[2,1024,16,128]{{3,2,1,0}} parameter(0)
  %k = bf16[2,1024,16,128]{{3,2,1,0}} parameter(1)
  %v = bf16[2,1024,16,128]{{3,2,1,0}} parameter(2)
  {call}
}}
"""


def test_flash_attention_custom_calls_cost_their_matmuls() -> None:
    # Written after the Pallas mha calls a deviceless compile makes (log.md, presets 06:12): q, k, v
    # bf16[b=2, S=1024, H=16, D=128]. One S x S x D matmul per head: 2 * 2*16*1024 * 1024 * 128 FLOPs.
    one = 2 * 2 * 16 * 1024 * 1024 * 128
    fwd = ('ROOT %pallas_call.1 = bf16[2,1024,16,128]{3,2,1,0} custom-call(%q, %k, %v), '
           'custom_call_target="__gpu$xla.gpu.triton", api_version=API_VERSION_TYPED_FFI, '
           'backend_config={debug = false, grid_x = 8 : i32, ir = "xyz", name = "mha_forward", num_warps = 8 : i32}')
    m = parse_hlo(_attention(fwd))
    cost = CostModel(ModuleIndex(m), H100)
    c = cost.op_cost(m.entry.by_name["pallas_call.1"])
    assert c.flops == 2 * one  # QK^T and PV
    assert c.us == pytest.approx(2 * one / 989e12 * 1e6 + 1.0)  # compute-bound: 8.4 GFLOP at 989 TFLOP/s
    bwd = fwd.replace('name = "mha_forward"', 'name = "mha_backward"')
    m = parse_hlo(_attention(bwd))
    assert CostModel(ModuleIndex(m), H100).op_cost(m.entry.by_name["pallas_call.1"]).flops == 5 * one
    other = fwd.replace('name = "mha_forward"', 'name = "my_kernel"')
    m = parse_hlo(_attention(other))
    assert CostModel(ModuleIndex(m), H100).op_cost(m.entry.by_name["pallas_call.1"]).flops == 0.0  # unknown: bytes only
    cudnn = ('ROOT %fmha = bf16[2,1024,16,128]{3,2,1,0} custom-call(%q, %k, %v), '
             'custom_call_target="__cudnn$fmhaSoftmax", '
             'backend_config={"cudnn_fmha_backend_config":{"mask_type":"CAUSAL"}}')
    m = parse_hlo(_attention(cudnn))
    assert CostModel(ModuleIndex(m), H100).op_cost(m.entry.by_name["fmha"]).flops == 2 * one / 2  # causal: half


def test_a_target_file_sets_the_latencies_and_checks_them(tmp_path: Path) -> None:
    from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
    from hloscope.targets import load_target_file

    folder = tmp_path
    good = folder / "calibrated.toml"
    good.write_text('base = "h100-sxm"\nname = "cal"\nhost_dma_latency_us = 0\nkernel_launch_us = 3.5\n'
                    "network_bandwidth = 25e9\npeak_fp4_flops = 4e15\n")
    t = load_target_file(good)
    assert (t.host_dma_latency_us, t.kernel_launch_us, t.network_bandwidth) == (0.0, 3.5, 25e9)
    assert t.peak_flops("f4e2m1fn") == 4e15
    bad = folder / "bad.toml"
    bad.write_text('base = "h100-sxm"\nkernel_launch_us = -1\n')
    with pytest.raises(HloscopeError) as e:
        load_target_file(bad)
    assert e.value.exit_code == EXIT_BAD_INPUT and "'kernel_launch_us'" in str(e.value)
