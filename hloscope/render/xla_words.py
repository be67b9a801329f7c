"""XLA's scheduler estimates in words, beside hloscope's (``report.xla``, ``hloscope.analysis.simulate.xla_view``).

Used by the table report, check messages and the TUI, so they read the same facts the
same way. Every function returns an empty result when the report has no scheduler log.
"""

from __future__ import annotations

from hloscope.analysis.report import Report
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.analysis.simulate.xla_view import XlaTransferView
from hloscope.render.scheduler_text import estimator_words
from hloscope.units import human_us

__all__ = ["xla_cell", "xla_clause", "xla_legend", "xla_step_words", "xla_view"]


def xla_view(report: Report, v: Verdict) -> XlaTransferView | None:
    """XLA's view of ``v``'s transfer when its figures are µs (the SOL estimator drove the schedule)."""
    if report.xla is None or report.xla.estimator != "sol":
        return None
    return report.xla.for_transfer(v.transfer.instruction.name)


def xla_cell(report: Report, v: Verdict) -> str:
    """The latency XLA assumed for the transfer, µs; ``*`` marks XLA's fixed default."""
    x = xla_view(report, v)
    if x is None or x.latency_us is None:
        return "-"
    return f"{x.latency_us:.1f}" + ("*" if x.default else "")


def xla_clause(report: Report, v: Verdict) -> str:
    """``XLA assumed 5000 us (a fixed default) and expected ~0.2 us of work in the window``, or ""."""
    x = xla_view(report, v)
    if x is None or x.latency_us is None:
        return ""
    assumed = f"XLA's scheduler assumed {human_us(x.latency_us)}"
    assumed += " (its fixed default for any host transfer, whatever the bytes)" if x.default else ""
    assumed += f" against ~{human_us(v.est_transfer_us)} here"
    if x.window_us is None:
        return assumed + "; it priced none of the window's work"
    priced = "" if x.priced == x.window_ops else f", {x.priced} of {x.window_ops} ops priced"
    return assumed + f", and expected ~{human_us(x.window_us)} of work in the window{priced}"


def xla_legend(report: Report) -> list[str]:
    """The lines that explain the ``xla us`` column, once per report."""
    if report.xla is None:
        return []
    # One estimator per report: the compile's record (the ``scheduler:`` line) names the one XLA
    # used; the log's reading of it (None when it logged no statistics) is only a fallback.
    run = report.scheduler
    if run is not None and run.name != "lhs":
        lines = ["xla us: no latency hiding scheduler ran (see the scheduler line), so XLA assumed no latencies; "
                 "none are shown"]
    elif report.xla.profile is not None:
        lines = [f"xla us: XLA scheduled with the profile {report.xla.profile or '(unnamed)'}, whose per-op "
                 "figures replace its estimator's; the log holds none of its own, so none are shown"]
    elif report.xla.estimator != "sol":
        if run is not None:
            used = f"its {estimator_words(run.estimator)}" if run.estimator else "its estimator"
            lines = [f"xla us: XLA's log holds no per-op figures in µs from {used}, so none are shown"]
        else:
            lines = [f"xla us: XLA's {report.xla.estimator or 'unknown'} latency estimator drove this schedule; "
                     "it logs no per-op figures in µs, so none are shown"]
    else:
        lines = ["xla us: the latency XLA's scheduler (SOL estimator) assumed between each start and its done; "
                 "* marks the fixed default it gives every host transfer, whatever its bytes"]
    step = xla_step_words(report)
    return lines + ([step] if step else [])


def xla_step_words(report: Report) -> str:
    """``XLA's scheduler times its schedule at 11.73 s per step (...); simulated here: 11.99 s``, or ""."""
    if report.xla is None or report.xla.step_us is None:
        return ""
    basis = ("with the profile's figures; ops it does not list keep its estimator's" if report.xla.profile is not None
             else "with its SOL estimator")
    ours = report.summary.step
    here = f"; simulated here: {human_us(ours.step_us)}" if ours is not None else ""
    return (f"xla step: XLA's scheduler times its own schedule at {human_us(report.xla.step_us)} per step ({basis}: "
            f"each scheduled computation's length times its runs per step){here}")
