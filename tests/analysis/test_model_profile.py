"""The cost model's figures as an XLA profile (``--format pgle``), on hand-computed cases.

The module is the calibration test's hand-written step (8 H100s): a 4 MiB copy to host
beside one f32 GEMM, then an all-gather of the GEMM's 4 MiB result over the 8 GPUs.
By hand: the copy 2 us DMA setup + 4 MiB at 55 GB/s; the GEMM
2 * 1024^3 FLOP at 64/132 of 67 TFLOP/s + 1 us launch; the all-gather 5 us launch +
7 ring steps of 2.5 us + 7/8 of its 32 MiB result at 450 GB/s.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.analysis.cost.calibration import parse_profile, parse_profile_file
from hloscope.analysis.model_profile import ProfileSource, model_profile
from hloscope.analysis.report import analyze_module
from hloscope.analysis.simulate.overlap import AnalysisOptions
from hloscope.cli.main import main
from hloscope.hlo.parser import parse_hlo
from hloscope.hlo.profile_files import read_profile_file
from hloscope.render import render_to_string
from hloscope.render.pgle import proto_string
from tests.analysis.cost.test_cost_calibration import H100, STEP

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_each_entry_is_the_models_figure_computed_by_hand() -> None:
    report = analyze_module(parse_hlo(STEP), H100)
    prof = model_profile(report)
    got = {c.name: (c.us, c.source) for c in prof.costs}
    assert got["cs"] == (pytest.approx(2 + 4 * 2**20 / report.cost.link_bandwidth("to_host") * 1e6),
                         ProfileSource.HOST_TRANSFER)
    assert report.cost.link_bandwidth("to_host") == 55e9
    assert got["m"] == (pytest.approx(2 * 1024**3 / (64 / 132) / 67e12 * 1e6 + 1.0), ProfileSource.COMPUTE)
    assert got["ag"] == (pytest.approx(5 + 7 * 2.5 + 7 / 8 * 32 * 2**20 / 450e9 * 1e6), ProfileSource.COLLECTIVE)
    assert got["r"] == (pytest.approx(report.cost.instruction_us(report.module.entry.by_name["r"])),
                        ProfileSource.COMPUTE)
    # parameters, the copy's done and the free ops cost nothing and are not listed
    assert set(got) == {"cs", "m", "ag", "r"}


def test_the_text_reads_back_as_the_same_profile_and_changes_no_estimate() -> None:
    module = parse_hlo((FIXTURES / "llama_offload.hlo.txt").read_text())
    report = analyze_module(module, H100)
    text = render_to_string("pgle", report)
    assert text.startswith("# hloscope cost model for module ")
    back = parse_profile(text, "model.pbtxt")
    want = model_profile(report).as_dict()
    assert back.keys() == want.keys() and all(back[k] == pytest.approx(want[k], abs=5e-4) for k in want)
    assert model_profile(report).count(ProfileSource.HOST_TRANSFER) == sum(
        1 for t in report.transfers if t.is_async)
    # Fed back as "measured" times, the model's own figures leave the simulated step as it was
    # (up to the text's rounding to 1e-3 us per entry).
    again = analyze_module(module, H100, options=AnalysisOptions(measured_us=tuple(sorted(back.items()))))
    assert report.summary.step is not None and again.summary.step is not None
    slack = len(want) * 5e-4
    assert again.summary.step.step_us == pytest.approx(report.summary.step.step_us, abs=slack)
    assert again.summary.est_exposed_us_per_step == pytest.approx(report.summary.est_exposed_us_per_step, abs=slack)
    assert [v.verdict for v in again.verdicts] == [v.verdict for v in report.verdicts]


def test_a_rematerialized_clone_is_listed_under_its_scheduling_name() -> None:
    text = STEP.replace("%m = f32[1024,1024]{1,0} dot(%a, %a), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                        "%m = f32[1024,1024]{1,0} dot(%a, %a), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
                        'metadata={scheduling_name="gemm.7"}')
    names = [c.name for c in model_profile(analyze_module(parse_hlo(text), H100)).costs]
    assert "gemm.7" in names and "m" not in names


@pytest.mark.parametrize("name", ['a"b', "back\\slash", "naïve", "new\nline"])
def test_names_are_escaped_as_protobuf_text_and_read_back(name: str) -> None:
    quoted = proto_string(name)
    assert "\n" not in quoted and quoted.isascii()
    assert parse_profile(f"costs {{ name: {quoted} cost_us: 1.5 }}\n") == {name: 1.5}


def test_cli_writes_the_profile_to_the_chosen_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "model.pbtxt"
    assert main(["analyze", str(FIXTURES / "llama_offload.hlo.txt"), "--format", "pgle", "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    prof = parse_profile_file(read_profile_file(str(out)))
    assert "dynamic-slice-start.2.0" in prof and prof["dynamic-slice-start.2.0"] > 2.0
