"""The simulated step: waits at dones, a shared host link, loops across the back edge.

Expected times are derived by hand from the HLO and the roofline figures of
``h100-sxm`` (PCIe Gen5 achieved 55 GB/s per direction, 3.35 TB/s HBM, 67
TFLOP/s FP32); per-op costs are taken from the cost model, which
test_cost_bytes.py checks on its own.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.kinds import VerdictKind
from hloscope.analysis.simulate.step import simulate_step
from hloscope.analysis.simulate.timeline import SimSettings, SliceKind, Timeline
from hloscope.analysis.simulate.verdict import Thresholds, verdict_from_wait
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.opclass import Resource
from hloscope.analysis.structure.pairs import pair_async_ops
from hloscope.analysis.structure.transfers import find_host_transfers
from hloscope.hlo.model import Module
from hloscope.hlo.parser import parse_hlo
from hloscope.targets import get_target
from tests.conftest import fixture_text

PCIE_ACHIEVED = 55e9  # bytes/s, h100-sxm host link per direction


def _simulate(m: Module, target: str = "h100-sxm", **kw: Any) -> tuple[Timeline, CostModel]:
    # The simulation's mechanics are checked on the plain roofline: no kernel launch, no DMA
    # setup latency, no HBM shared between copies and kernels (test_cost_latency.py checks them).
    index = ModuleIndex(m)
    cost = CostModel(index, dataclasses.replace(get_target(target), kernel_launch_us=0.0, host_dma_latency_us=0.0))
    tl = simulate_step(m, cost, pair_async_ops(index), find_host_transfers(index), index.callgraph,
                       SimSettings(share_hbm=False, **kw))
    tl.self_check()
    return tl, cost


ONE_WINDOW = """HloModule one, is_scheduled=true

