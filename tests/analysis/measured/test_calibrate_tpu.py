"""``calibrate`` on the real TPU v5e runs (fixtures/measured/tpu_v5e/; issue 51, item 3): a calibration that
only ever helps.

Facts read by hand, independent of hloscope (fixtures/measured/tpu_v5e/README.md and each run's facts.json,
written by read_facts.py with JAX's own ProfileData):
- the TensorCore sat idle between ops 0.020 ms of big's 187.23 ms step (facts.json ``xla_ops_idle_ms``
  0.0201-0.0203), 0.001 ms of opt_host's 66.78 ms, 0.022 ms of two's 270.94 ms: no per-op time;
- every host DMA timed by its own work ran 14.74-14.75 GB/s to host and 14.19 GB/s to device;
- in ``two`` the 32 MiB copy issued 6 ns after a 128 MiB one waited until all 160 MiB had moved:
  11.378 ms to host (14.745 GB/s in total), 11.823 ms to device (14.19 GB/s);
- in ``opt_host_big`` three copies to host were issued during compute and were done before their dones
  (timed to the done: an upper bound); the five issued together at the last fusion's end were waited for,
  the first 4.552 ms after its issue (64 MiB at 14.74 GB/s).
Before this issue calibrate fitted a 105-269 us per-op time to these runs and put the in-sample step +10%
to +33% off (big: -3.7% -> +9.8%), with the band outside the run. The datasheet tpu-v5e prices its ops at the
shares of HBM and of the MXU the chip achieved (0.80, 0.95) and its host link at 14.74 / 14.19 GB/s: the fit
scales its figures on top of those shares, which the target file keeps.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from hloscope.analysis.calibration import STEP_TOLERANCE, CalibrationRun, Refusal, calibrate_step, judge_step
from hloscope.analysis.inputs import StepInputs
from hloscope.analysis.measured.calibrate import GAP_SHARE, FigureGroup, Unfitted, idle_gaps
from hloscope.analysis.measured.compare import MeasuredProfile
from hloscope.analysis.measured.read import parse_measured
from hloscope.analysis.report import analyze_step
from hloscope.artifact import read_step
from hloscope.hlo.profile_files import read_measured_file
from hloscope.targets import TpuTarget, get_target
from hloscope.vocab import Direction

RUNS = Path(__file__).resolve().parents[3] / "fixtures" / "measured" / "tpu_v5e"
CASES = sorted(p.name for p in RUNS.iterdir() if (p / "facts.json").is_file())
#: The transformer-block runs with a profile (tpu_v5e_blocks/README.md: the MHA block offloaded and its remat twin).
BLOCKS = RUNS.parent / "tpu_v5e_blocks"
BLOCK_CASES = sorted(p.name for p in BLOCKS.iterdir() if (p / "facts.json").is_file())


def _facts(case: str) -> dict:  # type: ignore[type-arg]
    return json.loads((_folder(case) / "facts.json").read_text())  # type: ignore[no-any-return]


def _folder(case: str) -> Path:
    return RUNS / case if (RUNS / case).is_dir() else BLOCKS / case


def _calibrate(case: str, spread: bool = True) -> CalibrationRun:
    """``case`` calibrated on itself from tpu-v5e, or (``spread=False``) from tpu-v5e without its run_spread:
    every figure fitted beyond the target's own is then weighed by the step alone (the fit's mechanics)."""
    base = get_target("tpu-v5e") if spread else replace(get_target("tpu-v5e"), run_spread=())
    step = read_step(str(_folder(case) / "step.hlo.txt"), base)
    profile = parse_measured(read_measured_file(str(_folder(case) / "profile" / "step.xplane.pb")))
    return calibrate_step(step.inputs, base, profile, f"v5e-{case}")


def _run_of(case: str) -> tuple[StepInputs, MeasuredProfile]:
    step = read_step(str(_folder(case) / "step.hlo.txt"), "tpu-v5e")
    return step.inputs, parse_measured(read_measured_file(str(_folder(case) / "profile" / "step.xplane.pb")))


def _figure(run: CalibrationRun, name: str) -> tuple[float, Unfitted]:
    f = next(f for f in run.calibration.figures if f.name == name)
    return f.after, f.unfitted


def test_twelve_runs() -> None:
    assert len(CASES) == 12


@pytest.mark.parametrize("case", ["big", "opt_host", "two"])
def test_the_idle_time_between_ops_is_the_profiles(case: str) -> None:
    # facts.json's xla_ops_idle_ms, per profiled step: big 0.0201-0.0203, opt_host 0.0010-0.0011, two 0.0223-0.0224
    step = read_step(str(RUNS / case / "step.hlo.txt"), "tpu-v5e")
    profile = parse_measured(read_measured_file(str(RUNS / case / "profile" / "step.xplane.pb")))
    gaps = idle_gaps(analyze_step(step.inputs, step.target).index, profile)
    assert gaps is not None
    idle = [s["xla_ops_idle_ms"] * 1e3 for s in _facts(case)["per_step"]]
    assert min(idle) - 0.5 <= gaps.idle_us <= max(idle) + 0.5
    assert gaps.step_us == pytest.approx(statistics.median(s["module_ms"] for s in _facts(case)["per_step"]) * 1e3,
                                         abs=1.0)
    assert not gaps.shows_gaps and gaps.idle_us < GAP_SHARE * gaps.step_us


#: The block runs of the first two sessions on the chip; the ``gx*`` runs and ``gpt2xl_off16`` came after, to
#: measure the fused MLP chain (tpu_v5e_blocks/README.md).
FIRST_BLOCKS = ["gpt2xl_off", "gpt2xl_remat", "gqa_dev", "gqa_mlpoff", "gqa_mlpremat", "gqa_off", "gqa_remat",
                "mha2k_off", "mha2k_remat", "mha_off", "mha_remat"]


def test_twenty_two_profiled_block_runs() -> None:
    later = ["gpt2xl_off16", "gx12800_off", "gx12800_remat", "gx3200_off", "gx3200_remat", "gx7200_off",
             "gx7200_remat", "gx8000_off", "gx8000_remat", "gxb10_off", "gxb10_remat"]
    assert sorted([*FIRST_BLOCKS, *later]) == BLOCK_CASES


@pytest.mark.parametrize("case", CASES + BLOCK_CASES)
def test_no_v5e_run_is_fitted_beyond_the_spread_of_the_runs_v5e_was_fitted_on(case: str) -> None:
    # Given one real run, calibrated on itself from the datasheet tpu-v5e, whose run_spread is the largest departure
    # of one fit run's figure from v5e's own (HBM 0.819-1.042 of it, bf16 peak 0.911-1.016, host link D->H
    # 0.967-1.001: benchmarks/tpu_accuracy.py --spread)
    run = _calibrate(case)
    base = get_target("tpu-v5e")
    measured = statistics.median(s["module_ms"] for s in _facts(case)["per_step"]) * 1e3
    # Then no figure strays further than that, so nothing is adopted and no target is written
    assert run.refused is Refusal.WITHIN_SPREAD and run.kept == ()
    assert not any(f.unfitted is Unfitted.FITTED for f in run.calibration.figures)
    within = [f for f in run.calibration.figures if f.unfitted is Unfitted.WITHIN_SPREAD]
    assert within and all(abs(f.after / f.before - 1) <= (base.spread_of(f.name) or 0) for f in within)
    # And the run is priced as the datasheet prices it: the first blocks within 3% of the chip (the largest miss
    # -2.9%), the fused-MLP runs measured after them within 3.5% (gx7200_remat -3.4%, gx8000_remat -3.1%)
    e = run.in_sample
    assert e is not None and e.measured_us == pytest.approx(measured, rel=1e-4)
    assert e.calibrated_us == e.datasheet_us
    if case in BLOCK_CASES:
        assert abs(e.datasheet_error) <= min(STEP_TOLERANCE, 0.03 if case in FIRST_BLOCKS else 0.035)


def test_unpriced_the_fused_mlp_chain_is_fitted_beyond_the_spread_and_refused_on_its_twin() -> None:
    # gpt2xl_off (d 1600, 25 heads of 64; held out of every fit): its MLP is one fusion of two matmuls
    # (fusion.394, 335.5 GFLOP) that the chip ran in 2890 us, its remat twin's same fusion (fusion.426, the input
    # in VMEM) in 1972 us. Without the chain's re-read input priced (chain_input_rate 0, as before it was
    # measured) the model says 1893 us, so the run's bf16 peak fits at 0.894x v5e's, beyond the spread's 0.09:
    # calibrate adopts it, in sample -1.8% -> +1.7%
    unpriced = replace(get_target("tpu-v5e"), chain_input_rate=0.0)
    step = read_step(str(_folder("gpt2xl_off") / "step.hlo.txt"), unpriced)
    prof = parse_measured(read_measured_file(str(_folder("gpt2xl_off") / "profile" / "step.xplane.pb")))
    run = calibrate_step(step.inputs, unpriced, prof, "g")
    peak, why = _figure(run, "peak_bf16_flops")
    assert why is Unfitted.FITTED and round(peak / 197e12, 3) == 0.894
    assert run.refused is None and run.kept == (FigureGroup.COMPUTE,)
    e = run.in_sample
    assert e is not None and abs(e.calibrated_error) <= min(STEP_TOLERANCE, abs(e.datasheet_error))
    assert run.band_us is not None and run.band_us[0] <= e.measured_us <= run.band_us[1]
    # But one scale carries one fusion's miss to every op: its remat twin goes from -0.9% to +5.2%, and --check-on
    # refuses it there
    inputs, profile = _run_of("gpt2xl_remat")
    held = calibrate_step(step.inputs, unpriced, prof, "g", held_out=(inputs, profile))
    assert held.refused is Refusal.WORSE_HELD_OUT and held.held_out is not None
    assert round(held.held_out.datasheet_error, 3) == -0.009 and round(held.held_out.calibrated_error, 3) == 0.052
    # With the chain priced (tpu-v5e's 28.9 GB/s, fitted on gx8000_off and gxb10_off) the same profile fits within
    # the spread: nothing is adopted, and the run is priced at -1.2% (the test above)
    assert _calibrate("gpt2xl_off").refused is Refusal.WITHIN_SPREAD


def test_without_the_spread_a_block_fit_puts_other_programs_further_off() -> None:
    # gqa_off fitted with no spread adopts its compute figures (HBM 1.06x, bf16 0.95x v5e's) and its link: in
    # sample nearer the chip, but the MHA block it never saw goes further off (from -2.55%, faster still)
    run = _calibrate("gqa_off", spread=False)
    assert run.kept == (FigureGroup.COMPUTE, FigureGroup.HOST_LINK)
    assert run.in_sample is not None and abs(run.in_sample.calibrated_error) < abs(run.in_sample.datasheet_error)
    inputs, profile = _run_of("mha_remat")
    other, _ = judge_step(inputs, get_target("tpu-v5e"), run.calibration.target, profile)
    assert round(other.datasheet_error, 4) == -0.0255 and other.calibrated_error < other.datasheet_error
    assert not other.helps
    # With the spread, the same profile adopts nothing: mha_remat is priced as the datasheet prices it
    assert _calibrate("gqa_off").refused is Refusal.WITHIN_SPREAD


def test_a_target_far_from_the_chip_is_fitted_beyond_the_spread(tmp_path: Path) -> None:
    # Given tpu-v5e with its MXU share halved (a target file a user got wrong): the model prices mha_remat's
    # matmuls at twice the chip's time
    wrong = replace(get_target("tpu-v5e"), name="v5e-wrong", mxu_efficiency=0.475)
    step = read_step(str(BLOCKS / "mha_remat" / "step.hlo.txt"), wrong)
    profile = parse_measured(read_measured_file(str(BLOCKS / "mha_remat" / "profile" / "step.xplane.pb")))
    run = calibrate_step(step.inputs, wrong, profile, "fixed")
    # Then the bf16 peak is fitted about 2x beyond the spread and adopted, and the step comes back within 5%
    peak, why = _figure(run, "peak_bf16_flops")
    assert why is Unfitted.FITTED and peak / 197e12 > 1 + (wrong.spread_of("peak_bf16_flops") or 0)
    assert run.refused is None and FigureGroup.COMPUTE in run.kept
    e = run.in_sample
    assert e is not None and e.datasheet_error > 0.4 and abs(e.calibrated_error) <= STEP_TOLERANCE


@pytest.mark.parametrize("case", CASES + BLOCK_CASES)
def test_without_the_spread_calibrate_only_ever_helps_in_sample(case: str) -> None:
    # Given one real run, calibrated on itself with no spread (every figure weighed by the step alone)
    run = _calibrate(case, spread=False)
    if run.refused is Refusal.WORSE_IN_SAMPLE:  # every combination put the step further off: the datasheet is kept
        assert case in ("gpt2xl_remat", "gx12800_remat", "gx3200_remat", "gxb10_remat")
        assert run.in_sample is not None
        assert abs(run.in_sample.calibrated_error) > abs(run.in_sample.datasheet_error)
        return
    measured = statistics.median(s["module_ms"] for s in _facts(case)["per_step"]) * 1e3
    e = run.in_sample
    assert run.refused is None and e is not None
    assert e.measured_us == pytest.approx(measured, rel=1e-4)
    # Then no per-op time (the TensorCore was never idle), the step within 5%, never worse than the datasheet
    assert _figure(run, "kernel_launch_us") == (0.0, Unfitted.NO_GAPS)
    assert run.calibration.target.kernel_launch_us == 0.0
    assert abs(e.calibrated_error) <= STEP_TOLERANCE
    assert abs(e.calibrated_error) <= abs(e.datasheet_error)
    # And the band analyze prints with the written target holds the run it was fitted on
    assert run.band_us is not None or not _facts(case)["host_transfers"]
    if run.band_us is not None:
        assert run.band_us[0] <= measured <= run.band_us[1]
    assert run.calibration.target.calibrated_step_error == pytest.approx(e.calibrated_error, abs=1e-4)


def test_queued_transfers_are_fitted_from_their_busy_periods() -> None:
    # two: every 32 MiB copy queued behind a 128 MiB one (README: 160 MiB in 11.378 / 11.823 ms)
    run = _calibrate("two", spread=False)
    to_host, why = _figure(run, "host_link_achieved_to_host")
    to_device, why_d = _figure(run, "host_link_achieved_to_device")
    assert why is why_d is Unfitted.FITTED
    assert to_host == pytest.approx(160 * 2**20 / 11.378e-3, rel=2e-3)
    assert to_device == pytest.approx(160 * 2**20 / 11.823e-3, rel=2e-3)
    # the host link is adopted; a latency is not told apart from busy periods
    assert FigureGroup.HOST_LINK in run.kept
    assert _figure(run, "host_dma_latency_us")[1] is Unfitted.NO_LATENCY


def test_a_copy_timed_to_its_done_is_not_a_sample() -> None:
    # opt_host_big: three copies to host done before their dones, then five waited for in one queue
    run = _calibrate("opt_host_big", spread=False)
    to_host, why = _figure(run, "host_link_achieved_to_host")
    assert why is Unfitted.FITTED and to_host == pytest.approx(14.74e9, rel=5e-3)
    # nothing was waited for on the way back: the datasheet's achieved figure (tpu-v5e's 14.19 GB/s), and why
    assert _figure(run, "host_link_achieved_to_device") == (14.19e9, Unfitted.HIDDEN)
    assert run.calibration.target.host_link_bandwidth(Direction.TO_DEVICE) == 14.19e9


def test_a_group_that_puts_the_step_further_off_is_left_out() -> None:
    # square (113.33 ms measured): its compute figures fit its ops, but with them the simulated step is +0.70%
    # (with the link) or +0.71% (alone), against the datasheet's +0.54%: only the link is adopted (+0.53%)
    run = _calibrate("square", spread=False)
    assert run.kept == (FigureGroup.HOST_LINK,)
    assert {t.groups: round(t.step_us / run.in_sample.measured_us - 1, 4)  # type: ignore[union-attr]
            for t in run.trials} == {(FigureGroup.COMPUTE, FigureGroup.HOST_LINK): 0.0070,
                                     (FigureGroup.COMPUTE,): 0.0071, (FigureGroup.HOST_LINK,): 0.0053}
    bw, why = _figure(run, "hbm_bandwidth")
    assert why is Unfitted.DROPPED and bw != 819e9
    assert run.calibration.target.hbm_bandwidth == 819e9 and run.calibration.target.peak_bf16_flops == 197e12


def test_bf16_matmuls_scale_the_bf16_peak_on_top_of_the_mxu_share() -> None:
    # big's seven matmul fusions are bf16 convolutions (bf16[8192,8192] ... convolution in step.hlo.txt): the
    # figure they scale is peak_bf16_flops, though the model prices them at 0.95 of it (mxu_efficiency)
    run = _calibrate("big", spread=False)
    peak, why = _figure(run, "peak_bf16_flops")
    assert why is Unfitted.FITTED and _figure(run, "peak_fp32_flops")[1] is Unfitted.NO_SAMPLES
    t = run.calibration.target
    assert isinstance(t, TpuTarget) and (t.hbm_efficiency, t.mxu_efficiency) == (0.80, 0.95)
    # the shares are kept, not applied twice: the priced peak is the GEMMs' achieved rate (187.3 TFLOP/s)
    gemm = next(r for r in run.calibration.rates if r.work == "gemm")
    assert gemm.value is not None and peak * t.mxu_efficiency == pytest.approx(gemm.value, rel=5e-3)
    assert peak == pytest.approx(197e12, rel=5e-3)


#: The earlier run of `big` (issue 42), outside the repository: ../shared/measured/tpu-v5e beside the checkout.
SHARED = next((p for p in (RUNS.parents[2].parent / "shared" / "measured" / "tpu-v5e" / "offload_scan_8x128MiB",
                           RUNS.parents[2].parent.parent / "shared" / "measured" / "tpu-v5e" / "offload_scan_8x128MiB")
               if p.is_dir()), None)


@pytest.mark.skipif(SHARED is None, reason="needs ../shared/measured/tpu-v5e/offload_scan_8x128MiB (not in the repository)")
def test_the_shared_run_of_issue_42() -> None:
    # fixtures/measured/tpu_v5e/README.md read it with read_facts.py: "XLA Modules" steps 187.315 / 187.312 /
    # 187.330 ms (median 187.315); the model with the datasheet -3.7%. Before issue 51
    # calibrate fitted a 269 us per-op time here and put it at +9.8%, outside its own band.
    assert SHARED is not None
    step = read_step(str(next((SHARED / "dump").glob("*after_optimizations.txt"))), "tpu-v5e")
    profile = parse_measured(read_measured_file(str(SHARED / "profile" / "step.xplane.pb")))
    within = calibrate_step(step.inputs, step.target, profile, "shared")
    assert within.refused is Refusal.WITHIN_SPREAD and within.in_sample is not None
    assert abs(within.in_sample.datasheet_error) <= STEP_TOLERANCE
    nospread = replace(step.target, run_spread=())
    run = calibrate_step(step.inputs, nospread, profile, "shared")
    e = run.in_sample
    assert run.refused is None and e is not None and e.measured_us == pytest.approx(187315, abs=1)
    assert run.calibration.target.kernel_launch_us == 0.0
    assert abs(e.calibrated_error) <= min(STEP_TOLERANCE, abs(e.datasheet_error))
    assert run.band_us is not None and run.band_us[0] <= e.measured_us <= run.band_us[1]
