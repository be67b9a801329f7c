"""hloscope's TPU predictions held against the real TPU v5e runs of fixtures/measured/tpu_v5e/ and
fixtures/measured/tpu_v5e_blocks/.

For every profiled run there (the step's optimized module, its profile, and facts.json read from the
profile with JAX's own reader by fixtures/measured/tpu_v5e/read_facts.py), prints the measured step and the
TensorCore's waits at host-transfer dones beside hloscope's simulated step and exposed transfer time,
each transfer's measured verdict (its wait over its own time, by hloscope's thresholds) beside the
predicted one, and each offload run over its rematerialized twin, measured and simulated. Rows of the
runs whose ops v5e's achieved rates (``TpuTarget.hbm_efficiency``, ``mxu_efficiency``) or its fused
chains' input rate (``chain_input_rate``) were fitted on are marked "fit"; the others are held out.
Then the transformer-block runs timed by wall clock alone
(tpu_v5e_blocks/wall_only.jsonl; their module compiled deviceless by the same libtpu, step.hlo.txt):
measured step = wall median minus the median gap between wall and profiled step of the profiled runs.
Then the same with a target calibrated on one run (``--calibrate-on``, default ``square``) whose own
row is marked in-sample; every other row is a run the fit never saw. The target is the one ``hloscope
calibrate`` writes (``hloscope.analysis.calibration.calibrate_step``: only the fitted groups that bring
the in-sample step nearer), fitted on top of the achieved rates. With ``--matrix``, calibrates on every
profiled run in turn instead: per run, the groups adopted, the in-sample step error before and after,
the band ``analyze`` prints with the target on that run, and the runs (held out) the target puts
further off than the datasheet.

--class-errors: the margins' per-class error corners on a TPU (analysis/platforms/tpu.py), per run.

Usage: python benchmarks/tpu_accuracy.py [--calibrate-on CASE | --matrix [--no-spread] | --spread | --class-errors]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

import hloscope
from hloscope.analysis.calibration import CalibrationRun, Refusal, calibrate_step, judge_step
from hloscope.analysis.cost.profile import cost_profile
from hloscope.analysis.measured.calibrate import Unfitted, fit_target
from hloscope.analysis.measured.compare import OpClassName
from hloscope.analysis.measured.read import parse_measured
from hloscope.analysis.report import Report, analyze_step
from hloscope.analysis.simulate.options import AnalysisOptions
from hloscope.artifact import read_step
from hloscope.hlo.profile_files import read_measured_file
from hloscope.targets import Target, get_target

MEASURED = Path(__file__).resolve().parent.parent / "fixtures" / "measured"
RUNS = MEASURED / "tpu_v5e"
BLOCKS = MEASURED / "tpu_v5e_blocks"
#: Offload runs and their rematerialized twins (same shapes, nothing saved); a device-saved run over its
#: remat twin too.
TWINS = {"big": "big_remat", "wide": "wide_remat", "square": "square_remat", "opt_host": "opt_device",
         "mha_off": "mha_remat", "gqa_off": "gqa_remat", "gqa_dev": "gqa_remat",
         "gqa_mlpoff": "gqa_mlpremat", "mha2k_off": "mha2k_remat", "gpt2xl_off": "gpt2xl_remat",
         "gpt2xl_off16": "gpt2xl_remat", "gx3200_off": "gx3200_remat", "gx7200_off": "gx7200_remat",
         "gx8000_off": "gx8000_remat", "gxb10_off": "gxb10_remat", "gx12800_off": "gx12800_remat"}
#: The runs v5e's achieved HBM and MXU rates were fitted on (per op, benchmarks/tpu_ops.py): every other
#: run is held out of that fit.
FIT_ON = frozenset({"big", "big_device", "big_remat", "opt_device", "opt_host", "opt_host_big", "small", "square",
                    "square_remat", "two", "wide", "wide_remat", "mha_remat"})
#: The runs a fused matmul chain's input rate (``TpuTarget.chain_input_rate``) was fitted on (benchmarks/tpu_ops.py
#: --chain): two offload runs and their remat twins. Marked "fit" too; the spread is not read from them.
CHAIN_FIT_ON = frozenset({"gx8000_off", "gx8000_remat", "gxb10_off", "gxb10_remat"})


def fitted_on(case: str) -> bool:
    """Whether a v5e figure was fitted on ``case`` (the rates' runs or the chain rate's): not held out."""
    return case in FIT_ON or case in CHAIN_FIT_ON


@dataclass(frozen=True)
class Row:
    case: str
    measured_step_ms: float
    simulated_step_ms: float
    measured_wait_ms: float
    simulated_wait_ms: float
    verdicts: tuple[tuple[str, str, str], ...]  # (start, measured, predicted)
    in_sample: bool = False
    fit: bool = False
    wall_only: bool = False

    @property
    def step_error(self) -> float:
        return self.simulated_step_ms / self.measured_step_ms - 1

    @property
    def wait_error(self) -> float | None:
        return self.simulated_wait_ms / self.measured_wait_ms - 1 if self.measured_wait_ms > 0 else None


def folder(case: str) -> Path:
    return RUNS / case if (RUNS / case).is_dir() else BLOCKS / case


def cases() -> list[str]:
    return sorted(p.name for p in RUNS.iterdir() if (p / "facts.json").is_file()) + \
        sorted(p.name for p in BLOCKS.iterdir() if (p / "facts.json").is_file())


def wall_only_cases() -> dict[str, float]:
    """The block runs timed by wall clock alone: case -> wall median ms (wall_only.jsonl), for those
    whose module is here."""
    rows = [json.loads(line) for line in (BLOCKS / "wall_only.jsonl").read_text().splitlines() if line.strip()]
    return {r["case"]: r["median_ms"] for r in rows
            if not (BLOCKS / r["case"] / "facts.json").is_file() and (BLOCKS / r["case"] / "step.hlo.txt").is_file()}


def wall_gap_ms() -> float:
    """The median of (wall median - profiled step median) over the profiled runs: what a wall time holds
    beyond the step (dispatch, the host's wait for the result)."""
    gaps = []
    for case in cases():
        facts = json.loads((folder(case) / "facts.json").read_text())
        gaps.append(facts["wall"]["median_ms"] - statistics.median(s["module_ms"] for s in facts["per_step"]))
    return float(statistics.median(gaps))


def measured(case: str) -> tuple[float, float]:
    """(step ms, waits at host-transfer dones ms): medians over the profiled steps (facts.json)."""
    facts = json.loads((folder(case) / "facts.json").read_text())
    steps = [s["module_ms"] for s in facts["per_step"]]
    waits = [s["wait_at_host_dones_ms"] for s in facts["per_step"]]
    return statistics.median(steps), statistics.median(waits)


def judge(case: str, target: Target) -> Report:
    profile = parse_measured(read_measured_file(str(folder(case) / "profile" / "step.xplane.pb")))
    step = read_step(str(folder(case) / "step.hlo.txt"), target)
    return analyze_step(step.inputs, step.target, AnalysisOptions(compare_with=profile))


def row(case: str, target: Target, in_sample: bool = False) -> Row:
    report = judge(case, target)
    step_ms, wait_ms = measured(case)
    tl = report.timeline
    assert tl is not None and report.measured is not None
    verdicts = tuple((t.start, str(t.measured_verdict or "-"), str(t.predicted_verdict or "-"))
                     for t in report.measured.transfers)
    return Row(case, step_ms, tl.step_us / 1e3, wait_ms, tl.exposed_transfer_us / 1e3, verdicts, in_sample,
               fit=fitted_on(case))


def wall_row(case: str, wall_ms: float, gap_ms: float, target: Target) -> Row:
    """A run timed by wall clock alone: its step taken as the wall median less ``gap_ms``; its waits are
    not measured (the offload run's step over its twin's bounds them)."""
    step = read_step(str(BLOCKS / case / "step.hlo.txt"), target)
    tl = analyze_step(step.inputs, step.target, AnalysisOptions()).timeline
    assert tl is not None
    return Row(case, wall_ms - gap_ms, tl.step_us / 1e3, 0.0, tl.exposed_transfer_us / 1e3, (), wall_only=True)


def calibration(case: str) -> CalibrationRun:
    profile = parse_measured(read_measured_file(str(folder(case) / "profile" / "step.xplane.pb")))
    step = read_step(str(folder(case) / "step.hlo.txt"), "tpu-v5e")
    return calibrate_step(step.inputs, step.target, profile, f"tpu-v5e-{case}")


def calibrated(case: str) -> Target:
    return calibration(case).calibration.target


def matrix(spread: bool = True) -> list[str]:
    """Calibrated on each profiled run in turn: in sample, its band, and held out on every other run
    (``spread=False``: from tpu-v5e without its run_spread, every fitted figure weighed by the step alone)."""
    base = get_target("tpu-v5e") if spread else replace(get_target("tpu-v5e"), run_spread=())
    runs = {c: (read_step(str(folder(c) / "step.hlo.txt"), base),
                parse_measured(read_measured_file(str(folder(c) / "profile" / "step.xplane.pb"))))
            for c in cases()}
    out = ["| calibrated on | adopted | in-sample datasheet | in-sample calibrated | band (analyze) | measured "
           "| held out: no worse | held out: worse than the datasheet |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for case, (step, profile) in runs.items():
        run = calibrate_step(step.inputs, base, profile, f"tpu-v5e-{case}")
        e = run.in_sample
        assert e is not None
        worse = []
        if run.refused is Refusal.WITHIN_SPREAD:  # nothing adopted: every other run is priced as by the datasheet
            out.append(f"| {case} (within spread) | - | {e.datasheet_error:+.1%} | {e.datasheet_error:+.1%} | - | "
                       f"{e.measured_us / 1e3:.2f} ms | {len(runs) - 1} of {len(runs) - 1} (the datasheet) | - |")
            continue
        for other, (s2, p2) in runs.items():
            got, _ = judge_step(s2.inputs, base, run.calibration.target, p2) if other != case else (None, None)
            if got is not None and not got.helps:
                worse.append(f"{other} {got.datasheet_error:+.1%} -> {got.calibrated_error:+.1%}")
        band = "-" if run.band_us is None else f"{run.band_us[0] / 1e3:.2f}-{run.band_us[1] / 1e3:.2f} ms"
        name = case + (" (refused)" if run.refused is not None else "")
        out.append(f"| {name} | {' + '.join(str(g) for g in run.kept) or '-'} | {e.datasheet_error:+.1%} | "
                   f"{e.calibrated_error:+.1%} | {band} | {e.measured_us / 1e3:.2f} ms | "
                   f"{len(runs) - 1 - len(worse)} of {len(runs) - 1} | {', '.join(worse) or '-'} |")
    return out


def table(rows: list[Row], marks: bool = True) -> list[str]:
    """The rows as a Markdown table; ``marks``: each run's name says whether the achieved rates were
    fitted on it ("fit") or not ("held out")."""
    out = ["| run | measured step | simulated | error | measured waits | simulated | error "
           "| verdicts measured -> predicted |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        werr = r.wait_error
        verdicts = ", ".join(f"{m} -> {p}" for _, m, p in r.verdicts) or "no host transfer"
        if r.wall_only:
            verdicts = "wall clock only"
        name = r.case + (" (in-sample)" if r.in_sample else "" if not marks else " (fit)" if r.fit else " (held out)")
        waits = "-" if r.wall_only else f"{r.measured_wait_ms:.1f} ms"
        out.append(f"| {name} | {r.measured_step_ms:.1f} ms | {r.simulated_step_ms:.1f} ms | {r.step_error:+.1%} | "
                   f"{waits} | {r.simulated_wait_ms:.1f} ms | "
                   f"{'-' if werr is None else f'{werr:+.1%}'} | {verdicts} |")
    return out


def ratios(rows: list[Row]) -> list[str]:
    by = {r.case: r for r in rows}
    out = ["| offload / remat | measured | simulated | difference | step minus twin, measured | simulated |",
           "| --- | --- | --- | --- | --- | --- |"]
    for off, remat in TWINS.items():
        if off in by and remat in by:
            a, b = by[off], by[remat]
            m, s = a.measured_step_ms / b.measured_step_ms, a.simulated_step_ms / b.simulated_step_ms
            out.append(f"| {off} / {remat} | {m:.3f} | {s:.3f} | {s - m:+.3f} | "
                       f"{a.measured_step_ms - b.measured_step_ms:+.1f} ms | "
                       f"{a.simulated_step_ms - b.simulated_step_ms:+.1f} ms |")
    return out


def class_errors() -> list[str]:
    """The margins' error corners on a TPU (``analysis/platforms/tpu.py``): per profiled run, the model's error
    (predicted / measured - 1) per op class of ``--measured`` with the datasheet tpu-v5e; the largest of the
    held-out runs per class is the corner."""
    target = get_target("tpu-v5e")
    wanted = (OpClassName.GEMM, OpClassName.KERNEL)
    out = ["| run | " + " | ".join(str(c) for c in wanted) + " |", "| --- |" + " --- |" * len(wanted)]
    worst: dict[OpClassName, tuple[float, str]] = {}
    for case in cases():
        report = judge(case, target)
        assert report.measured is not None
        by = {c.name: c for c in report.measured.classes}
        errs = []
        for name in wanted:
            ratio = by[name].ratio if name in by else None
            errs.append("-" if ratio is None else f"{ratio - 1:+.1%}")
            if ratio is not None and not fitted_on(case) and abs(ratio - 1) > abs(worst.get(name, (0.0, ""))[0]):
                worst[name] = (ratio - 1, case)
        out.append(f"| {case}{' (fit)' if fitted_on(case) else ''} | " + " | ".join(errs) + " |")
    out += ["", "largest held-out error per class: " + ", ".join(f"{n} {e:+.1%} ({c})" for n, (e, c) in worst.items())]
    return out


def spread() -> list[str]:
    """``TpuTarget.run_spread`` of tpu-v5e: each run of FIT_ON fitted by ``fit_target`` on the target with no
    spread; per figure, each run's fitted value over the target's, and the largest departure from 1."""
    base = replace(get_target("tpu-v5e"), run_spread=())
    factors: dict[str, list[tuple[str, float]]] = {}
    for case in sorted(FIT_ON):
        step = read_step(str(folder(case) / "step.hlo.txt"), base)
        profile = parse_measured(read_measured_file(str(folder(case) / "profile" / "step.xplane.pb")))
        report = analyze_step(step.inputs, base, AnalysisOptions(compare_with=profile))
        for f in fit_target(report.index, base, profile, "spread", report.transfers).figures:
            if f.unfitted is Unfitted.FITTED and f.before:
                factors.setdefault(f.name, []).append((case, f.after / f.before))
    out = ["| figure | runs fitted | fitted / target, per run | largest departure |", "| --- | --- | --- | --- |"]
    worst: dict[str, float] = {}
    for name, got in factors.items():
        worst[name] = max(abs(x - 1) for _, x in got)
        out.append(f"| {name} | {len(got)} | {', '.join(f'{c} {x:.3f}' for c, x in got)} | {worst[name]:.4f} |")
    # Both directions cross one PCIe link on the same DMA engines: each takes the larger of the two departures.
    link = [k for k in worst if k.startswith("host_link_achieved_")]
    for k in link:
        worst[k] = max(worst[j] for j in link)
    spreads = ", ".join(f"({k!r}, {math.ceil(v * 1000) / 1000})" for k, v in worst.items())  # rounded up
    return [*out, "", f"run_spread = ({spreads})"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibrate-on", default="square", choices=cases())
    ap.add_argument("--matrix", action="store_true", help="calibrate on every run in turn, judge it on the others")
    ap.add_argument("--no-spread", action="store_true", help="--matrix from tpu-v5e without its run_spread")
    ap.add_argument("--spread", action="store_true", help="tpu-v5e's run_spread: each figure fitted on each fit run")
    ap.add_argument("--class-errors", action="store_true", help="the margins' per-class error corners on a TPU")
    args = ap.parse_args()
    print(f"hloscope {hloscope.__version__}: TPU v5e runs in {RUNS} and {BLOCKS}")
    if args.spread:
        print("\n".join(spread()))
        return
    if args.class_errors:
        print("\n".join(class_errors()))
        return
    if args.matrix:
        print("\n".join(matrix(not args.no_spread)))
        return
    datasheet = get_target("tpu-v5e")
    gap = wall_gap_ms()
    rows = [row(c, datasheet) for c in cases()]
    rows += [wall_row(c, w, gap, datasheet) for c, w in wall_only_cases().items()]
    print(f"\n## datasheet target tpu-v5e (wall-clock-only runs: step = wall - {gap:.2f} ms)\n")
    print("\n".join(table(rows)))
    print()
    print("\n".join(ratios(rows)))
    print()
    for label, group in (("fit", [r for r in rows if r.fit]), ("held out", [r for r in rows if not r.fit])):
        if group:
            print(f"datasheet, {label} ({len(group)} runs): step error median "
                  f"{statistics.median(abs(r.step_error) for r in group):.1%}, "
                  f"max {max(abs(r.step_error) for r in group):.1%}")
    run = calibration(args.calibrate_on)
    fitted, priced = run.calibration.target, cost_profile(run.calibration.target)
    print(f"\n## target calibrated on {args.calibrate_on} (adopted: {' + '.join(map(str, run.kept)) or 'none'}): "
          f"host link {fitted.host_link_achieved_to_host or 0:.4g} B/s D->H, "
          f"{fitted.host_link_achieved_to_device or 0:.4g} B/s H->D, bf16 peak {fitted.peak_bf16_flops:.4g}, "
          f"HBM {fitted.hbm_bandwidth:.4g} B/s (priced at the target's shares: bf16 {priced.peak_flops('bf16'):.4g}, "
          f"HBM {priced.hbm_bandwidth:.4g} B/s), per-op {fitted.kernel_launch_us:.3g} us\n")
    cal = [row(c, fitted, in_sample=c == args.calibrate_on) for c in cases()]
    cal += [wall_row(c, w, gap, fitted) for c, w in wall_only_cases().items()]
    print("\n".join(table(cal, marks=False)))
    print()
    print("\n".join(ratios(cal)))
    held = [r for r in cal if not r.in_sample and not r.wall_only]
    print(f"\nheld out, profiled ({len(held)} runs): step error median "
          f"{statistics.median(abs(r.step_error) for r in held):.1%}, max {max(abs(r.step_error) for r in held):.1%}")
    wall = [r for r in cal if r.wall_only]
    if wall:
        print(f"held out, wall clock only ({len(wall)} runs): step error median "
              f"{statistics.median(abs(r.step_error) for r in wall):.1%}, "
              f"max {max(abs(r.step_error) for r in wall):.1%}")

if __name__ == "__main__":
    main()
