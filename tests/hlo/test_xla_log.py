"""XLA's latency-estimator log read into figures (hloscope/hlo/xla_log.py).

The logs are the unedited stderr of the mlp_offload fixture's compile
(fixtures/generate_xla_logs.py); every figure asserted here was read in them by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.hlo.parser import parse_hlo
from hloscope.hlo.xla_log import CostSource, LatencySource, parse_xla_log

pytestmark = pytest.mark.jax_version  # XLA 0.12's log beside 0.10's; the installed XLA's log format

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
        assert lat is not None and lat.source is LatencySource.DEFAULT and lat.us == 5000.0


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


# XLA 0.12 (jaxlib 0.12.0.1): the mlp offload compile's log (fixtures/generate_jax012_logs.py), with and
# without --memory-fraction 0.75. Read by hand: 38 modules start a section ("Fingerprint before LHS for
# module ..."), the step's is the last, jit_step(1), whose "Current limit" is 65278514323; the 7
# autotuning sub-modules that ran LHS log limits between 65282382229 and 65283487323 (80% of the HBM
# less their own tiny inputs), the largest of which was read as the limit before. With the fraction the
# step's limit is 61198295392, the sub-modules' are unchanged.
JAX012 = FIXTURES / "jax012" / "xla-logs"


@pytest.fixture(scope="module")
def log012() -> str:
    return (JAX012 / "mlp_offload.scheduler.log").read_text()


def test_the_step_modules_section_of_a_012_log(log012):
    log = parse_xla_log(log012, "jit_step")
    assert log.module == "jit_step(1)" and len(log.modules) == 38 and log.modules[-1] == "jit_step(1)"
    assert log.memory_limit_bytes == 65278514323
    assert [(s.computation, s.phase) for s in log.stats] == [
        (c, p) for p in ("before", "after") for c in ("region_0.1_spmd.clone", "region_3.4_spmd", "main.6_spmd")]
    after = log.after("main.6_spmd")
    assert after is not None and after.total_cycles == pytest.approx(5047.19) and after.memory_peak_bytes == 5038224
    assert log.after("region_3.4_spmd").total_cycles == 10082  # type: ignore[union-attr]
    # Figures of the step's own instructions; none of a sub-module's (param_0.11 is wrapped_dynamic-update-slice's).
    assert log.latency("all-gather-start.2").us == pytest.approx(31.648)  # type: ignore[union-attr]
    assert log.latency("dynamic-slice-start.1").source is LatencySource.DEFAULT  # type: ignore[union-attr]
    assert "param_0.11" not in log.node_costs and "get-tuple-element.66.0" not in log.node_costs
    # Without a name the last module that logged statistics is the step's.
    assert parse_xla_log(log012).module == "jit_step(1)"
    # A module the log does not name: the same fallback.
    assert parse_xla_log(log012, "jit_other").memory_limit_bytes == 65278514323


def test_the_allocators_share_moves_the_step_limit_on_012(log012):
    plain = parse_xla_log(log012, "jit_step").memory_limit_bytes
    shared = parse_xla_log((JAX012 / "mlp_offload.mem0.75.scheduler.log").read_text(), "jit_step")
    assert (plain, shared.memory_limit_bytes) == (65278514323, 61198295392)
    # Both are GetSchedulerMemoryLimit's (base - io) * 95 / 100 with the same io: 80% of the H100's
    # 80 GiB, then 75% of it (JAX's allocator at XLA_PYTHON_CLIENT_MEM_FRACTION=0.75).
    hbm = 80 * 2**30
    io_plain = hbm * 80 // 100 - plain * 100 // 95
    io_shared = int(hbm * 0.75) - shared.memory_limit_bytes * 100 // 95  # type: ignore[operator]
    assert abs(io_plain - io_shared) <= 1 and 5 * 2**20 < io_plain < 6 * 2**20


def test_autotuning_modules_no_longer_count_toward_the_step():
    """The reading before sections: the largest limit of any module, every module's statistics summed."""
    text = (JAX012 / "mlp_offload.scheduler.log").read_text()
    step = parse_xla_log(text, "jit_step")
    whole = [line for line in text.splitlines() if "For computation: entry_computation" in line]
    assert len(whole) == 14  # 7 sub-modules, before and after
    assert step.step_cycles({}) == pytest.approx(sum(s.total_cycles for s in step.stats if s.phase == "after"))
    assert {s.computation for s in step.stats}.isdisjoint({"entry_computation"})


# The memory figures jax 0.12.0.1 gave that compile with --memory-fraction 0.75 (its artifact's manifest):
# arguments + outputs - aliases = 5251072 + 5242940 - 5242880 = 5251132 B of inputs and outputs, which is
# what GetSchedulerMemoryLimit subtracts: (64424509440 - 5251132) * 95 // 100 = 61198295392, the logged limit.
_FIGURES_075 = {"argument_size_in_bytes": 5251072, "output_size_in_bytes": 5242940, "alias_size_in_bytes": 5242880,
                "temp_size_in_bytes": 5045824, "peak_memory_in_bytes": 10289236, "host_temp_size_in_bytes": 65536,
                "device_memory_size": 85899345920, "allocator_bytes": 64424509440}


@pytest.mark.parametrize("log_name, said", [("mlp_offload.mem0.75.scheduler.log", False),
                                            ("mlp_offload.scheduler.log", True)])
def test_a_fraction_that_did_not_reach_xla_is_said(log_name: str, said: bool) -> None:
    """With the fraction's own log the limits agree and nothing is said; with the log of a compile that
    planned for 80% of the HBM (the fraction lost on the way to XLA), the memory section says so."""
    from hloscope.analysis.inputs import StepInputs
    from hloscope.analysis.report import analyze_step
    from hloscope.hlo.xla_dumps import SCHEDULER_LOG_FILE, XlaDumpTexts
    from hloscope.render.memory_text import memory_lines
    from hloscope.targets import get_target

    module = parse_hlo((FIXTURES / "jax012" / "mlp_offload.hlo.txt").read_text(), "mlp_offload.hlo.txt")
    dumps = XlaDumpTexts.from_files({SCHEDULER_LOG_FILE: (JAX012 / log_name).read_text()})
    report = analyze_step(StepInputs(module, "x", memory_figures=_FIGURES_075, dumps=dumps), get_target("h100-sxm"))
    assert report.memory is not None and report.memory.pressure.scheduler_limit_bytes == 61198295392
    assert report.xla is not None
    text = "\n".join(memory_lines(report))
    assert "fits in the 60.0 GiB JAX's allocator takes of 80.0 GiB of HBM" in text
    assert ("--memory-fraction did not reach XLA's scheduler: its log gives this step a memory limit of "
            "65278514323 B, not the 61198295392 B" in text) is said
