"""XLA's view of each transfer beside hloscope's (hloscope/analysis/simulate/xla_view.py).

mlp_offload.hlo.txt with the scheduler log of its own compile
(fixtures/xla-logs/mlp_offload.sol.log). Read by hand in that log:
- every host transfer's pair: "Fallback to wrapped estimator due to ComputeCollectiveTime
  failure for dynamic-slice-start.1, returning latency: 5000" (a fixed default);
- dynamic-slice-start.1's window holds loop_dynamic_slice_fusion.1 (0.0065 us),
  loop_dynamic_slice_fusion.2 (0.0785 us) and loop_dynamic_slice_fusion (0.0785 us),
  all "Fusion cost from gpu_performance_model": XLA expected 0.1635 us of work there;
- dynamic-update-slice-start.2's window holds gemm_fusion_dot.18 (3.744 us) and
  gemm_fusion_dot.19 (6.4 us) from the matmul interpolator and all-gather-start.1, whose
  collective time XLA computed as 31.648 us.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.analysis.inputs import StepInputs
from hloscope.analysis.report import analyze_step
from hloscope.hlo.parser import parse_hlo
from hloscope.hlo.xla_dumps import XlaDumpTexts
from hloscope.targets import get_target

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


@pytest.fixture(scope="module")
def report():
    module = parse_hlo((FIXTURES / "mlp_offload.hlo.txt").read_text(), "mlp_offload.hlo.txt")
    log = (FIXTURES / "xla-logs" / "mlp_offload.sol.log").read_text()
    return analyze_step(StepInputs(module, "mlp_offload", dumps=XlaDumpTexts(scheduler_log=log)),
                        get_target("h100-sxm"))


def test_every_transfer_has_xlas_latency_a_fixed_default(report):
    assert report.xla is not None and report.xla.estimator == "sol"
    for v in report.verdicts:
        x = report.xla.for_transfer(v.transfer.instruction.name)
        assert x is not None and x.latency_us == 5000.0 and x.default


def test_the_window_as_xla_priced_it(report):
    x = report.xla.for_transfer("dynamic-slice-start.1")
    assert (x.priced, x.window_ops) == (3, 3)
    assert x.window_us == pytest.approx(0.0065 + 0.0785 + 0.0785)
    y = report.xla.for_transfer("dynamic-update-slice-start.2")
    assert y.priced == y.window_ops == 11
    # the two GEMMs and the all-gather, plus eight small fusions and a copy (0.34625 us together)
    assert y.window_us == pytest.approx(3.744 + 6.4 + 31.648 + 0.34625)


def test_no_log_no_view():
    module = parse_hlo((FIXTURES / "mlp_offload.hlo.txt").read_text(), "mlp_offload.hlo.txt")
    assert analyze_step(StepInputs(module, "mlp_offload"), get_target("h100-sxm")).xla is None


def test_xlas_step_is_its_schedule_length_times_runs(report):
    # After scheduling (read in the log): region_0.1_spmd.clone 5000, region_3.4_spmd 5082.56,
    # main.6_spmd 5057.19; the loops run 3 and 4 times. XLA's step is ~40 ms because it gave
    # every host transfer 5000: our simulation of the same schedule is under 1 ms.
    assert report.xla.step_us == pytest.approx(5000 * 3 + 5082.56 * 4 + 5057.19)
    assert report.summary.step is not None and report.summary.step.step_us < 1000
    from hloscope.render.xla_words import xla_legend

    assert any(line.startswith("xla step: XLA's scheduler times its own schedule at 40.4 ms per step (with its SOL "
                               "estimator") for line in xla_legend(report))


def test_no_step_under_the_approximate_estimator():
    module = parse_hlo((FIXTURES / "mlp_offload.hlo.txt").read_text(), "mlp_offload.hlo.txt")
    log = (FIXTURES / "xla-logs" / "mlp_offload.approx.log").read_text()
    r = analyze_step(StepInputs(module, "mlp_offload", dumps=XlaDumpTexts(scheduler_log=log)), get_target("h100-sxm"))
    assert r.xla is not None and r.xla.step_us is None and r.xla.profile is None
