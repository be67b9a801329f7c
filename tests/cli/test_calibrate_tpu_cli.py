"""``hloscope calibrate`` on real TPU v5e runs, as a user runs it: written only when it helps (issue 51, item 3).

Runs: fixtures/measured/tpu_v5e/ and tpu_v5e_blocks/ (README.md there; each run's facts.json read with JAX's own
reader). Read by hand for these tests: big's measured step 187.23 ms (median of 187.218 / 187.234 / 187.241);
the datasheet tpu-v5e, at the shares of HBM and the MXU the chip achieves (0.80, 0.95), simulates big at
187.94 ms (+0.4%). opt_device (an f32 momentum kept on the chip) runs its matmul fusions at ~171 TFLOP/s
against ~187 in the MLP runs, so its fit over-prices big_remat: +0.0% with the datasheet, +8.9% calibrated on
opt_device. mha_remat (the MHA block, nothing saved) measured 46.33 ms (46.32 / 46.34 / 46.33).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED
from hloscope.targets import get_target
from tests.conftest import FIXTURES

RUNS = FIXTURES / "measured" / "tpu_v5e"


def _folder(case: str) -> Path:
    return RUNS / case if (RUNS / case).is_dir() else RUNS.parent / "tpu_v5e_blocks" / case


def _run(case: str) -> list[str]:
    return [str(_folder(case) / "profile" / "step.xplane.pb"), str(_folder(case) / "step.hlo.txt")]


def _nospread(tmp_path: Path) -> list[str]:
    """``--target`` of tpu-v5e with no run_spread: every figure fitted is weighed by the step alone (the fit's
    mechanics; with the spread, no v5e run strays far enough to be adopted: test_default_...)."""
    path = tmp_path / "v5e-nospread.toml"
    path.write_text('base = "tpu-v5e"\nname = "v5e-nospread"\n\n[run_spread]\n')
    return ["--target", str(path)]


def test_default_a_block_run_within_the_spread_writes_nothing(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # gqa_off's fitted HBM figure is 1.06x v5e's, its bf16 peak 0.95x, its link H->D 1.00x: within tpu-v5e's
    # run_spread (0.181, 0.09, 0.033), so nothing is adopted, and the datasheet stays at -0.9% of its step
    out = tmp_path / "gqa.toml"
    assert main(["calibrate", *_run("gqa_off"), "-o", str(out)]) == EXIT_CHECK_FAILED
    got = capsys.readouterr()
    assert not out.exists() and got.err.count("\n") == 1
    assert got.err.startswith(f"hloscope: error: {out} not written: every figure this profile fits lies within the "
                              "spread of the runs tpu-v5e was fitted on")
    assert "adopted: none (the datasheet): step 272.40 ms (-0.9%) against the datasheet's -0.9%" in got.out
    assert any(line.startswith("  host transfer (waits at its dones)  6    15.50 ms   16.37 ms ")
               for line in got.out.splitlines())


def test_a_target_worse_on_the_held_out_run_is_not_written(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "opt.toml"
    assert main(["calibrate", *_run("opt_device"), *_nospread(tmp_path), "-o", str(out), "--check-on",
                 *_run("big_remat")]) \
        == EXIT_CHECK_FAILED
    got = capsys.readouterr()
    assert not out.exists()
    assert got.err.count("\n") == 1 and got.err.startswith(f"hloscope: error: {out} not written: on the held-out run "), \
        got.err
    assert "the calibrated step is +8.9% against the datasheet's +0.0%; keep the datasheet target v5e-nospread" in got.err
    # the fit itself is shown: in sample it helped (-8.1% -> -0.5%), held out it did not
    assert "adopted: compute: step 41.90 ms (-0.5%) against the datasheet's -8.1%" in got.out.splitlines()


def test_held_out_error_is_printed_and_the_target_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sq.toml"
    assert main(["calibrate", *_run("square"), *_nospread(tmp_path), "-o", str(out), "--check-on", *_run("big")]) == 0
    lines = capsys.readouterr().out.splitlines()
    held = next(line for line in lines if line.startswith("held-out step ("))
    # square adopts its host link only (its compute figures put its own step further off): big is as before
    assert "measured median 187.23 ms; datasheet 187.94 ms (+0.4%), calibrated 187.94 ms (+0.4%)" in held
    assert any(line.startswith("in-sample step (") and "measured median 113.33 ms" in line for line in lines)
    assert get_target(str(out)).calibrated_step_error == pytest.approx(0.0054)


def test_a_calibration_worse_in_sample_is_not_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a target calibrated on opt_device, already within 0.3% of opt_host's step
    base = tmp_path / "od.toml"
    assert main(["calibrate", *_run("opt_device"), *_nospread(tmp_path), "-o", str(base)]) == 0
    capsys.readouterr()
    # When it is calibrated again on opt_host: every fitted combination puts the step further off
    out = tmp_path / "again.toml"
    assert main(["calibrate", *_run("opt_host"), "--target", str(base), "-o", str(out)]) == EXIT_CHECK_FAILED
    got = capsys.readouterr()
    assert not out.exists() and got.err.count("\n") == 1
    assert (f"{out} not written: every combination of fitted figures put the in-sample step further off than the "
            "datasheet's +0.3% (nearest: compute, +0.6%); keep the datasheet target od") in got.err


def test_analyze_with_the_written_target_prints_a_band_that_holds_the_run(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "big.toml"
    assert main(["calibrate", *_run("big"), *_nospread(tmp_path), "-o", str(out)]) == 0
    assert "# kernel_launch_us: no per-op time on this platform" in out.read_text()
    capsys.readouterr()
    assert main(["analyze", str(RUNS / "big" / "step.hlo.txt"), "--target", str(out), "--json"]) == 0
    low, high = sorted(json.loads(capsys.readouterr().out)["summary"]["margins"]["corner_step_us"])
    assert low <= 187234.1 <= high


def test_check_on_takes_a_profile_and_its_hlo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.toml"
    assert main(["calibrate", *_run("big"), "-o", str(out), "--check-on", *_run("small"), "x"]) == EXIT_BAD_INPUT
    assert "--check-on takes a profile and its HLO, not 3 paths" in capsys.readouterr().err


def test_a_bad_calibrated_step_error_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('base = "tpu-v5e"\nname = "bad"\ncalibrated_step_error = -1.5\n')
    assert main(["analyze", str(RUNS / "big" / "step.hlo.txt"), "--target", str(bad)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "target field 'calibrated_step_error' must be a number above -1" in err and err.count("\n") == 1


def test_a_profile_of_the_models_own_times_gives_back_the_datasheet(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # Given big's PGLE profile of the model's own estimates (no step time: the fit is not checked against one)
    prof = tmp_path / "own.pbtxt"
    hlo = str(RUNS / "big" / "step.hlo.txt")
    assert main(["analyze", hlo, "--format", "pgle", "-o", str(prof)]) == 0
    capsys.readouterr()
    # With tpu-v5e's spread, figures fitted to the model's own times are the datasheet's: nothing is written
    kept = tmp_path / "kept.toml"
    assert main(["calibrate", str(prof), hlo, "-o", str(kept)]) == EXIT_CHECK_FAILED
    assert not kept.exists() and "lies within the spread of the runs tpu-v5e was fitted on" in capsys.readouterr().err
    # Without it, the file written holds the datasheet's figures
    out = tmp_path / "own.toml"
    assert main(["calibrate", str(prof), hlo, *_nospread(tmp_path), "-o", str(out)]) == 0
    assert "step: the profile times no step, so the fit is not checked against one" in capsys.readouterr().out
    t, base = get_target(str(out)), get_target("tpu-v5e")
    assert t.hbm_bandwidth == pytest.approx(base.hbm_bandwidth, rel=1e-3)
    assert t.peak_bf16_flops == pytest.approx(base.peak_bf16_flops, rel=1e-3)
    assert t.kernel_launch_us == 0.0 and t.calibrated_step_error == 0.0


@pytest.mark.parametrize(("case", "measured_us"), [("big", 187234.1), ("mha_remat", 46330.0)])
def test_the_written_target_gives_back_the_step_calibrate_adopted(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                case: str, measured_us: float) -> None:
    # Given the file calibrate writes for a run (its figures the datasheet's scaled, its shares written out)
    out = tmp_path / f"{case}.toml"
    assert main(["calibrate", *_run(case), *_nospread(tmp_path), "-o", str(out)]) == 0
    adopted = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("adopted: "))
    step_ms = float(adopted.split(": step ")[1].split(" ms")[0])
    text = out.read_text()
    assert "\nhbm_efficiency = 0.8  # " in text and "\nmxu_efficiency = 0.95  # " in text
    # When analyze reads it back
    assert main(["analyze", str(_folder(case) / "step.hlo.txt"), "--target", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    # Then the step is the one calibrate adopted (the shares applied once), within 5% of the measured one,
    # and the band holds the run
    step_us = summary["simulated_step"]["step_us"]
    assert step_us / 1e3 == pytest.approx(step_ms, abs=0.005)
    assert abs(step_us / measured_us - 1) <= 0.05
    low, high = sorted(summary["margins"]["corner_step_us"])
    assert low <= measured_us <= high
