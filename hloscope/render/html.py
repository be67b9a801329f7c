"""A report as one self-contained HTML fragment: what a notebook cell shows (``StepReport._repr_html_``).

Three parts, the table report's facts in HTML: the "offloads asked for" section
(``intent_text``), the transfer table (``table.transfer_row``) with each verdict
in its colour and its why (``verdict_words.explain``) beside it, and the simulated step
(``report.timeline``) as an inline SVG, one lane per resource, host transfers
coloured by verdict. No JavaScript and no external resource: it renders the same in
Jupyter, Colab, VS Code and a static ``nbconvert`` page. Every string that comes
from the module (names, op names, paths) goes through :func:`html.escape`.

``render(report, out, options)`` writes the fragment; :func:`html_fragment` returns it.
:func:`markdown_summary` is the short Markdown text for front ends that prefer it
(``_repr_markdown_``): the headline, the verdict counts and the simulated step.
"""

from __future__ import annotations

from html import escape
from typing import TextIO

from hloscope.analysis.intent.outcome import account_of
from hloscope.analysis.kinds import VerdictKind
from hloscope.analysis.report import Report
from hloscope.analysis.simulate.timeline import Slice, SliceKind, Timeline
from hloscope.analysis.structure.opclass import Resource
from hloscope.render.check.markdown import md
from hloscope.render.intent_text import intent_headline, intent_lines
from hloscope.render.name_words import legend, name_cell
from hloscope.render.options import RenderOptions
from hloscope.render.platforms import platform_words
from hloscope.render.table import COLUMNS, link_figures, link_mode_words, transfer_row
from hloscope.render.verdict_words import explain
from hloscope.units import human_bytes, human_us

#: Verdict colours (background, text): the TUI's and the diagrams' meaning, readable on white and dark themes.
VERDICT_COLOURS: dict[VerdictKind, tuple[str, str]] = {
    VerdictKind.HIDDEN: ("#2e7d32", "#ffffff"),
    VerdictKind.PARTIAL: ("#f9a825", "#000000"),
    VerdictKind.EXPOSED: ("#c62828", "#ffffff"),
    VerdictKind.SYNC: ("#6a1b9a", "#ffffff"),
    VerdictKind.UNSCHEDULED: ("#757575", "#ffffff"),
}
#: Lane colours of the timeline's other slices.
_KIND_FILL = {SliceKind.COMPUTE: "#90a4ae", SliceKind.WAIT: "#ef9a9a", SliceKind.COLLECTIVE: "#64b5f6",
              SliceKind.ASYNC: "#b39ddb", SliceKind.TRANSFER: "#9e9e9e", SliceKind.EXTRAPOLATED: "#cfd8dc"}
_DRAW_ORDER = {VerdictKind.UNSCHEDULED: 0, VerdictKind.HIDDEN: 1, VerdictKind.PARTIAL: 2, VerdictKind.EXPOSED: 3,
               VerdictKind.SYNC: 4}
_WIDTH = 900  # px of the time axis
_LANE = 18
_LABEL = 120
_MIN_PX = 0.5  # narrower slices of one lane and kind are merged into one rectangle


def _verdict_badge(v: VerdictKind) -> str:
    bg, fg = VERDICT_COLOURS[v]
    return (f'<span class="hloscope-verdict" style="background:{bg};color:{fg};padding:0 .4em;'
            f'border-radius:3px;font-weight:bold">{escape(str(v).upper())}</span>')


def _intent(report: Report) -> list[str]:
    account = account_of(report)
    lines = intent_lines(account)
    if not lines:
        return []
    # intent_lines starts with the headline: the summary shows it, the body the rest
    return ["<details open><summary><b>" + escape(intent_headline(account)) + "</b></summary>",
            '<pre style="white-space:pre-wrap;font-size:90%">' + escape("\n".join(lines[1:]).rstrip()) + "</pre>",
            "</details>"]


