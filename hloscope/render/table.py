"""The human-readable table report: one row per transfer, the reasons, then totals."""

from __future__ import annotations

from typing import TextIO

from hloscope.analysis.intent.outcome import account_of
from hloscope.analysis.kinds import Direction, VerdictKind
from hloscope.analysis.report import Report
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.analysis.structure.host_work import HostWork
from hloscope.hlo.loader import ARTIFACT_NOTE
from hloscope.render.backend_words import platform_line
from hloscope.render.drain_text import drain_lines
from hloscope.render.fit import FittedTable, fit_lines, fit_table, moved_line
from hloscope.render.host_call_text import host_call_lines
from hloscope.render.implausible_text import implausible_lines
from hloscope.render.intent_text import intent_lines
from hloscope.render.margin_text import fix_first_lines, margin_line
from hloscope.render.measured_text import measured_lines
from hloscope.render.memory_text import memory_lines, remat_lines
from hloscope.render.name_words import legend, name_cell, unrequested_words
from hloscope.render.next_steps_text import next_steps_lines
from hloscope.render.options import RenderOptions
from hloscope.render.platforms import platform_words
from hloscope.render.scheduler_text import scheduler_line
from hloscope.render.slice_words import slice_line
from hloscope.render.unread_text import unread_clause, unread_lines
from hloscope.render.verdict_words import explain, slack_clause
from hloscope.render.xla_words import xla_cell, xla_clause, xla_legend
from hloscope.targets import Target
from hloscope.units import human_bytes, human_us
from hloscope.vocab import LinkMode

__all__ = ["COLUMNS", "TableRenderer", "format_columns", "human_bytes", "human_us", "source_cell", "transfer_row",
           "us_cell", "window_cell"]


def format_columns(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=False))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip())
    return out


def link_figures(report: Report) -> str:
    """Per-GPU host link bandwidth used for the estimates, per direction, in GB/s."""
    mode = report.cost.link_mode
    t = report.target
    d2h = report.cost.link_bandwidth(Direction.TO_HOST) / 1e9
    h2d = report.cost.link_bandwidth(Direction.TO_DEVICE) / 1e9
    shared = f", shared by {t.host_link_sharers} {t.device_word}s" if t.host_link_sharers > 1 else ""
    return f"{d2h:.1f} GB/s D->H, {h2d:.1f} GB/s H->D per {t.device_word}, {link_mode_words(t, mode)}{shared}"


def link_mode_words(t: Target, mode: str) -> str:
    """Which host-link figure the estimates read, as ``hloscope targets`` shows it: ``achieved``, or ``peak``
    where the target has no achieved figure (``-/-`` there: the peak stands in), or ``peak`` when asked for."""
    if mode != LinkMode.ACHIEVED:
        return str(mode)
    known = (t.host_link_achieved_to_host is not None, t.host_link_achieved_to_device is not None)
    if all(known):
        return "achieved"
    if not any(known):
        return "peak (no achieved figure for this target)"
    return "achieved D->H, peak H->D" if known[0] else "peak D->H, achieved H->D"


def arrow(direction: Direction) -> str:
    return "D->H" if direction is Direction.TO_HOST else "H->D"


def window_cell(v: Verdict) -> str:
    parts = []
    if v.compute:
        parts.append(f"{len(v.compute)} compute")
    if v.collectives:
        parts.append(f"{len(v.collectives)} coll")
    if not parts:
        parts.append("empty" if v.window_size == 0 else f"{v.window_size} free ops")
    return ", ".join(parts)


COLUMNS = ["transfer", "name", "source", "dir", "op", "bytes", "where", "x/step", "mode", "window", "~xfer us",
           "~hidden us", "verdict"]


def us_cell(us: float) -> str:
    """Microseconds with one decimal; small non-zero values keep enough digits not to read as 0.0."""
    if us == 0 or abs(us) >= 0.1:
        return f"{us:.1f}"
    return f"{us:.3f}" if abs(us) >= 0.001 else "<0.001"


def source_cell(v: Verdict) -> str:
    """``file.py:line`` of the moved tensor (the file's base name; the JSON has the full path)."""
    loc = v.transfer.source
    return f"{loc.file.rsplit('/', 1)[-1]}:{loc.line}" if loc else "-"


