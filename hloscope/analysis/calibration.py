"""A calibration that only ever helps: ``calibrate_step(inputs, base, profile, name) -> CalibrationRun``.

The pipeline above :func:`~hloscope.analysis.measured.calibrate.fit_target` (which fits each figure
from the ops it prices): the step is analyzed with the datasheet target beside the profile; the
figures are fitted; then each combination of the fitted groups (the compute line's figures, the
collectives', the host link's: :class:`~hloscope.analysis.measured.calibrate.FigureGroup`) is
simulated, and the combination adopted is

- all of them, when their simulated step is within :data:`STEP_TOLERANCE` of the measured one and
  no further from it than the datasheet's;
- else the one whose step is nearest the measured one, if no further than the datasheet's (a group
  left out keeps its datasheet values: its figures fitted their ops, but the step came out worse
  with them, so something the figures do not hold, such as the schedule, is off);
- else none: the run is refused (:attr:`CalibrationRun.refused`), and no target should be written.

With ``held_out`` (another run: its inputs and profile) the adopted target is judged there too, and
refused when its step is further from that run's than the datasheet's. ``band_us`` is the error band
``analyze`` prints with the adopted target (its margins' corner steps) on the fitted run. Facts only;
the words are in ``hloscope.render.calibration_text``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from enum import StrEnum

from hloscope.analysis.inputs import StepInputs
from hloscope.analysis.measured.calibrate import Calibration, FigureGroup, Unfitted, adopt, fit_target, fitted_groups
from hloscope.analysis.measured.compare import MeasuredComparison, MeasuredProfile
from hloscope.analysis.report import Report, analyze_step
from hloscope.analysis.simulate.options import AnalysisOptions
from hloscope.targets import Target

__all__ = ["STEP_TOLERANCE", "CalibrationRun", "Refusal", "StepError", "Trial", "calibrate_step", "judge_step"]

#: The in-sample step error (either way) under which every fitted figure is adopted.
STEP_TOLERANCE = 0.05


class Refusal(StrEnum):
    """Why a calibration must not be written."""

    NOTHING_FITTED = "nothing-fitted"  # the profile informs no figure: the datasheet is all there is
    WITHIN_SPREAD = "within-spread"  # every figure fitted lies within the target's run_spread: nothing carries
    WORSE_IN_SAMPLE = "worse-in-sample"  # every fitted combination put the fitted run's step further off
    WORSE_HELD_OUT = "worse-held-out"  # the adopted target put the held-out run's step further off


@dataclass(frozen=True)
class StepError:
    """One run's step: measured (median over its executions), and simulated with the datasheet
    target and with the calibrated one, µs. source: the run's profile."""

    source: str
    measured_us: float
    datasheet_us: float
    calibrated_us: float

    @property
    def datasheet_error(self) -> float:
        """Simulated over measured, minus 1."""
        return self.datasheet_us / self.measured_us - 1

    @property
    def calibrated_error(self) -> float:
        return self.calibrated_us / self.measured_us - 1

    @property
    def helps(self) -> bool:
        """The calibrated step is no further from the measured one than the datasheet's."""
        return abs(self.calibrated_error) <= abs(self.datasheet_error)


@dataclass(frozen=True)
class Trial:
    """One combination of fitted groups, simulated on the fitted run: its step, µs."""

    groups: tuple[FigureGroup, ...]
    step_us: float


@dataclass(frozen=True)
class CalibrationRun:
    """What ``calibrate`` found. calibration: the adopted figures (the groups not adopted keep their
    datasheet values, ``Unfitted.DROPPED``). before / after: the fitted run beside the datasheet and the
    adopted target. in_sample: the fitted run's step (None: no step). trials: every combination
    simulated, the full fit first. kept: the groups adopted. held_out: the held-out run's step and its
    comparison with the adopted target (None when not asked). band_us: the error band ``analyze``
    prints with the adopted target on the fitted run, low to high (None: no transfer to judge, so no
    band). refused: why it must not be written (None: write it). A profile that times no step (PGLE)
    adopts every fitted figure unchecked (in_sample None, no trials)."""

    calibration: Calibration
    before: MeasuredComparison
    after: MeasuredComparison
    in_sample: StepError | None
    trials: tuple[Trial, ...]
    kept: tuple[FigureGroup, ...]
    held_out: StepError | None = None
    held_out_after: MeasuredComparison | None = None
    band_us: tuple[float, float] | None = None
    refused: Refusal | None = None


def _measured(report: Report) -> MeasuredComparison:
    if report.measured is None:  # analyze_step compares whenever options.compare_with is set
        raise ValueError("the report holds no measured comparison")
    return report.measured


