"""Measured per-op times in place of the model (#19 calibration hook), on a synthetic profile.

The module is hand-written: a 4 MiB offload beside one f32 GEMM. By the model the GEMM takes
2 * 1024^3 FLOP / (64/132 of 67 TFLOP/s) + 1 us = 67.1 us against the transfer's 2 + 76.26 us:
partly hidden. A profile that measured the GEMM at 100 us hides it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.analysis.cost.calibration import match_profile, parse_profile, parse_profile_file
from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.report import analyze_module
from hloscope.analysis.simulate.overlap import AnalysisOptions
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.cli.main import main
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.parser import parse_hlo
from hloscope.hlo.profile_files import read_profile_file
from hloscope.targets import get_target

H100 = get_target("h100-sxm")

STEP = """HloModule one, is_scheduled=true, num_partitions=8

ENTRY %main (a: f32[1024,1024]) -> f32[1024,1024] {
  %a = f32[1024,1024]{1,0} parameter(0)
  %cs = (f32[1024,1024]{1,0:S(5)}, f32[1024,1024]{1,0}, u32[]) copy-start(%a)
  %m = f32[1024,1024]{1,0} dot(%a, %a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %cd = f32[1024,1024]{1,0:S(5)} copy-done(%cs)
  %ag = f32[8192,1024]{1,0} all-gather(%m), replica_groups=[1,8]<=[8], dimensions={0}
  ROOT %r = f32[1024,1024]{1,0} add(%m, %m)
}
"""

PGLE = """# a ProfiledInstructionsProto in text form
costs { name: "m" cost_us: 100.0 }
costs { name: "r" cost_us: 3.5 }
latencies { source: "ag" target: "ag" latency_us: 250.0 }
"""


def test_the_three_forms_read_the_same_times() -> None:
    want = {"m": 100.0, "r": 3.5, "ag": 250.0}
    assert parse_profile(PGLE) == want
    assert parse_profile(json.dumps(want)) == want
    assert parse_profile(json.dumps({"costs": [{"name": k, "cost_us": v} for k, v in want.items()]})) == want
    assert parse_profile("name,us\nm,100\n# a comment\nr,3.5\nag,250\n") == want


@pytest.mark.parametrize(("text", "words"), [
    ("", "empty"),
    ('costs { name: "m" cost_us: -1 }', "non-negative"),
    ('costs { cost_us: 3 }', "quoted name"),
    ('{"m": "fast"}', "number of µs"),
    ("[1, 2]", "map instruction names"),
    ("m\n", "'name,us'"),
    ("name,us\nm,nan\n", "non-negative"),
])
def test_a_bad_profile_is_one_error_naming_it(text: str, words: str) -> None:
    with pytest.raises(HloscopeError) as e:
        parse_profile(text, "p.txt")
    assert e.value.exit_code == EXIT_BAD_INPUT and "p.txt" in str(e.value) and words in str(e.value)


def test_measured_times_replace_the_model() -> None:
    m = parse_hlo(STEP)
    model = CostModel(ModuleIndex(m), H100)
    gemm = m.entry.by_name["m"]
    assert model.op_cost(gemm).us == pytest.approx(2 * 1024**3 / (64 / 132) / 67e12 * 1e6 + 1.0)
    measured = CostModel(ModuleIndex(m), H100, measured=parse_profile(PGLE))
    assert measured.op_cost(gemm).us == 100.0
    assert measured.op_cost(gemm).flops == model.op_cost(gemm).flops  # the facts stay the model's
    assert measured.collective_us(m.entry.by_name["ag"]) == 250.0  # a latency entry times the collective
    assert match_profile({"m": 1.0, "nope": 2.0}, m).unknown == ("nope",)


def test_a_profile_changes_the_verdict() -> None:
    m = parse_hlo(STEP)
    plain = analyze_module(m, H100).verdict_for("cs")
    assert plain is not None and str(plain.verdict) == "partial"
    options = AnalysisOptions(measured_us=tuple(parse_profile(PGLE).items()))
    calibrated = analyze_module(m, H100, options).verdict_for("cs")
    assert calibrated is not None and str(calibrated.verdict) == "hidden"
    assert calibrated.est_compute_us == pytest.approx(100.0)


def test_analyze_profile_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hlo = tmp_path / "step.hlo.txt"
    hlo.write_text(STEP)
    prof = tmp_path / "profile.pbtxt"
    prof.write_text(PGLE + 'costs { name: "elsewhere.1" cost_us: 9 }\n')
    assert main(["analyze", str(hlo), "--profile", str(prof), "--json"]) == 0
    out = capsys.readouterr()
    (t,) = json.loads(out.out)["transfers"]
    assert t["verdict"] == "hidden"
    assert "3 of 4 times name an instruction of this module (not: elsewhere.1)" in out.err
    assert main(["analyze", str(hlo), "--profile", str(tmp_path / "missing.csv")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot read profile" in err[0]
    assert parse_profile_file(read_profile_file(prof))["m"] == 100.0
