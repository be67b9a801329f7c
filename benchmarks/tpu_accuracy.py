"""hloscope's TPU predictions held against the real TPU v5e runs of fixtures/measured/tpu_v5e/.

For every run there (the step's optimized module, its profile, and facts.json read from the profile
with JAX's own reader by fixtures/measured/tpu_v5e/read_facts.py), prints the measured step and the
TensorCore's waits at host-transfer dones beside hloscope's simulated step and exposed transfer time,
each transfer's measured verdict (its wait over its own time, by hloscope's thresholds) beside the
predicted one, and each offload run over its rematerialized twin, measured and simulated. Twice: with
the datasheet target (tpu-v5e) and with a target calibrated on one run (``--calibrate-on``, default
``square``) whose own row is marked in-sample; every other row is a run the fit never saw. The target is
the one ``hloscope calibrate`` writes (``hloscope.analysis.calibration.calibrate_step``: only the fitted
groups that bring the in-sample step nearer). With ``--matrix``, calibrates on every run in turn instead:
per run, the groups adopted, the in-sample step error before and after, the band ``analyze`` prints with
the target on that run, and the runs (held out) the target puts further off than the datasheet.

Usage: python benchmarks/tpu_accuracy.py [--calibrate-on CASE | --matrix]
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import dataclass
from pathlib import Path

import hloscope
from hloscope.analysis.calibration import CalibrationRun, calibrate_step, judge_step
from hloscope.analysis.measured.read import parse_measured
from hloscope.analysis.report import Report, analyze_step
from hloscope.analysis.simulate.options import AnalysisOptions
from hloscope.artifact import read_step
from hloscope.hlo.profile_files import read_measured_file
from hloscope.targets import Target, get_target

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "measured" / "tpu_v5e"
#: Offload runs and their rematerialized twins (same shapes, nothing saved).
TWINS = {"big": "big_remat", "wide": "wide_remat", "square": "square_remat", "opt_host": "opt_device"}


@dataclass(frozen=True)
class Row:
    case: str
    measured_step_ms: float
    simulated_step_ms: float
    measured_wait_ms: float
    simulated_wait_ms: float
    verdicts: tuple[tuple[str, str, str], ...]  # (start, measured, predicted)
    in_sample: bool = False

    @property
    def step_error(self) -> float:
        return self.simulated_step_ms / self.measured_step_ms - 1

    @property
    def wait_error(self) -> float | None:
        return self.simulated_wait_ms / self.measured_wait_ms - 1 if self.measured_wait_ms > 0 else None


def cases() -> list[str]:
    return sorted(p.name for p in RUNS.iterdir() if (p / "facts.json").is_file())


def measured(case: str) -> tuple[float, float]:
    """(step ms, waits at host-transfer dones ms): medians over the profiled steps (facts.json)."""
    facts = json.loads((RUNS / case / "facts.json").read_text())
    steps = [s["module_ms"] for s in facts["per_step"]]
    waits = [s["wait_at_host_dones_ms"] for s in facts["per_step"]]
    return statistics.median(steps), statistics.median(waits)


def judge(case: str, target: Target) -> Report:
    profile = parse_measured(read_measured_file(str(RUNS / case / "profile" / "step.xplane.pb")))
    step = read_step(str(RUNS / case / "step.hlo.txt"), target)
    return analyze_step(step.inputs, step.target, AnalysisOptions(compare_with=profile))


def row(case: str, target: Target, in_sample: bool = False) -> Row:
    report = judge(case, target)
    step_ms, wait_ms = measured(case)
    tl = report.timeline
    assert tl is not None and report.measured is not None
    verdicts = tuple((t.start, str(t.measured_verdict or "-"), str(t.predicted_verdict or "-"))
                     for t in report.measured.transfers)
    return Row(case, step_ms, tl.step_us / 1e3, wait_ms, tl.exposed_transfer_us / 1e3, verdicts, in_sample)


def calibration(case: str) -> CalibrationRun:
    profile = parse_measured(read_measured_file(str(RUNS / case / "profile" / "step.xplane.pb")))
    step = read_step(str(RUNS / case / "step.hlo.txt"), "tpu-v5e")
    return calibrate_step(step.inputs, step.target, profile, f"tpu-v5e-{case}")


def calibrated(case: str) -> Target:
    return calibration(case).calibration.target


def matrix() -> list[str]:
    """Calibrated on each run in turn: in sample, its band, and held out on every other run."""
    runs = {c: (read_step(str(RUNS / c / "step.hlo.txt"), "tpu-v5e"),
                parse_measured(read_measured_file(str(RUNS / c / "profile" / "step.xplane.pb")))) for c in cases()}
    out = ["| calibrated on | adopted | in-sample datasheet | in-sample calibrated | band (analyze) | measured "
           "| held out: no worse | held out: worse than the datasheet |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for case, (step, profile) in runs.items():
        run = calibrate_step(step.inputs, step.target, profile, f"tpu-v5e-{case}")
        e = run.in_sample
        assert e is not None
        worse = []
        for other, (s2, p2) in runs.items():
            got, _ = judge_step(s2.inputs, s2.target, run.calibration.target, p2) if other != case else (None, None)
            if got is not None and not got.helps:
                worse.append(f"{other} {got.datasheet_error:+.1%} -> {got.calibrated_error:+.1%}")
        band = "-" if run.band_us is None else f"{run.band_us[0] / 1e3:.2f}-{run.band_us[1] / 1e3:.2f} ms"
        out.append(f"| {case} | {' + '.join(str(g) for g in run.kept) or '-'} | {e.datasheet_error:+.1%} | "
                   f"{e.calibrated_error:+.1%} | {band} | {e.measured_us / 1e3:.2f} ms | "
                   f"{len(runs) - 1 - len(worse)} of {len(runs) - 1} | {', '.join(worse) or '-'} |")
    return out


def table(rows: list[Row]) -> list[str]:
    out = ["| run | measured step | simulated | error | measured waits | simulated | error "
           "| verdicts measured -> predicted |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        werr = r.wait_error
        verdicts = ", ".join(f"{m} -> {p}" for _, m, p in r.verdicts) or "no host transfer"
        name = f"{r.case} (in-sample)" if r.in_sample else r.case
        out.append(f"| {name} | {r.measured_step_ms:.1f} ms | {r.simulated_step_ms:.1f} ms | {r.step_error:+.1%} | "
                   f"{r.measured_wait_ms:.1f} ms | {r.simulated_wait_ms:.1f} ms | "
                   f"{'-' if werr is None else f'{werr:+.1%}'} | {verdicts} |")
    return out


def ratios(rows: list[Row]) -> list[str]:
    by = {r.case: r for r in rows}
    out = ["| offload / remat | measured | simulated |", "| --- | --- | --- |"]
    for off, remat in TWINS.items():
        if off in by and remat in by:
            a, b = by[off], by[remat]
            out.append(f"| {off} / {remat} | {a.measured_step_ms / b.measured_step_ms:.3f} | "
                       f"{a.simulated_step_ms / b.simulated_step_ms:.3f} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibrate-on", default="square", choices=cases())
    ap.add_argument("--matrix", action="store_true", help="calibrate on every run in turn, judge it on the others")
    args = ap.parse_args()
    print(f"hloscope {hloscope.__version__}: TPU v5e runs in {RUNS}")
    if args.matrix:
        print("\n".join(matrix()))
        return
    datasheet = get_target("tpu-v5e")
    rows = [row(c, datasheet) for c in cases()]
    print("\n## datasheet target tpu-v5e\n")
    print("\n".join(table(rows)))
    print()
    print("\n".join(ratios(rows)))
    fitted = calibrated(args.calibrate_on)
    print(f"\n## target calibrated on {args.calibrate_on}: host link {fitted.host_link_achieved_to_host or 0:.4g} B/s "
          f"D->H, {fitted.host_link_achieved_to_device or 0:.4g} B/s H->D, bf16 peak {fitted.peak_bf16_flops:.4g}, "
          f"HBM {fitted.hbm_bandwidth:.4g} B/s, per-op {fitted.kernel_launch_us:.3g} us\n")
    cal = [row(c, fitted, in_sample=c == args.calibrate_on) for c in cases()]
    print("\n".join(table(cal)))
    print()
    print("\n".join(ratios(cal)))
    held = [r for r in cal if not r.in_sample]
    print(f"\nheld out ({len(held)} runs): step error median {statistics.median(abs(r.step_error) for r in held):.1%}, "
          f"max {max(abs(r.step_error) for r in held):.1%}")


if __name__ == "__main__":
    main()