ENTRY %main (a: f32[1024,1024]) -> f32[1024,1024] {
  %a = f32[1024,1024]{1,0} parameter(0)
  %cs = (f32[1024,1024]{1,0:S(5)}, f32[1024,1024]{1,0}, u32[]) copy-start(%a)
  %m = f32[1024,1024]{1,0} dot(%a, %a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %cd = f32[1024,1024]{1,0:S(5)} copy-done(%cs)
  ROOT %r = f32[1024,1024]{1,0} add(%m, %m)
}
"""


def test_wait_at_done_is_transfer_minus_window() -> None:
    # 4 MiB to host at 55 GB/s: 76.26 us. The dot beside it: 2 * 1024^3 FLOP at 67 TFLOP/s, its
    # 8 x 8 = 64 output tiles of 128x128 filling 64 of the 132 SMs (one wave): 66.11 us.
    # The compute stream reaches the done at 66.11 us and waits 10.15 us.
    tl, _ = _simulate(parse_hlo(ONE_WINDOW))
    t = tl.transfers[("main", "cs")]
    xfer = 4 * 2**20 / PCIE_ACHIEVED * 1e6
    dot = 2 * 1024**3 / (64 / 132) / 67e12 * 1e6
    assert t.transfer_us == pytest.approx(xfer)
    assert t.done_us == pytest.approx(dot)
    assert t.wait_us == pytest.approx(xfer - dot)
    assert t.beside_compute == ("m",) and t.compute_beside_us == pytest.approx(dot)
    assert tl.exposed_transfer_us == pytest.approx(xfer - dot)
    assert tl.step_us == pytest.approx(tl.compute_us + xfer - dot)
    assert verdict_from_wait(t.transfer_us, t.mean_wait_us) == VerdictKind.PARTIAL
    [link] = tl.slices[Resource.LINK_TO_HOST]
    assert (link.start_us, link.end_us, link.bytes) == (0.0, pytest.approx(xfer), 4 * 2**20)


SHARED = """HloModule shared, is_scheduled=true

ENTRY %main (a: f32[1024,1024], b: f32[1024,1024]) -> f32[1024,1024] {
  %a = f32[1024,1024]{1,0} parameter(0)
  %b = f32[1024,1024]{1,0} parameter(1)
  %c1 = (f32[1024,1024]{1,0:S(5)}, f32[1024,1024]{1,0}, u32[]) copy-start(%a)
  %c2 = (f32[1024,1024]{1,0:S(5)}, f32[1024,1024]{1,0}, u32[]) copy-start(%b)
  %d1 = f32[1024,1024]{1,0:S(5)} copy-done(%c1)
  %d2 = f32[1024,1024]{1,0:S(5)} copy-done(%c2)
  ROOT %r = f32[1024,1024]{1,0} add(%a, %b)
}
"""


def test_transfers_running_on_two_copy_engines_share_the_link() -> None:
    # With two copy engines (copy_engines=2) the two 4 MiB offloads issued together both move and
    # share the 55 GB/s link: each finishes at 2 x 76.26 us, so the first done waits 152.5 us
    # (not 76.26) and the second none.
    tl, _ = _simulate(parse_hlo(SHARED), copy_engines=2)
    xfer = 4 * 2**20 / PCIE_ACHIEVED * 1e6
    t1, t2 = tl.transfers[("main", "c1")], tl.transfers[("main", "c2")]
    assert t1.finish_us == pytest.approx(2 * xfer) and t2.finish_us == pytest.approx(2 * xfer)
    assert t1.wait_us == pytest.approx(2 * xfer) and t2.wait_us == 0.0
    assert t1.engine_wait_us == 0.0 and t2.engine_wait_us == 0.0
    assert t1.beside_transfers == ("c2",) and t2.beside_transfers == ("c1",)
    assert verdict_from_wait(t1.transfer_us, t1.wait_us) == VerdictKind.EXPOSED
    assert verdict_from_wait(t2.transfer_us, t2.wait_us) == VerdictKind.HIDDEN


def test_with_one_copy_engine_the_copy_ready_first_runs_first_and_the_other_waits_for_it() -> None:
    # The target's figure (h100-sxm: one copy engine per direction): c1, issued first, has the
    # link alone and finishes at 76.26 us; c2 waits for the engine and runs after it. The first
    # done waits half as long as with sharing, the second as long as its copy runs; the last
    # finish is the same (2 x 76.26 us): the link moved the same bytes at the same rate.
    tl, cost = _simulate(parse_hlo(SHARED))
    assert cost.target.host_copy_engines == 1
    xfer = 4 * 2**20 / PCIE_ACHIEVED * 1e6
    t1, t2 = tl.transfers[("main", "c1")], tl.transfers[("main", "c2")]
    assert t1.finish_us == pytest.approx(xfer) and t2.finish_us == pytest.approx(2 * xfer)
    assert t1.wait_us == pytest.approx(xfer) and t2.wait_us == pytest.approx(xfer)
    assert t1.engine_wait_us == 0.0 and t2.engine_wait_us == pytest.approx(xfer)
    assert t2.queued_us == 0.0  # no stream assignment given: it waited for the engine, not its stream
    assert t1.beside_transfers == ("c2",) and t2.beside_transfers == ("c1",)
    shared, _ = _simulate(parse_hlo(SHARED), copy_engines=2)
    assert max(t1.finish_us, t2.finish_us) == pytest.approx(max(t.finish_us for t in shared.transfers.values()))
    assert tl.step_us == pytest.approx(shared.step_us)


def _crossing(trips: int) -> str:
    return f"""HloModule pipelined, is_scheduled=true

%body (p: (s32[], f32[1,1024], (f32[1,1024], f32[1,1024], u32[]))) -> (s32[], f32[1,1024], (f32[1,1024], f32[1,1024], u32[])) {{
  %p = (s32[], f32[1,1024]{{1,0}}, (f32[1,1024]{{1,0:S(5)}}, f32[1,1024]{{1,0}}, u32[])) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %prev = (f32[1,1024]{{1,0:S(5)}}, f32[1,1024]{{1,0}}, u32[]) get-tuple-element(%p), index=2
  %done = f32[1,1024]{{1,0:S(5)}} copy-done(%prev)
  %x = f32[1,1024]{{1,0}} get-tuple-element(%p), index=1
  %y = f32[1,1024]{{1,0}} tanh(%x)
  %w = f32[1,1024]{{1,0}} exponential(%y)
  %start = (f32[1,1024]{{1,0:S(5)}}, f32[1,1024]{{1,0}}, u32[]) copy-start(%w)
  %one = s32[] constant(1)
  %n = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[1,1024]{{1,0}}, (f32[1,1024]{{1,0:S(5)}}, f32[1,1024]{{1,0}}, u32[])) tuple(%n, %w, %start)
}}

