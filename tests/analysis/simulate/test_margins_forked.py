"""Margins from forked re-simulations (issue 44 item 1) against the whole re-simulations they replace.

``measure_margins`` starts each what-if where it first differs from the step (a free transfer at the
first entry op that reaches it, a link factor at the first op that reaches any transfer) and stops a
free transfer's run at the first quiet point after; ``measure_margins_brute`` re-simulates the whole
step for every what-if. Every flip, verdict and error corner must be the reference's bit for bit; the
marginal costs differ from it by float rounding only (the step's rest added to another clock), and the
JSON report is byte for byte the same.
"""

from __future__ import annotations

import dataclasses
import json
from functools import cache

import pytest

from hloscope.analysis.simulate.margin import measure_margins, verdicts_of
from hloscope.analysis.simulate.replay import Replayer
from hloscope.analysis.simulate.step import simulate_step
from hloscope.analysis.simulate.timeline import WHAT_IF_SETTINGS, SimScales
from hloscope.api import StepReport, analyze
from hloscope.hlo.parser import parse_hlo
from tests.analysis.simulate.margins_brute import measure_margins_brute
from tests.conftest import fixture_text

CASES = {
    "GPU llama step, pipelined offloads in a loop": ("llama_offload.hlo.txt", "h100-sxm"),
    "GPU optimizer state offloaded, no loop": ("opt_state_offload.hlo.txt", "h100-sxm"),
    "GPU jax 0.12 mlp offload": ("jax012/mlp_offload.hlo.txt", "h100-sxm"),
    "GB200 405B host buffers, nested loops": ("llama405b_hostbuf.hlo.txt", "gb200"),
    "TPU scan offload, no XLA streams": ("tpu_v5e/offload_scan_8x128MiB.hlo.txt", "tpu-v5e"),
    "TPU measured step, two offloaded tensors": ("measured/tpu_v5e/two/step.hlo.txt", "tpu-v5e"),
}


@cache
def report(name: str, target: str) -> StepReport:
    return analyze(parse_hlo(fixture_text(name), name), target)


def args(r: StepReport) -> tuple:  # type: ignore[type-arg]
    assert r.timeline is not None
    return (r.module, r.cost, r.pairs, r.transfers, r.index.callgraph, r.streams, r.timeline, r.options.thresholds)


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_forked_margins_are_the_whole_re_simulations(case: tuple[str, str]) -> None:
    r = report(*case)
    fast, brute = measure_margins(*args(r)), measure_margins_brute(*args(r))
    assert r.timeline is not None and brute.transfers  # every case has judged transfers
    assert fast.simulations == brute.simulations
    assert (fast.corner_step_us, fast.grid, fast.error_factors) == (brute.corner_step_us, brute.grid,
                                                                     brute.error_factors)
    assert fast.transfers.keys() == brute.transfers.keys()
    for k, b in brute.transfers.items():
        f = fast.transfers[k]
        assert dataclasses.replace(f, marginal_us=0.0) == dataclasses.replace(b, marginal_us=0.0), k
        assert f.marginal_us == pytest.approx(b.marginal_us, rel=0, abs=1e-12 * r.timeline.step_us), k
    assert [(m.computation, m.start) for m in fast.fix_first()] == [(m.computation, m.start)
                                                                    for m in brute.fix_first()]


@pytest.mark.parametrize("case", [CASES["GB200 405B host buffers, nested loops"],
                                  CASES["TPU measured step, two offloaded tensors"]],
                         ids=["405B host buffers", "TPU two offloads"])
def test_the_json_report_is_byte_for_byte_the_brute_forces(case: tuple[str, str]) -> None:
    fast = report(*case)
    brute = analyze(parse_hlo(fixture_text(case[0]), case[0]), case[1])
    brute.__dict__["margins"] = measure_margins_brute(*args(brute))  # the cached property, filled by the reference
    assert json.dumps(fast.to_dict()) == json.dumps(brute.to_dict())


def test_a_link_factor_forked_at_the_first_transfer_is_the_whole_run_bit_for_bit() -> None:
    # llama_offload.hlo.txt: its entry computation runs ops before the first host transfer is reached,
    # which the fork skips; the step and every transfer's waits and blame are the whole run's, exactly.
    r = report(*CASES["GPU llama step, pipelined offloads in a loop"])
    replay = Replayer(r.module, r.cost, list(r.pairs), list(r.transfers), r.index.callgraph, r.streams)
    everything = frozenset((t.computation, t.instruction.name) for t in r.transfers)
    assert replay.position(everything) > 0
    for f in (0.5, 2 ** (-13 / 4), 3.0):
        forked = replay.what_if(SimScales(link=f), everything).whole()
        whole = simulate_step(r.module, r.cost, list(r.pairs), list(r.transfers), r.index.callgraph,
                              WHAT_IF_SETTINGS, streams=r.streams, scales=SimScales(link=f))
        assert forked.step_us == whole.step_us
        for k, t in forked.transfers.items():
            w = whole.transfers[k]
            assert (t.executions, t.wait_us_per_step, t.blame_us, t.matched, t.held_up_us) == (
                w.executions, w.wait_us_per_step, w.blame_us, w.matched, w.held_up_us), k
        keys = list(forked.transfers)
        assert verdicts_of(forked, keys, lambda k: 1.0, r.options.thresholds) == verdicts_of(
            whole, keys, lambda k: 1.0, r.options.thresholds)
    assert replay.count == 3


def test_a_what_if_stopped_after_a_transfers_last_reach_has_its_final_figures() -> None:
    # llama405b_hostbuf.hlo.txt on gb200: the Q/K/V reloads sit in the backward loop body region_17.33_spmd;
    # a run read for them alone stops at the first quiet point after the entry op (the loop) that reaches
    # them, before the step's end, with their figures those of the whole run; read on for every
    # transfer, it goes on from there.
    r = report(*CASES["GB200 405B host buffers, nested loops"])
    replay = Replayer(r.module, r.cost, list(r.pairs), list(r.transfers), r.index.callgraph, r.streams)
    qkv = frozenset(("region_17.33_spmd", n) for n in ("dynamic-slice-start.3", "dynamic-slice-start.1.0",
                                                       "dynamic-slice-start.2.0"))
    run = replay.what_if(SimScales(compute=1.5))
    part = run.upto(qkv)
    assert part.step_us is None and run.position < replay._program_positions()[1]
    whole = simulate_step(r.module, r.cost, list(r.pairs), list(r.transfers), r.index.callgraph,
                          WHAT_IF_SETTINGS, streams=r.streams, scales=SimScales(compute=1.5))
    for k in qkv:
        t, w = part.transfers[k], whole.transfers[k]
        assert t.executions == w.executions == 32
        assert (t.wait_us_per_step, t.blame_us, t.held_up_us) == (w.wait_us_per_step, w.blame_us, w.held_up_us)
    everyone = frozenset(whole.transfers)
    rest = run.upto(everyone)
    for k in everyone:
        assert (rest.transfers[k].wait_us_per_step, rest.transfers[k].blame_us) == (
            whole.transfers[k].wait_us_per_step, whole.transfers[k].blame_us), k
    assert run.whole().step_us == whole.step_us
