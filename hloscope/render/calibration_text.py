"""A calibration in words and as a target file: ``calibration_lines``, ``refusal_line`` and ``target_toml``.

``target_toml`` writes a TOML target file that ``--target FILE.toml`` reads
(``hloscope.targets.load_target_file``): ``base`` names the datasheet target, then each fitted
figure; a figure the profile could not inform is left out (the base's value holds) and a comment
says why. A TPU target's achieved shares (``hbm_efficiency``, ``mxu_efficiency``) are written out
beside its figures, which are the datasheet's scaled (docs/targets.md, "A calibrated TPU target").
Strings (names, paths from the user) are TOML basic strings, escaped.
"""

from __future__ import annotations

import math

from hloscope.analysis.calibration import CalibrationRun, Refusal, StepError
from hloscope.analysis.measured.calibrate import GAP_SHARE, Calibration, Figure, FigureGroup, IdleGaps, Rate, Unfitted
from hloscope.render.platforms import platform_text
from hloscope.targets import BUILTIN_TARGETS, Target
from hloscope.vocab import Direction

_WHY = {
    Unfitted.NO_SAMPLES: "the profile times no op this figure prices: datasheet value kept",
    Unfitted.TOO_FEW: "too few measured ops (or all of one size) to fit: datasheet value kept",
    Unfitted.UNPHYSICAL: "the fit was not physical (bandwidth or peak <= 0): datasheet value kept",
    Unfitted.HIDDEN: "every measured run ended before its done was reached (an upper bound): datasheet value kept",
    Unfitted.NO_LATENCY: "the host transfers timed were all of one size, or queued behind one another: no latency "
                         "told apart from the bandwidth, datasheet value kept",
    Unfitted.DROPPED: "fitted, but the simulated step was nearer the measured one without its group: datasheet "
                      "value kept",
    Unfitted.NO_GAPS: f"no per-op time on this platform, and the compute line sat idle under {GAP_SHARE:.0%} of "
                      "the step: datasheet value kept",
    Unfitted.WITHIN_SPREAD: "fitted within the spread one run's fit shows across the runs the target was fitted on "
                            "(its run_spread): no evidence this program differs, datasheet value kept",
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


def _toml_value(v: object) -> str | None:
    """One field's value as TOML; None for a value TOML cannot hold (a field left unset)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _num(v)
    if isinstance(v, str):
        return toml_string(v)
    if isinstance(v, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return "[" + ", ".join(str(x) for x in v) + "]"
    return None


def _base_fields(base: Target, written: set[str]) -> list[str]:
    """``base``'s own fields, for a base that is not built in (a user's target file): the written file then
    stands alone, naming no target ``get_target`` could not find again. Its run spread is a table, written
    after the fields; fields the calibration writes itself are left to it."""
    out = [f"platform = {toml_string(str(base.platform))}  # base {toml_string(base.name)} is a file, not built in: "
           "its fields follow"]
    for key, value in base.to_dict().items():
        text = _toml_value(value)
        if key not in written and key != "platform" and text is not None:
            out.append(f"{key} = {text}")
    return out


def target_toml(cal: Calibration) -> str:
    t, base = cal.target, cal.base
    platform_fields = platform_text(t.platform).calibrated_fields(t)
    builtin = BUILTIN_TARGETS.get(base.name) is base
    written = {"name", "description", "calibrated_on", "calibrated_step_error", "collective_figures", "run_spread",
               *(name for name, _, _ in platform_fields),
               *(f.name for f in cal.figures if f.unfitted is Unfitted.FITTED)}
    lines = [f"# hloscope calibrate: {base.name}'s figures fitted to a measured profile (docs/accuracy.md).",
             *([f"base = {toml_string(base.name)}"] if builtin else _base_fields(base, written)),
             f"name = {toml_string(t.name)}", f"description = {toml_string(t.description)}"]
    if t.calibrated_on:
        lines.append(f"calibrated_on = {toml_string(t.calibrated_on)}")
    if t.calibrated_step_error:
        lines.append(f"calibrated_step_error = {_num(t.calibrated_step_error)}  # the simulated step on that run, "
                     "over its measured step, minus 1: analyze's error band holds it")
    for f in cal.figures:
        if f.name.startswith("collective_figures."):
            continue
        if f.unfitted is Unfitted.FITTED:
            lines.append(f"{f.name} = {_num(f.after)}  # fitted on {f.samples} ops; datasheet {_num(f.before)}")
        elif f.unfitted in (Unfitted.DROPPED, Unfitted.WITHIN_SPREAD):
            lines.append(f"# {f.name}: {_num(f.after)} {_WHY[f.unfitted]}")
        else:
            lines.append(f"# {f.name}: {_WHY[f.unfitted]}")
    lines += [f"{name} = {_num(value)}  # {why}" for name, value, why in platform_fields]
    if not builtin:
        lines += ["", "[run_spread]", *(f"{toml_string(k)} = {_num(v)}" for k, v in base.run_spread)]
    for kind, bw, lat in t.collective_figures:
        n = next((f.samples for f in cal.figures if f.name == f"collective_figures.{kind}.bandwidth"), 0)
        lines += ["", f"[collective_figures.{kind}]  # fitted on {n} ops",
                  f"bandwidth = {_num(bw)}", f"latency_us = {_num(lat)}"]
    return "\n".join(lines) + "\n"


def _err(pred: float, meas: float) -> str:
    return "-" if meas <= 0 else f"{100 * (pred - meas) / meas:+.1f}%"


def _ms(us: float) -> str:
    return f"{us / 1e3:.2f} ms"


def calibration_lines(run: CalibrationRun) -> list[str]:
    """Each figure before and after, each class's error before and after, the compute line's idle
    time, each combination of fitted groups tried, the step in sample (and held out), and the band."""
    cal, before, after = run.calibration, run.before, run.after
    rows = [["figure", "datasheet", "calibrated", "ops", "note"]]
    for f in cal.figures:
        kept = f.unfitted in (Unfitted.DROPPED, Unfitted.WITHIN_SPREAD)
        note = "fitted" if f.unfitted is Unfitted.FITTED else _WHY[f.unfitted]
        rows.append([f.name, _value(f, f.before), _value(f, f.before if kept else f.after), str(f.samples),
                     f"{_value(f, f.after)} {note}" if kept else note])
    lines = [f"calibrated target {cal.target.name} (base {cal.base.name}) from {before.profile.source}:"]
    lines += _table(rows)
    lines += platform_text(cal.target.platform).priced_lines(cal.target)
    if cal.gaps is not None:
        lines += ["", _gaps_line(cal.gaps)]
    crow = [["class", "ops", "measured", "predicted before", "error before", "predicted after", "error after"]]
    after_by = {c.name: c for c in after.classes}
    for c in before.classes:
        a = after_by.get(c.name)
        if c.overlap:  # async work beside the compute: what costs the step is the wait at its dones
            if c.measured_wait_us is None:
                continue
            m, p = c.measured_wait_us, c.predicted_wait_us
            pa = None if a is None else a.predicted_wait_us
            crow.append([f"{c.name} (waits at its dones)", str(c.ops), _ms(m), _ms(p), _err(p, m),
                         "-" if pa is None else _ms(pa), "-" if pa is None else _err(pa, m)])
            continue
        crow.append([str(c.name), str(c.ops), _ms(c.measured_us), _ms(c.predicted_us),
                     _err(c.predicted_us, c.measured_us),
                     "-" if a is None else _ms(a.predicted_us),
                     "-" if a is None else _err(a.predicted_us, a.measured_us)])
    lines += ["", "per class, per execution (the profile's own ops: an in-sample fit; async work beside the "
                  "compute by the waits at its dones, not its time):", *_table(crow)]
    lines += _rate_lines(cal.rates)
    lines += _step_lines(run)
    return lines


def _gaps_line(g: IdleGaps) -> str:
    share = g.idle_us / g.step_us if g.step_us > 0 else 0.0
    return (f"compute line idle between ops: {_ms(g.idle_us)} of the {_ms(g.step_us)} step ({share:.2%}), "
            f"{g.per_op_us:.2f} us per op run over {g.op_runs} runs")


def _groups(groups: tuple[FigureGroup, ...]) -> str:
    return " + ".join(str(g) for g in groups) if groups else "none (the datasheet)"


def _step_lines(run: CalibrationRun) -> list[str]:
    """The in-sample step with each combination tried, the one adopted, the held-out step and the band."""
    e = run.in_sample
    if e is None:
        return ["", "step: the profile times no step, so the fit is not checked against one; every fitted "
                    "figure is written"] if run.refused is None else []
    lines = ["", f"in-sample step ({e.source}): measured median {_ms(e.measured_us)}; simulated with the datasheet "
                 f"{_ms(e.datasheet_us)} ({_err(e.datasheet_us, e.measured_us)})"]
    rows = [["fitted figures adopted", "simulated step", "error"]]
    rows += [[_groups(t.groups), _ms(t.step_us), _err(t.step_us, e.measured_us)] for t in run.trials]
    lines += _table(rows)
    if run.refused is not Refusal.WORSE_IN_SAMPLE:
        lines.append(f"adopted: {_groups(run.kept)}: step {_ms(e.calibrated_us)} "
                     f"({_err(e.calibrated_us, e.measured_us)}) against the datasheet's "
                     f"{_err(e.datasheet_us, e.measured_us)}")
    if run.held_out is None and run.held_out_after is not None:
        lines.append(f"held-out run ({run.held_out_after.profile.source}): its profile times no step: not judged")
    if run.held_out is not None:
        h = run.held_out
        lines.append(f"held-out step ({h.source}): measured median {_ms(h.measured_us)}; datasheet "
                     f"{_ms(h.datasheet_us)} ({_err(h.datasheet_us, h.measured_us)}), calibrated "
                     f"{_ms(h.calibrated_us)} ({_err(h.calibrated_us, h.measured_us)})")
    if run.band_us is not None and run.refused is None:
        lo, hi = run.band_us
        holds = "holds" if lo <= e.measured_us <= hi else "does not hold"
        lines.append(f"error band analyze prints with this target on this run: {_ms(lo)} to {_ms(hi)} "
                     f"({holds} the measured {_ms(e.measured_us)})")
    return lines


def _held(e: StepError | None) -> str:
    if e is None:
        return ""
    return f"{_err(e.calibrated_us, e.measured_us)} against the datasheet's {_err(e.datasheet_us, e.measured_us)}"


def refusal_line(run: CalibrationRun, out: str) -> str:
    """Why ``out`` was not written (``run.refused`` is set)."""
    keep = f"keep the datasheet target {run.calibration.base.name}"
    if run.refused is Refusal.NOTHING_FITTED:
        return f"{out} not written: the profile informs no figure (each says why above); {keep}"
    if run.refused is Refusal.WITHIN_SPREAD:
        return (f"{out} not written: every figure this profile fits lies within the spread of the runs "
                f"{run.calibration.base.name} was fitted on (each says so above), so it would fit this run "
                f"and no other better; {keep}")
    if run.refused is Refusal.WORSE_HELD_OUT and run.held_out is not None:
        return (f"{out} not written: on the held-out run {run.held_out.source} the calibrated step is "
                f"{_held(run.held_out)}; {keep}")
    e = run.in_sample
    best = min(run.trials, key=lambda t: abs(t.step_us / e.measured_us - 1)) if e and run.trials else None
    got = f" (nearest: {_groups(best.groups)}, {_err(best.step_us, e.measured_us)})" if best and e else ""
    ds = f" than the datasheet's {_err(e.datasheet_us, e.measured_us)}" if e else ""
    return f"{out} not written: every combination of fitted figures put the in-sample step further off{ds}{got}; {keep}"


_RATE_WHY = {
    Unfitted.NO_SAMPLES: "the profile times no run of it",
    Unfitted.TOO_FEW: "too few runs to fit",
    Unfitted.UNPHYSICAL: "the fit was not physical",
    Unfitted.HIDDEN: "every run ended before its done was reached: the profile bounds it only",
    Unfitted.NO_LATENCY: "no latency told apart",
    Unfitted.DROPPED: "not adopted",
    Unfitted.NO_GAPS: "no idle gaps",
    Unfitted.WITHIN_SPREAD: "within the target's spread",
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