def _table(report: Report) -> list[str]:
    if not report.verdicts:
        return [f"<p>No host transfers found (nothing lives in memory space S({report.host_space}) and no "
                "placement annotations).</p>"]
    head = "".join(f"<th>{escape(h)}</th>" for h in COLUMNS)
    out = ['<table class="hloscope-transfers" style="border-collapse:collapse;font-size:90%;white-space:nowrap">',
           f"<thead><tr>{head}</tr></thead><tbody>"]
    for v in report.verdicts:
        cells = transfer_row(v)[:-1]
        row = "".join(f"<td>{escape(c)}</td>" for c in cells)
        out.append(f'<tr data-verdict="{escape(str(v.verdict))}">{row}<td>{_verdict_badge(v.verdict)}</td></tr>')
    out.append("</tbody></table>")
    out += [f"<p>{escape(note)}</p>" for note in legend(report.transfers)]
    out.append("<details><summary>Why each verdict</summary><ul>")
    out += [f"<li><code>{escape(v.transfer.instruction.name)}</code> {_verdict_badge(v.verdict)}: "
            f"{escape(explain(v, platform_words(report.platform)))}</li>" for v in report.verdicts]
    out.append("</ul></details>")
    return out


def _merged(slices: tuple[Slice, ...], scale: float) -> list[tuple[float, float, Slice, int]]:
    """(x, width, first slice, how many) per rectangle; neighbours of one kind under ``_MIN_PX`` merge."""
    rects: list[tuple[float, float, Slice, int]] = []
    for s in slices:
        x, w = s.start_us * scale, max((s.end_us - s.start_us) * scale, 0.0)
        if rects:
            px, pw, first, n = rects[-1]
            if (first.kind is s.kind and s.kind is not SliceKind.TRANSFER and pw < _MIN_PX
                    and x - (px + pw) < _MIN_PX):
                rects[-1] = (px, max(pw, x + w - px), first, n + 1)
                continue
        rects.append((x, w, s, 1))
    return rects


def _slice_fill(s: Slice, verdicts: dict[tuple[str, str], VerdictKind]) -> str:
    if s.kind is SliceKind.TRANSFER and (v := verdicts.get((s.computation, s.name))) is not None:
        return VERDICT_COLOURS[v][0]
    return _KIND_FILL[s.kind]


def _draw_order(s: Slice, verdicts: dict[tuple[str, str], VerdictKind]) -> int:
    if s.kind is not SliceKind.TRANSFER:
        return -2
    v = verdicts.get((s.computation, s.name))
    return -1 if v is None else _DRAW_ORDER[v]


def timeline_svg(report: Report, timeline: Timeline) -> str:
    """The simulated step as an inline SVG: one lane per resource used, µs on the x axis."""
    lanes = [r for r in Resource if timeline.slices.get(r)]
    step = max(timeline.step_us, 1e-9)
    scale = _WIDTH / step
    verdicts = {(v.transfer.computation, v.transfer.instruction.name): v.verdict for v in report.verdicts}
    height = _LANE * len(lanes) + 24
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="hloscope-timeline" width="{_LABEL + _WIDTH + 10}" '
           f'height="{height}" font-family="sans-serif" font-size="11">',
           f"<title>{escape('simulated step: ' + human_us(timeline.step_us))}</title>"]
    for i, res in enumerate(lanes):
        y = i * _LANE
        out.append(f'<text x="0" y="{y + 13}">{escape(str(res))}</text>')
        out.append(f'<rect x="{_LABEL}" y="{y + 2}" width="{_WIDTH}" height="{_LANE - 4}" fill="#f5f5f5"/>')
        # transfers sharing a link overlap: draw the worst verdict last, on top
        rects = sorted(_merged(timeline.slices[res], scale), key=lambda r: _draw_order(r[2], verdicts))
        for x, w, s, n in rects:
            tip = f"{s.name} ({s.kind}, {human_us(s.end_us - s.start_us)}"
            tip += f", {human_bytes(s.bytes)})" if s.bytes else ")"
            if n > 1:
                tip = f"{n} {s.kind} slices from {s.name}"
            out.append(f'<rect x="{_LABEL + x:.2f}" y="{y + 2}" width="{max(w, _MIN_PX):.2f}" height="{_LANE - 4}" '
                       f'fill="{_slice_fill(s, verdicts)}" data-kind="{escape(str(s.kind))}">'
                       f"<title>{escape(tip)}</title></rect>")
    axis_y = _LANE * len(lanes) + 14
    out.append(f'<text x="{_LABEL}" y="{axis_y}">0</text>')
    out.append(f'<text x="{_LABEL + _WIDTH}" y="{axis_y}" text-anchor="end">'
               f"{escape(human_us(timeline.step_us))}</text>")
    out.append("</svg>")
    return "".join(out)