%cond (q: (s32[], f32[1,1024], (f32[1,1024], f32[1,1024], u32[]))) -> pred[] {{
  %q = (s32[], f32[1,1024]{{1,0}}, (f32[1,1024]{{1,0:S(5)}}, f32[1,1024]{{1,0}}, u32[])) parameter(0)
  %k = s32[] get-tuple-element(%q), index=0
  %c = s32[] constant({trips})
  ROOT %lt = pred[] compare(%k, %c), direction=LT
}}

ENTRY %main (a: f32[1,1024]) -> f32[1,1024] {{
  %a = f32[1,1024]{{1,0}} parameter(0)
  %start0 = (f32[1,1024]{{1,0:S(5)}}, f32[1,1024]{{1,0}}, u32[]) copy-start(%a)
  %zero = s32[] constant(0)
  %init = (s32[], f32[1,1024]{{1,0}}, (f32[1,1024]{{1,0:S(5)}}, f32[1,1024]{{1,0}}, u32[])) tuple(%zero, %a, %start0)
  %loop = (s32[], f32[1,1024]{{1,0}}, (f32[1,1024]{{1,0:S(5)}}, f32[1,1024]{{1,0}}, u32[])) while(%init), condition=%cond, body=%body, backend_config={{"known_trip_count":{{"n":"{trips}"}}}}
  %last = (f32[1,1024]{{1,0:S(5)}}, f32[1,1024]{{1,0}}, u32[]) get-tuple-element(%loop), index=2
  ROOT %final = f32[1,1024]{{1,0:S(5)}} copy-done(%last)
}}
"""


def test_transfer_crossing_the_back_edge_is_timed_across_it() -> None:
    # Each iteration offloads its activation (4 KiB, 0.0745 us) at the end of the body; the done
    # that waits for it is at the top of the next iteration (or after the loop). Between them run
    # only the counter add and the condition's compare, so every execution waits the transfer
    # minus those two ops.
    m = parse_hlo(_crossing(3))
    tl, cost = _simulate(m)
    t = tl.transfers[("body", "start")]
    xfer = 4096 / PCIE_ACHIEVED * 1e6
    gap = cost.op_cost(m.computations["body"].by_name["n"]).us + cost.op_cost(m.computations["cond"].by_name["lt"]).us
    assert t.executions == 3 and t.done in ("done", "final")
    assert t.mean_wait_us == pytest.approx(xfer - gap)
    assert t.wait_us_per_step == pytest.approx(3 * (xfer - gap))
    assert tl.transfers[("main", "start0")].executions == 1
    [loop] = tl.loops
    assert (loop.trip_count, loop.simulated, loop.extrapolated) == (3, 3, False)


def test_long_loop_is_extrapolated_from_its_steady_state() -> None:
    # 1,000 iterations: a few are simulated, the rest extrapolated; the totals match a full replay.
    m = parse_hlo(_crossing(1000))
    quick, _ = _simulate(m)
    full, _ = _simulate(m, extrapolate=False)
    [loop] = quick.loops
    assert loop.extrapolated and loop.steady and loop.simulated < 10 and loop.trip_count == 1000
    assert not full.extrapolated and full.loops[0].simulated == 1000
    assert quick.step_us == pytest.approx(full.step_us, rel=1e-9)
    assert quick.exposed_transfer_us == pytest.approx(full.exposed_transfer_us, rel=1e-9)
    assert quick.transfers[("body", "start")].executions == 1000
    assert any(s.kind == SliceKind.EXTRAPOLATED for s in quick.slices[Resource.COMPUTE])


def test_fixture_reloads_sharing_the_link_from_the_same_instant() -> None:
    # llama_offload.hlo.txt, region_13.23_spmd (backward loop, 2 trips), read by hand:
    #   5 dynamic-slice-start.2.0 (bf16[1,1,256,2,64], 65,536 B)    7 dynamic-slice-start.1.0 (65,536 B)
    #   8 dynamic-slice-done.2.0   -- nothing but get-tuple-elements between 5 and 8
    #  10 dynamic-slice-start.3 (bf16[1,1,256,8,64], 262,144 B), 12..32 layer-slice fusions and
    #     copy.112, 33 dynamic-slice-done.1.0, 34 dynamic-slice-done.3.
    # With a copy engine for each (copy_engines=8, the equal sharing of the link): both 64 KiB
    # reloads share the H->D link from the same instant: .2.0's done waits for both,
    # 2 x 65,536 B / 55 GB/s = 2.383 us (exposed); .1.0 is done by then (hidden); .3 then runs
    # alone and waits its 4.766 us minus the compute of positions 12..32 (partial).
    m = parse_hlo(fixture_text("llama_offload.hlo.txt"))
    tl, cost = _simulate(m, copy_engines=8)
    body = m.computations["region_13.23_spmd"]
    k20, k10, k3 = (tl.transfers[("region_13.23_spmd", n)] for n in
                    ("dynamic-slice-start.2.0", "dynamic-slice-start.1.0", "dynamic-slice-start.3"))
    one = 65_536 / PCIE_ACHIEVED * 1e6
    assert k20.wait_us == pytest.approx(2 * one) and k10.wait_us == 0.0
    window = sum(cost.instruction_us(i) for i in body.instructions[11:33])
    assert k3.wait_us == pytest.approx(262_144 / PCIE_ACHIEVED * 1e6 - window)
    assert [verdict_from_wait(t.transfer_us, t.mean_wait_us) for t in (k20, k10, k3)] == \
        [VerdictKind.EXPOSED, VerdictKind.HIDDEN, VerdictKind.PARTIAL]
    assert all(t.engine_wait_us == 0.0 for t in (k20, k10, k3))
    # With one copy engine per direction (the target's figure), the same three reloads run one
    # after another in the order they became ready: .2.0 (issued first) alone, done after 1.19 us
    # (exposed, its own time); .1.0 waits 1.19 us for the engine and ends at 2 x 1.19 us, which its
    # done (after the 0.76 us window) waits the rest of (partial); .3, issued at done.2.0, waits
    # for .1.0 to free the engine while the window's compute runs, so its done, right after
    # done.1.0, waits all of its 4.766 us (exposed).
    fifo, _ = _simulate(m)
    f20, f10, f3 = (fifo.transfers[("region_13.23_spmd", n)] for n in
                    ("dynamic-slice-start.2.0", "dynamic-slice-start.1.0", "dynamic-slice-start.3"))
    assert f20.finish_us - f20.issue_us == pytest.approx(one) and f20.wait_us == pytest.approx(one)
    assert f10.engine_wait_us == pytest.approx(one) and f10.finish_us - f10.issue_us == pytest.approx(2 * one)
    assert f10.wait_us == pytest.approx(one - window)
    assert f3.issue_us == pytest.approx(f20.finish_us) and f3.engine_wait_us == pytest.approx(one)
    assert f3.wait_us == pytest.approx(262_144 / PCIE_ACHIEVED * 1e6)
    assert [verdict_from_wait(t.transfer_us, t.mean_wait_us) for t in (f20, f10, f3)] == \
        [VerdictKind.EXPOSED, VerdictKind.PARTIAL, VerdictKind.EXPOSED]
    assert k20.executions == k10.executions == k3.executions == 2
    assert {s.resource for s in tl.slices[Resource.LINK_TO_DEVICE]} == {Resource.LINK_TO_DEVICE}


@pytest.mark.parametrize("name", ["mlp_offload.hlo.txt", "mlp_offload_nopipe.hlo.txt", "llama_offload.hlo.txt",
                                  "llama_offload_nopipe.hlo.txt", "llama_remat.hlo.txt", "mlp_remat.hlo.txt"])
def test_fixture_timelines_are_consistent(name: str) -> None:
    # Every transfer runs as often per step as the call graph says; totals add up (self_check).
    m = parse_hlo(fixture_text(name))
    tl, _ = _simulate(m)
    index = ModuleIndex(m)
    for t in find_host_transfers(index):
        assert tl.transfers[(t.computation, t.instruction.name)].executions == t.executions
    assert tl.step_us > 0 and tl.compute_us > 0


def test_peak_link_mode_shortens_transfers() -> None:
    m = parse_hlo(ONE_WINDOW)
    index = ModuleIndex(m)
    cost = CostModel(index, get_target("h100-sxm"), link_mode="peak")
    peak = simulate_step(m, cost, pair_async_ops(index), find_host_transfers(index), index.callgraph)
    assert peak.link_mode == "peak"
    # 2 us DMA setup + 4 MiB at the 64 GB/s peak
    assert peak.transfers[("main", "cs")].transfer_us == pytest.approx(2.0 + 4 * 2**20 / 64e9 * 1e6)


@pytest.mark.parametrize(("exposed", "verdict"), [
    (0.0, VerdictKind.HIDDEN), (5.0, VerdictKind.HIDDEN), (5.01, VerdictKind.PARTIAL),
    (94.99, VerdictKind.PARTIAL), (95.0, VerdictKind.EXPOSED), (250.0, VerdictKind.EXPOSED)])
def test_verdict_thresholds_on_both_sides(exposed: float, verdict: VerdictKind) -> None:
    assert verdict_from_wait(100.0, exposed) == verdict


def test_verdict_thresholds_can_be_set() -> None:
    assert verdict_from_wait(100.0, 20.0, Thresholds(hidden_at_most=0.25)) == VerdictKind.HIDDEN
    assert verdict_from_wait(0.0, 0.0) == VerdictKind.HIDDEN


P2P_BESIDE_ALL_GATHER = """HloModule p2p, is_scheduled=true, num_partitions=8

