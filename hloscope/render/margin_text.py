"""Words for blame, marginal cost and margins (``hloscope.analysis.simulate.margin``), one place for every view."""

from __future__ import annotations

from hloscope.analysis.kinds import Direction
from hloscope.analysis.report import Report
from hloscope.analysis.simulate.margin import TransferMargin
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.render.platforms import platform_text
from hloscope.units import human_us

#: Rows of the "fix first" list in the text report.
FIX_FIRST_ROWS = 10


def margin_cell(m: TransferMargin | None) -> str:
    """``3.1x``, ``>9.5x`` (no flip in the grid), or ``-`` (not judged by the simulation)."""
    if m is None:
        return "-"
    x = m.margin
    return f"{x:.2f}x" if x is not None else ">9.5x"


def flip_words(m: TransferMargin, direction: Direction) -> str:
    """``flips to partial below 50.0 GB/s H->D; to hidden with the work 1.4x slower``."""
    link = "D->H" if direction is Direction.TO_HOST else "H->D"
    parts = []
    if m.flip_link_factor is not None and m.flip_link_gbps is not None and m.flip_link_verdict is not None:
        side = "below" if m.flip_link_factor < 1 else "above"
        parts.append(f"to {m.flip_link_verdict} {side} {m.flip_link_gbps:.1f} GB/s {link} "
                     f"({m.flip_link_factor:.2f}x the link)")
    if m.flip_compute_factor is not None and m.flip_compute_verdict is not None:
        f = m.flip_compute_factor
        how = f"{f:.2f}x slower" if f >= 1 else f"{1 / f:.2f}x faster"
        parts.append(f"to {m.flip_compute_verdict} with the step's work {how}")
    if not parts:
        return "no flip between 0.105x and 9.51x of the link's bandwidth or of the work's time"
    return "flips " + "; ".join(parts)


def margin_line(report: Report, v: Verdict) -> str | None:
    """One line per judged transfer: margin, flips, marginal cost, exposure range (None: not judged
    by the simulation)."""
    m = report.margin_for(v)
    if m is None:
        return None
    if m.exposed_high_us <= 0:
        rng = "nothing charged to it in either error corner"
    elif m.exposed_high_us - m.exposed_low_us < 0.05:
        rng = f"~{human_us(m.exposed_high_us)} per step in both error corners"
    else:
        rng = (f"{human_us(m.exposed_low_us)}-{human_us(m.exposed_high_us)} per step across the model's "
               "per-class error")
    return (f"{v.verdict}, margin {margin_cell(m)} ({flip_words(m, v.transfer.direction)}); "
            f"marginal cost ~{human_us(m.marginal_us)} per step (the step without it); exposed {rng}")


def fix_first_lines(report: Report) -> list[str]:
    """The transfers ranked by marginal cost, with their blame, and how the blame adds up."""
    m = report.margins
    tl = report.timeline
    if m is None or tl is None:
        return []
    total = sum(t.blame_us for t in tl.transfers.values())
    lines = [f"blame: the step's {human_us(tl.exposed_transfer_us)} of waiting for transfers is charged to them: "
             f"~{human_us(total)} in all"]
    first = m.fix_first()
    if not first:
        lines.append("fix first: no transfer costs the simulated step anything (each made free saves nothing)")
        return lines
    lines.append("fix first (marginal cost: how much shorter the simulated step is with that transfer free):")
    for x in first[:FIX_FIRST_ROWS]:
        t = tl.transfers.get((x.computation, x.start))
        blame = f", blame ~{human_us(t.blame_us)}" if t is not None else ""
        lines.append(f"  {x.start} ({x.computation}): ~{human_us(x.marginal_us)} per step{blame}, "
                     f"{x.verdict}, margin {margin_cell(x)}")
    if len(first) > FIX_FIRST_ROWS:
        lines.append(f"  and {len(first) - FIX_FIRST_ROWS} more (the JSON has every one)")
    basis = platform_text(m.platform).margin_basis(m.calibrated)
    widened = ", widened to hold its own in-sample step error" if m.calibrated else ""
    lines.append(f"margins: {m.simulations} re-simulations; error corners from {basis} per-class errors{widened} "
                 f"(step {human_us(m.corner_step_us[0])} to {human_us(m.corner_step_us[1])})")
    return lines
