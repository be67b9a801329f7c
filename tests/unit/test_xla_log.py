"""XLA's latency-estimator log read into figures (hloscope/hlo/xla_log.py).

The logs are the unedited stderr of the mlp_offload fixture's compile
(fixtures/generate_xla_logs.py); every figure asserted here was read in them by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.hlo.parser import parse_hlo
from hloscope.hlo.xla_log import CostSource, LatencySource, parse_xla_log

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.fixture(scope="module")
def sol():
    return parse_xla_log((FIXTURES / "xla-logs" / "mlp_offload.sol.log").read_text())


@pytest.fixture(scope="module")
def approx():
    return parse_xla_log((FIXTURES / "xla-logs" / "mlp_offload.approx.log").read_text())


def test_sol_estimator_prices_collectives_with_its_model(sol):
    assert sol.estimator == "sol"
    ag = sol.latency("all-gather-start.1")
    assert ag is not None and ag.us == pytest.approx(31.648) and ag.source is LatencySource.COLLECTIVE_MODEL
    assert sol.latency("reduce-scatter-start").us == pytest.approx(34.4)
    assert sol.latency("all-reduce-start").us == pytest.approx(0.19275)


def test_host_transfers_get_the_fixed_default(sol):
    # "Fallback to wrapped estimator due to ComputeCollectiveTime failure for dynamic-slice-start.1,
    # returning latency: 5000": the same figure for every host transfer, whatever its bytes.
    for name in ("dynamic-slice-start.1", "dynamic-update-slice-start.2", "dynamic-update-slice-start.1.0"):
        lat = sol.latency(name)
        assert lat is not None and lat.default and lat.us == 5000.0


def test_every_async_start_of_the_fixture_has_a_latency(sol):
    module = parse_hlo((FIXTURES / "mlp_offload.hlo.txt").read_text(), "mlp_offload.hlo.txt")
    starts = {i.name for c in module.computations.values() for i in c.instructions
              if i.text_opcode.endswith("-start")}
    assert starts and starts <= set(sol.async_latency)


def test_node_costs_name_their_source(sol):
    dot = sol.node_costs["gemm_fusion_dot.14"]
    assert dot.us == pytest.approx(6.4) and dot.source is CostSource.MATMUL_INTERPOLATOR
    assert sol.node_costs["loop_add_fusion.5"].source is CostSource.PERFORMANCE_MODEL
    assert sol.node_costs["copy.18"].source is CostSource.FALLBACK


def test_scheduler_statistics_per_computation(sol, approx):
    after = sol.after("region_3.4_spmd")
    assert after is not None and after.total_cycles == pytest.approx(5082.56)
    assert after.wasted_cycles == pytest.approx(57.5113) and after.memory_peak_bytes == 5169280
    assert after.wasted_by_kind["all-gather"] == pytest.approx(30.648) and after.wasted_by_kind["all-reduce"] == 0
    assert approx.estimator == "approximate" and not approx.node_costs and not approx.async_latency
    assert approx.after("region_3.4_spmd").total_cycles == 20009.0
    assert approx.memory_limit_bytes == 65278514323


def test_unknown_and_damaged_lines_are_skipped():
    text = ("garbage\nI1201 05:17:06.861451 1 sol_latency_estimator.cc:461] GetLatencyBetween: Fallback to wrapped "
            "estimator due to ComputeCollectiveTime failure for x, returning latency: notanumber\n"
            "I1201 05:17:06.861451 1 sol_latency_estimator.cc:461] NodeCost: Fallback cost for y: 2 us\n")
    log = parse_xla_log(text)
    assert log.estimator == "sol" and log.latency("x") is None and log.cost_us("y") == 2.0
    assert parse_xla_log("").estimator is None


def test_cycles_are_us_only_under_sol_or_a_profile(sol, approx):
    assert sol.cycles_are_us and sol.profile is None
    assert not approx.cycles_are_us  # the approximate estimator's size classes are no time
    # mlp_offload's loops run 3 and 4 times (trip counts read in its HLO); after scheduling:
    # region_0.1_spmd.clone 5000, region_3.4_spmd 5082.56, main.6_spmd 5057.19 cycles
    runs = {"region_0.1_spmd.clone": 3, "region_3.4_spmd": 4}
    assert sol.step_cycles(runs) == pytest.approx(5000 * 3 + 5082.56 * 4 + 5057.19)
    assert parse_xla_log("").step_cycles(runs) is None


def test_a_profile_guided_schedule_names_its_profile():
    # Lines as XLA 5a9e73cb logs them (gpu_hlo_schedule.cc) when compiled with
    # --xla_gpu_pgle_profile_file_or_directory_path and the module is found in the file.
    head = "I1201 10:19:56.663710   13051 gpu_hlo_schedule.cc:"
    found = (f"{head}377] Using PGLE profile from /tmp/model.pbtxt\n"
             f"{head}522] Found profile for module jit_step, using profile guided latency estimator\n")
    log = parse_xla_log(found + (FIXTURES / "xla-logs" / "mlp_offload.approx.log").read_text())
    assert log.profile == "/tmp/model.pbtxt" and log.estimator == "approximate" and log.cycles_are_us
    # A profile named but not used for this module leaves the estimator's units.
    unused = parse_xla_log(found.splitlines()[0] + "\n" + (FIXTURES / "xla-logs" / "mlp_offload.approx.log").read_text())
    assert unused.profile is None and not unused.cycles_are_us