ENTRY %main (a: bf16[1024,1024]) -> bf16[8192,1024] {
  %a = bf16[1024,1024]{1,0} parameter(0)
  %ags = (bf16[1024,1024]{1,0}, bf16[8192,1024]{1,0}) all-gather-start(%a), replica_groups=[1,8]<=[8], dimensions={0}
  %cps = (bf16[1024,1024]{1,0}, bf16[1024,1024]{1,0}, u32[], u32[]) collective-permute-start(%a), source_target_pairs={{0,1},{1,2}}
  %cpd = bf16[1024,1024]{1,0} collective-permute-done(%cps)
  %agd = bf16[8192,1024]{1,0} all-gather-done(%ags)
  ROOT %r = bf16[8192,1024]{1,0} negate(%agd)
}
"""


def test_a_collective_permute_runs_on_its_own_stream_beside_an_all_gather() -> None:
    # XLA runs point-to-point collectives on a P2P stream apart from the collective stream: the
    # permute issued right after the all-gather starts at once instead of queueing behind it.
    m = parse_hlo(P2P_BESIDE_ALL_GATHER)
    tl, cost = _simulate(m)
    coll = {s.name: s for s in tl.slices[Resource.COLLECTIVE]}
    ag, cp = coll["ags"], coll["cps"]
    assert ag.start_us == cp.start_us == 0.0
    assert ag.end_us == pytest.approx(cost.collective_us(m.entry.by_name["ags"]))
    assert cp.end_us == pytest.approx(cost.collective_us(m.entry.by_name["cps"]))
    # 8 GPUs in one node: the all-gather 5 + 7 x 2.5 + 7/8 x 16 MiB at 450 GB/s; the permute
    # 5 + 2.5 + 2 MiB at 450 GB/s
    assert ag.end_us == pytest.approx(5 + 7 * 2.5 + 7 / 8 * 16 * 2**20 / 450e9 * 1e6)
    assert cp.end_us == pytest.approx(5 + 2.5 + 2 * 2**20 / 450e9 * 1e6)
    assert tl.exposed_collective_us == pytest.approx(ag.end_us)


def test_a_copy_done_moving_before_an_extrapolated_loop_keeps_its_issue() -> None:
    # llama405b_hostmem.hlo.txt, entry main.37_spmd: copy-start.22 (f32[2,8192,128256] to S(5), 8.4 GB)
    # is issued before the 126-layer loop and its bytes have all moved before the loop's extrapolated
    # iterations; its done comes after the loop. Its issue was moved by the extrapolated gap (48.3 s)
    # past its own finish (1.7 s): a link slice ending before it began (issue 36, item 6).
    from tests.conftest import fixture_report

    tl = fixture_report("llama405b_hostmem.hlo.txt").timeline
    assert tl is not None
    tl.self_check()
    t = tl.transfers[("main.37_spmd", "copy-start.22")]
    assert t.bytes == 2 * 8192 * 128256 * 4
    assert t.issue_us == tl.reached[("main.37_spmd", "copy-start.22")] < t.finish_us