def transfer_row(v: Verdict) -> list[str]:
    t = v.transfer
    where = t.computation + (" (crosses iter)" if v.crosses_iteration else "")
    return [t.instruction.name, name_cell(t), source_cell(v), arrow(t.direction), t.op,
            human_bytes(t.bytes), where, str(t.executions), "async" if t.is_async else "sync", window_cell(v),
            us_cell(v.est_transfer_us), us_cell(v.est_hidden_us), v.verdict.upper()]


def stream_cell(report: Report, v: Verdict) -> str:
    """XLA's execution stream of the transfer's start (``compute:2``), ``-`` for a synchronous one."""
    s = report.streams.stream_of(v.transfer.computation, v.transfer.instruction.name) if report.streams else None
    return s.label if s is not None else "-"


class TableRenderer:
    name = "table"
    extension = ".txt"

    def render(self, report: Report, out: TextIO, options: RenderOptions) -> None:
        out.write("\n".join(self.lines(report, options.label, options.width, options.color)) + "\n")

    def lines(self, report: Report, label: str | None = None, width: int | None = None,
              color: bool = False) -> list[str]:
        """The report's lines; ``width``: fit them in so many columns (``render.fit``; None: whole lines),
        ``color``: the verdict words in colour."""
        s = report.summary
        t = report.target
        lines = [
            f"hloscope report: {report.module.source_path or label or report.inputs.label or '<text>'}: "
            f"module {report.module.name} "
            f"({'scheduled' if report.module.is_scheduled else 'NOT scheduled'}), "
            f"target {t.name} ({t.description}, host link {t.host_link}: {link_figures(report)})",
            *[line for line in (slice_line(report), scheduler_line(report.scheduler), platform_line(report)) if line],
            *(n for n in report.notes if n.startswith(ARTIFACT_NOTE)),
            "",
            *intent_lines(account_of(report)),
        ]
        table = FittedTable([], [])
        if report.verdicts:
            headers = COLUMNS
            if not report.module.is_scheduled:
                headers = [("logical bytes" if h == "bytes" else h) for h in COLUMNS]
            rows = [transfer_row(v) for v in report.verdicts]
            if report.xla is not None:  # XLA's own latency beside ours, for a compile whose log is known
                at = headers.index("~xfer us") + 1
                headers = [*headers[:at], "xla us", *headers[at:]]
                rows = [[*r[:at], xla_cell(report, v), *r[at:]] for r, v in zip(rows, report.verdicts, strict=True)]
            if report.streams is not None and report.streams.streams:  # XLA's execution stream of each start
                at = headers.index("window")
                headers = [*headers[:at], "stream", *headers[at:]]
                rows = [[*r[:at], stream_cell(report, v), *r[at:]] for r, v in zip(rows, report.verdicts, strict=True)]
            table = fit_table(headers, rows, [v.verdict for v in report.verdicts], width, color)
            lines += table.lines
            lines += legend(report.transfers)
            if not report.module.is_scheduled:
                lines.append("note: module before optimizations: logical bytes are whole arrays before "
                             "partitioning, not what one device moves; analyze the optimized module for that")
        else:
            lines.append("no host transfers found (nothing lives in memory space "
                         f"S({report.host_space}) and no placement annotations)")
        if report.verdicts:  # the explanations, each after one blank line (none: the totals' blank line only)
            lines.append("")
        for i, v in enumerate(report.verdicts):
            loc = report.source(v)
            src = f" [{loc}]" if loc else ""
            role = f" ({v.transfer.role})" if v.transfer.role else ""
            other = unrequested_words(v.transfer)
            other = f"; it {other}" if other else ""
            why = explain(v, platform_words(report.platform))
            lines.append(f"  {v.transfer.instruction.name}{role}: {why}{src}{other}")
            if table.moved[i]:  # the columns a narrow table left out
                lines.append(f"    {moved_line(table.moved[i])}")
            if clause := xla_clause(report, v):
                lines.append(f"    {clause}")
            if margin := margin_line(report, v):
                lines.append(f"    {margin}")
            if (unread := report.unread.of(v.transfer)) is not None:
                lines.append(f"    never read back: it {unread_clause(unread)}")
            room = report.slack_for(v)
            if room is not None and v.verdict in (VerdictKind.EXPOSED, VerdictKind.PARTIAL):
                lines.append(f"    {slack_clause(room)}")
        bv = s.by_verdict
        lines += [
            "",
            f"totals: {s.transfers} transfer(s); to host {human_bytes(s.to_host_bytes_per_step)}/step, "
            f"to device {human_bytes(s.to_device_bytes_per_step)}/step",
            "verdicts: " + ", ".join(f"{k} {n}" for k, n in bv.items() if n or k is not VerdictKind.UNSCHEDULED),
            f"estimated exposed transfer time: {human_us(s.est_exposed_us_per_step)} per step (estimate)",
        ]
        lines += unread_lines(report)
        if s.step is not None and s.implausible is not None:  # a miscount is never printed as a figure
            lines.append("simulated step: not shown: it rests on estimates that cannot be (named below)")
        elif s.step is not None:
            st = s.step
            lines.append(f"simulated step: {human_us(st.step_us)} = compute {human_us(st.compute_us)} + waiting for "
                         f"transfers {human_us(st.exposed_transfer_us)} + collectives "
                         f"{human_us(st.exposed_collective_us)} + other async {human_us(st.other_wait_us)} "
                         f"(host link {link_mode_words(t, st.link_mode).split(' (')[0]}"
                         + (f"; {st.extrapolated_loops} loop run(s) extrapolated from steady iterations"
                            if st.extrapolated_loops else "") + ")")
        lines += host_call_lines(report.host_call, report.target.name)
        lines += fix_first_lines(report)
        lines += next_steps_lines(report)
        if s.loops:
            lines.append("per computation (bytes per execution):")
            for lp in s.loops:
                lines.append(f"  {lp.computation} x{lp.executions}: to host "
                             f"{human_bytes(lp.to_host_bytes)}, to device {human_bytes(lp.to_device_bytes)}")
        if s.unknown_trip_counts:
            lines.append("note: trip count unknown for " + ", ".join(s.unknown_trip_counts) + " (counted once)")
        lines += host_work_lines(report.host_work)
        lines += xla_legend(report)
        lines += memory_lines(report)
        lines += remat_lines(report)
        lines += drain_lines(report)
        if report.measured is not None:
            lines += measured_lines(report.measured)
        lines += implausible_lines(report.summary.implausible)
        lines.append("all *us figures are roofline estimates (docs/cost-model.md), not measurements"
                     + ("; the measured ones are marked so" if report.measured is not None else ""))
        return fit_lines(lines, width)