def _timeline(report: Report) -> list[str]:
    tl, st = report.timeline, report.summary.step
    if tl is None or st is None:
        return []
    legend = " ".join(f'{_verdict_badge(k)}' for k in (VerdictKind.HIDDEN, VerdictKind.PARTIAL, VerdictKind.EXPOSED,
                                                       VerdictKind.SYNC))
    return ["<p><b>Simulated step</b>: " + escape(
                f"{human_us(st.step_us)} = compute {human_us(st.compute_us)} + waiting for transfers "
                f"{human_us(st.exposed_transfer_us)} + collectives {human_us(st.exposed_collective_us)} + other "
                f"async {human_us(st.other_wait_us)} (host link {link_mode_words(report.target, st.link_mode)})")
            + "</p>",
            f'<div style="overflow-x:auto">{timeline_svg(report, tl)}</div>',
            f"<p>host transfers: {legend}</p>"]


def html_fragment(report: Report) -> str:
    """The report as one HTML fragment (no ``<html>``, no script)."""
    t = report.target
    s = report.summary
    where = report.module.source_path or report.inputs.label or "<text>"
    counts = ", ".join(f"{k} {n}" for k, n in s.by_verdict.items() if n or k is not VerdictKind.UNSCHEDULED)
    parts = ['<div class="hloscope-report">',
             "<style>.hloscope-report table.hloscope-transfers td, .hloscope-report table.hloscope-transfers th"
             "{white-space:nowrap;padding:1px 6px}</style>",
             f"<p><b>hloscope report</b>: {escape(where)}: module <code>{escape(report.module.name)}</code> "
             f"({'scheduled' if report.module.is_scheduled else 'NOT scheduled'}), target "
             f"<b>{escape(t.name)}</b> ({escape(t.description)}, host link {escape(t.host_link)}: "
             f"{escape(link_figures(report))})</p>",
             *_intent(report), *_table(report),
             f"<p>{escape(f'{s.transfers} transfer(s); verdicts: {counts}; estimated exposed transfer time ')}"
             f"<b>{escape(human_us(s.est_exposed_us_per_step))}</b> per step</p>",
             *_timeline(report),
             "<p><small>All us figures are roofline estimates (docs/cost-model.md), not measurements.</small></p>",
             "</div>"]
    return "\n".join(parts)


def markdown_summary(report: Report) -> str:
    """A few Markdown lines: the step, the verdict counts, the worst transfers, the simulated step."""
    s = report.summary
    counts = ", ".join(f"{k} {n}" for k, n in s.by_verdict.items() if n or k is not VerdictKind.UNSCHEDULED)
    lines = [f"**hloscope report**: module {md(report.module.name)}, target {md(report.target.name)}", "",
             f"- {s.transfers} transfer(s); verdicts: {md(counts)}",
             f"- estimated exposed transfer time: {md(human_us(s.est_exposed_us_per_step))} per step"]
    if s.step is not None:
        lines.append(f"- simulated step: {md(human_us(s.step.step_us))}")
    worst = sorted((v for v in report.verdicts if v.verdict in (VerdictKind.SYNC, VerdictKind.EXPOSED)),
                   key=lambda v: -v.est_exposed_us * v.transfer.executions)[:5]
    for v in worst:
        name = name_cell(v.transfer, v.transfer.instruction.name)
        why = explain(v, platform_words(report.platform))
        lines.append(f"- **{md(str(v.verdict).upper())}** {md(name)}: {md(why)}")
    return "\n".join(lines) + "\n"


class HtmlRenderer:
    """The report as an HTML fragment with an inline SVG timeline (what a notebook shows)."""

    name = "html"
    extension = ".html"

    def render(self, report: Report, out: TextIO, options: RenderOptions) -> None:
        del options  # one layout
        out.write(html_fragment(report) + "\n")