def judge_step(inputs: StepInputs, datasheet: Target, calibrated: Target,
               profile: MeasuredProfile) -> tuple[StepError | None, MeasuredComparison]:
    """One run's step with the datasheet and the calibrated target (None where the profile times no step
    or the module has none), and its comparison with the calibrated target."""
    options = AnalysisOptions(compare_with=profile)
    before = analyze_step(inputs, datasheet, options)
    after = analyze_step(inputs, calibrated, options)
    med = profile.median_step_us
    if not med or before.timeline is None or after.timeline is None:
        return None, _measured(after)
    return StepError(profile.source, med, before.timeline.step_us, after.timeline.step_us), _measured(after)


def _band(report: Report) -> tuple[float, float] | None:
    if report.margins is None:
        return None
    low, high = report.margins.corner_step_us
    return min(low, high), max(low, high)


def _choose(trials: list[Trial], measured: float, datasheet: float) -> Trial | None:
    """The full fit when within tolerance and no worse than the datasheet, else the nearest no worse."""
    ds = abs(datasheet / measured - 1)
    full = trials[0]
    err = abs(full.step_us / measured - 1)
    if err <= STEP_TOLERANCE and err <= ds:
        return full
    fine = [t for t in trials if abs(t.step_us / measured - 1) <= ds]
    return min(fine, key=lambda t: (abs(t.step_us / measured - 1), -len(t.groups))) if fine else None


def calibrate_step(inputs: StepInputs, base: Target, profile: MeasuredProfile, name: str,
                   held_out: tuple[StepInputs, MeasuredProfile] | None = None) -> CalibrationRun:
    """Fit ``base``'s figures to ``profile`` (measured on ``inputs``' module), adopt the groups that
    bring the simulated step closest (module docstring), and judge the result on ``held_out``."""
    options = AnalysisOptions(compare_with=profile)
    before = analyze_step(inputs, base, options)
    cal = fit_target(before.index, base, profile, name, before.transfers)
    groups = fitted_groups(cal)
    med = profile.median_step_us
    if not groups:
        within = any(f.unfitted is Unfitted.WITHIN_SPREAD for f in cal.figures)
        kept_ds = (StepError(profile.source, med, before.timeline.step_us, before.timeline.step_us)
                   if within and med and before.timeline is not None else None)
        return CalibrationRun(cal, _measured(before), _measured(before), kept_ds, (), (),
                              refused=Refusal.WITHIN_SPREAD if within else Refusal.NOTHING_FITTED)
    if not med or before.timeline is None:  # a PGLE profile times no step: every fitted figure, unchecked
        after = analyze_step(inputs, cal.target, options)
        return CalibrationRun(cal, _measured(before), _measured(after), None, (), groups, band_us=_band(after))
    trials: list[Trial] = []
    for n in range(len(groups), 0, -1):
        for combo in itertools.combinations(groups, n):
            timeline = analyze_step(inputs, adopt(cal, combo).target, options).timeline
            if timeline is not None:
                trials.append(Trial(combo, timeline.step_us))
    chosen = _choose(trials, med, before.timeline.step_us)
    kept = chosen.groups if chosen is not None else groups
    step_us = next(t.step_us for t in trials if t.groups == kept)
    in_sample = StepError(profile.source, med, before.timeline.step_us, step_us)
    adopted = adopt(cal, kept)
    # The target carries its own in-sample error: the band analyze prints with it never claims less.
    adopted = replace(adopted, target=replace(adopted.target,
                                              calibrated_step_error=_away_from_zero(in_sample.calibrated_error)))
    after = analyze_step(inputs, adopted.target, options)
    if chosen is None:
        return CalibrationRun(adopted, _measured(before), _measured(after), in_sample, tuple(trials), kept,
                              band_us=_band(after), refused=Refusal.WORSE_IN_SAMPLE)
    held: StepError | None = None
    held_after: MeasuredComparison | None = None
    if held_out is not None:
        held, held_after = judge_step(held_out[0], base, adopted.target, held_out[1])
    refused = Refusal.WORSE_HELD_OUT if held is not None and not held.helps else None
    return CalibrationRun(adopted, _measured(before), _measured(after), in_sample, tuple(trials), kept,
                          held, held_after, _band(after), refused)


def _away_from_zero(error: float) -> float:
    """``error`` rounded up in size to the next 0.01%: what a target file keeps, never less than was seen."""
    return math.copysign(math.ceil(abs(error) * 1e4 + 1e-9) / 1e4, error)
