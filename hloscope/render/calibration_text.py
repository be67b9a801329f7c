"""A calibration in words and as a target file: ``calibration_lines`` and ``target_toml``.

``target_toml`` writes a TOML target file that ``--target FILE.toml`` reads
(``hloscope.targets.load_target_file``): ``base`` names the datasheet target, then each fitted
figure; a figure the profile could not inform is left out (the base's value holds) and a comment
says why. Strings (names, paths from the user) are TOML basic strings, escaped.
"""

from __future__ import annotations

import math

from hloscope.analysis.measured.calibrate import Calibration, Figure, Rate, Unfitted
from hloscope.analysis.measured.compare import MeasuredComparison
from hloscope.vocab import Direction

_WHY = {
    Unfitted.NO_SAMPLES: "the profile times no op this figure prices: datasheet value kept",
    Unfitted.TOO_FEW: "too few measured ops (or all of one size) to fit: datasheet value kept",
    Unfitted.UNPHYSICAL: "the fit was not physical (bandwidth or peak <= 0): datasheet value kept",
    Unfitted.HIDDEN: "every measured run ended before its done was reached (an upper bound): datasheet value kept",
}


def toml_string(s: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _value(f: Figure, x: float) -> str:
    if f.unit == "B/s":
        return f"{x / 1e9:.1f} GB/s"
    if f.unit == "FLOP/s":
        return f"{x / 1e12:.1f} TFLOP/s"
    return f"{x:.2f} us"


def _num(x: float) -> str:
    return repr(float(x)) if math.isfinite(x) else "0.0"


def target_toml(cal: Calibration) -> str:
    t, base = cal.target, cal.base
    lines = [f"# hloscope calibrate: {base.name}'s figures fitted to a measured profile (docs/accuracy.md).",
             f"base = {toml_string(base.name)}", f"name = {toml_string(t.name)}",
             f"description = {toml_string(t.description)}"]
    for f in cal.figures:
        if f.name.startswith("collective_figures."):
            continue
        if f.unfitted is Unfitted.FITTED:
            lines.append(f"{f.name} = {_num(f.after)}  # fitted on {f.samples} ops; datasheet {_num(f.before)}")
        else:
            lines.append(f"# {f.name}: {_WHY[f.unfitted]}")
    for kind, bw, lat in t.collective_figures:
        n = next((f.samples for f in cal.figures if f.name == f"collective_figures.{kind}.bandwidth"), 0)
        lines += ["", f"[collective_figures.{kind}]  # fitted on {n} ops",
                  f"bandwidth = {_num(bw)}", f"latency_us = {_num(lat)}"]
    return "\n".join(lines) + "\n"


def _err(pred: float, meas: float) -> str:
    return "-" if meas <= 0 else f"{100 * (pred - meas) / meas:+.1f}%"


def calibration_lines(cal: Calibration, before: MeasuredComparison, after: MeasuredComparison) -> list[str]:
    """Each figure before and after, then each class's error before and after, then the step."""
    rows = [["figure", "datasheet", "calibrated", "ops", "note"]]
    for f in cal.figures:
        rows.append([f.name, _value(f, f.before), _value(f, f.after), str(f.samples),
                     "fitted" if f.unfitted is Unfitted.FITTED else _WHY[f.unfitted]])
    lines = [f"calibrated target {cal.target.name} (base {cal.base.name}) from {before.profile.source}:"]
    lines += _table(rows)
    crow = [["class", "ops", "measured", "predicted before", "error before", "predicted after", "error after"]]
    after_by = {c.name: c for c in after.classes}
    for c in before.classes:
        a = after_by.get(c.name)
        crow.append([str(c.name), str(c.ops), f"{c.measured_us / 1e3:.2f} ms", f"{c.predicted_us / 1e3:.2f} ms",
                     _err(c.predicted_us, c.measured_us),
                     "-" if a is None else f"{a.predicted_us / 1e3:.2f} ms",
                     "-" if a is None else _err(a.predicted_us, a.measured_us)])
    lines += ["", "per class, per execution (the profile's own ops: an in-sample fit):", *_table(crow)]
    lines += _rate_lines(cal.rates)
    med = before.profile.median_step_us
    if med and before.predicted_step_us is not None and after.predicted_step_us is not None:
        lines += ["", f"step: measured median {med / 1e3:.2f} ms; simulated {before.predicted_step_us / 1e3:.2f} ms "
                      f"({_err(before.predicted_step_us, med)}) before, {after.predicted_step_us / 1e3:.2f} ms "
                      f"({_err(after.predicted_step_us, med)}) after"]
    return lines


_RATE_WHY = {
    Unfitted.NO_SAMPLES: "the profile times no run of it",
    Unfitted.TOO_FEW: "too few runs to fit",
    Unfitted.UNPHYSICAL: "the fit was not physical",
    Unfitted.HIDDEN: "every run ended before its done was reached: the profile bounds it only",
}


def _rate_lines(rates: tuple[Rate, ...]) -> list[str]:
    """What the chip achieved per run (``fit_rates``), whatever the target's family."""
    if not rates:
        return []
    rows = [["work", "achieved", "runs", "note"]]
    for r in rates:
        work = r.work if r.direction is None else f"{r.work} {'D->H' if r.direction is Direction.TO_HOST else 'H->D'}"
        value = "-" if r.value is None else (f"{r.value / 1e12:.1f} TFLOP/s" if r.unit == "FLOP/s"
                                             else f"{r.value / 1e9:.1f} GB/s")
        rows.append([work, value, str(r.samples), "fitted" if r.unfitted is Unfitted.FITTED else _RATE_WHY[r.unfitted]])
    return ["", "achieved per run (least squares through the origin over the profile's runs; GEMMs by the "
                "model's FLOP count, other kernels by their HBM bytes, copies by the bytes copied):", *_table(rows)]


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
