"""The words and numbers of the model beside a measured profile (``Report.measured``).

``measured_lines`` is the text report's section; ``measured_dict`` the JSON report's
``measured`` object (docs/json-schema.md). Names from the profile are data: the text is
plain (no markup), the JSON escapes them by construction.
"""

from __future__ import annotations

from typing import Any

from hloscope.analysis.measured.compare import MeasuredComparison
from hloscope.units import human_us


def _ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def measured_lines(m: MeasuredComparison) -> list[str]:
    p = m.profile
    lines = ["", f"measured ({p.kind}): {p.source}" + (f", module {p.module}" if p.module else "")]
    if p.step_us:
        runs = ", ".join(f"{u / 1e3:.2f}" for u in p.step_us)
        med = p.median_step_us or 0.0
        sim = "-" if m.predicted_step_us is None else human_us(m.predicted_step_us)
        ratio = _ratio(m.predicted_step_us / med if m.predicted_step_us is not None and med else None)
        lines.append(f"  step: measured median {human_us(med)} over {len(p.step_us)} executions ({runs} ms); "
                     f"simulated {sim} ({ratio} of measured)")
    lines.append(f"  coverage: {m.matched_ops} of {m.measured_ops} measured ops name an instruction of this module "
                 f"({100 * m.matched_fraction:.1f}%)" + (f"; not: {', '.join(m.unmatched)}" if m.unmatched else ""))
    rows = [["class", "ops", "predicted", "measured", "predicted/measured"]]
    for c in m.classes:
        rows.append([str(c.name), str(c.ops), human_us(c.predicted_us), human_us(c.measured_us), _ratio(c.ratio)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines += ["  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    if m.overlaps:
        lines.append("  async ops, measured overlap (share of the kernel's time other ops ran beside it) "
                     "beside the simulation:")
        for o in m.overlaps:
            flag = "  <- disagree" if o.disagree else ""
            seen = "hidden" if o.hidden_measured else "exposed"
            lines.append(f"    {o.start} ({o.op}): measured {human_us(o.measured_us)}, "
                         f"{100 * o.measured_overlap:.0f}% overlapped ({seen}); "
                         f"simulated wait {human_us(o.simulated_wait_us)} "
                         f"({'hidden' if o.hidden_by_model else 'exposed'}){flag}")
    worst = sorted((op for op in m.ops if op.measured_us > 0), key=lambda op: -abs(op.predicted_us - op.measured_us))
    if worst:
        lines.append("  largest misses (predicted vs measured, per execution):")
        for op in worst[:5]:
            lines.append(f"    {op.name} ({op.op_class}, x{op.calls}): {human_us(op.predicted_us)} vs "
                         f"{human_us(op.measured_us)} ({_ratio(op.ratio)})")
    return lines


def measured_clause(m: MeasuredComparison, instruction: str) -> str:
    """One instruction's measured time beside the model's ("" when the profile has none): the
    TUI's detail pane shows it under the estimate."""
    ops = [o for o in m.ops if o.instruction == instruction]
    if not ops:
        return ""
    meas = sum(o.measured_us for o in ops)
    pred = sum(o.predicted_us for o in ops)
    spread = sum(o.spread_us for o in ops)
    calls = sum(o.calls for o in ops)
    ratio = _ratio(pred / meas if meas > 0 else None)
    return (f"measured {human_us(meas)} per execution (x{calls}, spread {human_us(spread)}); model {human_us(pred)}, "
            f"{ratio} of measured")


def measured_dict(m: MeasuredComparison) -> dict[str, Any]:
    p = m.profile
    med = p.median_step_us
    return {
        "source": p.source,
        "kind": p.kind,
        "module": p.module,
        "step_us": None if med is None else round(med, 1),
        "step_us_runs": [round(u, 1) for u in p.step_us],
        "simulated_step_us": None if m.predicted_step_us is None else round(m.predicted_step_us, 1),
        "measured_ops": m.measured_ops,
        "matched_ops": m.matched_ops,
        "matched_fraction": round(m.matched_fraction, 4),
        "unmatched": list(m.unmatched),
        "classes": [{"name": str(c.name), "ops": c.ops, "predicted_us": round(c.predicted_us, 1),
                     "measured_us": round(c.measured_us, 1),
                     "ratio": None if c.ratio is None else round(c.ratio, 3)} for c in m.classes],
        "ops": [{"name": o.name, "instruction": o.instruction, "class": str(o.op_class), "calls": o.calls,
                 "predicted_us": round(o.predicted_us, 2), "measured_us": round(o.measured_us, 2),
                 "spread_us": round(o.spread_us, 2)} for o in m.ops],
        "async": [{"start": o.start, "op": o.op, "measured_us": round(o.measured_us, 1),
                   "measured_overlap": round(o.measured_overlap, 3), "simulated_wait_us": round(o.simulated_wait_us, 1),
                   "hidden_by_model": o.hidden_by_model, "hidden_measured": o.hidden_measured,
                   "disagree": o.disagree} for o in m.overlaps],
    }
