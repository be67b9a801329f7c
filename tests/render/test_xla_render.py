"""XLA's scheduler estimates shown beside hloscope's: table, JSON and check output.

mlp_offload.hlo.txt with its own compile's scheduler log (fixtures/xla-logs): every host
transfer got XLA's fixed default latency, 5000 (read in the log: "returning latency: 5000").
Without a log nothing changes (the golden reports stay as they are).
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest

from hloscope.analysis.inputs import StepInputs
from hloscope.analysis.report import analyze_step
from hloscope.analysis.simulate.overlap import AnalysisOptions
from hloscope.analysis.simulate.verdict import Thresholds
from hloscope.check.config import CheckConfig
from hloscope.check.run import run_check
from hloscope.check.subject import Subject
from hloscope.hlo.parser import parse_hlo
from hloscope.hlo.xla_dumps import XlaDumpTexts
from hloscope.render import render_to_string
from hloscope.render.check.formats import get_check_format
from hloscope.render.json_report import report_to_dict
from hloscope.targets import get_target

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _report(log: str | None):
    module = parse_hlo((FIXTURES / "mlp_offload.hlo.txt").read_text(), "mlp_offload.hlo.txt")
    return analyze_step(StepInputs(module, "mlp_offload", dumps=XlaDumpTexts(scheduler_log=log)),
                        get_target("h100-sxm"))


@pytest.fixture(scope="module")
def with_log():
    return _report((FIXTURES / "xla-logs" / "mlp_offload.sol.log").read_text())


def test_table_has_xlas_latency_beside_ours(with_log):
    text = render_to_string("table", with_log)
    header = next(line for line in text.splitlines() if line.startswith("transfer "))
    assert header.index("~xfer us") < header.index("xla us") < header.index("~hidden us")
    assert text.count("5000.0*") == 3
    assert "XLA's scheduler assumed 5.0 ms (its fixed default for any host transfer" in text
    assert "expected ~0.2 us of work in the window" in text  # dynamic-slice-start.1: 0.1635 us
    assert "* marks the fixed default" in text


def test_without_a_log_the_table_is_unchanged():
    text = render_to_string("table", _report(None))
    assert "xla us" not in text and "XLA's scheduler" not in text


def test_json_carries_xla_estimate_us(with_log):
    d = report_to_dict(with_log)
    # step_us: XLA's schedule length from its log (5000 x 3 + 5082.56 x 4 + 5057.19), tests/analysis/simulate/test_xla_view.py
    assert d["xla_scheduler"] == {"estimator": "sol", "profile": None, "step_us": 40387.4}
    by_name = {t["name"]: t for t in d["transfers"]}
    t = by_name["dynamic-update-slice-start.2"]
    assert t["xla_estimate_us"] == 5000.0 and t["xla_estimate_default"] is True
    assert t["xla_window_us"] == pytest.approx(42.138, abs=1e-3)
    assert "xla_estimate_us" not in report_to_dict(_report(None))["transfers"][0]


def test_approximate_estimator_shows_no_us(tmp_path):
    r = _report((FIXTURES / "xla-logs" / "mlp_offload.approx.log").read_text())
    assert r.xla is not None and r.xla.estimator == "approximate"
    text = render_to_string("table", r)
    assert "approximate latency estimator drove this schedule" in text
    assert all(t["xla_estimate_us"] is None for t in report_to_dict(r)["transfers"])


def test_check_output_names_what_xla_assumed():
    # On a host link slowed to 2 GB/s, dynamic-slice-start.1 (16 KiB: 2 us DMA setup + 8.2 us)
    # outlasts its window's three kernels (~3.2 us) and waits over 40% of its time: exposed once
    # the exposed threshold is 40%
    module = parse_hlo((FIXTURES / "mlp_offload.hlo.txt").read_text(), "mlp_offload.hlo.txt")
    log = (FIXTURES / "xla-logs" / "mlp_offload.sol.log").read_text()
    options = AnalysisOptions(thresholds=Thresholds(hidden_at_most=0.05, exposed_at_least=0.4))
    slow = dataclasses.replace(get_target("h100-sxm"), host_link_achieved_to_device=2e9)
    report = analyze_step(StepInputs(module, "mlp_offload", dumps=XlaDumpTexts(scheduler_log=log)),
                          slow, options)
    result = run_check(Subject(report, "mlp_offload"), CheckConfig(rules={"no-exposed": True}))
    assert not result.passed
    out = io.StringIO()
    get_check_format("text").render(result, out)
    assert "xla: XLA's scheduler assumed 5.0 ms" in out.getvalue()