def host_work_lines(work: HostWork) -> list[str]:
    """In-place host accesses and host computations: not transfers, named apart."""
    lines: list[str] = []
    for a in work.accesses:
        what = " and ".join(x for x in (f"reads {human_bytes(a.read_bytes)}" if a.read_bytes else "",
                                        f"writes {human_bytes(a.written_bytes)}" if a.written_bytes else "") if x)
        lines.append(f"in-place host access: {a.instruction.name} ({a.op}, {a.computation} x{a.executions}) {what} "
                     "of host memory directly, with no transfer op: it runs at host-link speed; copy the "
                     "operand to device memory first if it is read more than once")
    for c in work.compute:
        if c.start is None:
            lines.append(f"host compute: {c.computation} ({c.instructions} instructions) runs on the "
                         f"{c.thread} thread; no async start enters it (called from another computation, or not "
                         "at all)")
            continue
        done = c.done.name if c.done is not None else "no done"
        what = f"the computation {c.start.name} wraps" if c.wrapped else c.computation
        lines.append(f"host compute: {what} ({c.instructions} instructions) runs on the {c.thread} thread, "
                     f"entered by {c.start.name} ({human_bytes(c.operand_bytes)} in) and left by {done} "
                     f"({human_bytes(c.result_bytes)} out) in {c.caller}; not judged as GPU kernels "
                     "(XLA's scheduler does not schedule host computations)")
    return lines

