"""SummaryBar: the step totals and the memory facts, always visible above the lists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text
from textual.widgets import Static

from hloscope.analysis.kinds import VerdictKind
from hloscope.analysis.report import Report
from hloscope.render.host_call_text import call_brief
from hloscope.tui.format import VERDICT_STYLE
from hloscope.tui.text import shown
from hloscope.units import human_bytes, human_us

#: Text.wrap measures with a console; no output goes to it.
_CONSOLE = Console(width=1000, file=None, color_system=None)


#: Between two phrases of the totals on one line.
SEP = " · "


def summary_phrases(report: Report, memory: Any, source: str = "a bare HLO file") -> list[tuple[Text, int]]:
    """The totals as whole phrases in reading order, each with its rank: where the bar has too few
    lines, the lowest rank goes first (:func:`lay_out`), so no phrase is ever cut mid-figure."""
    s = report.summary
    out: list[tuple[Text, int]] = [(Text(shown(report.module.name), style="bold"), 10),
                                   (Text(f"target {shown(report.target.name)}"), 8),
                                   (Text(f"{s.transfers} transfers"), 6),
                                   (Text(f"to host {human_bytes(s.to_host_bytes_per_step)}/step, to device "
                                         f"{human_bytes(s.to_device_bytes_per_step)}/step"), 2),
                                   (Text(f"exposed ~{human_us(s.est_exposed_us_per_step)}/step "
                                         f"({'simulated' if s.step is not None else 'estimate'})"), 5)]
    counts = Text()
    for k, n in s.by_verdict.items():
        if n or k is not VerdictKind.UNSCHEDULED:
            counts.append(f"{k.value} {n}", style=VERDICT_STYLE[k])
            counts.append("  ")
    counts.rstrip()
    out.append((counts, 9))
    if s.step is not None:
        st = s.step
        step = Text("simulated step ")
        step.append(human_us(st.step_us), style="bold")
        out.append((step, 8))
    if brief := call_brief(report.host_call):  # the call's host work (issue 55): a whole phrase
        out.append((Text(brief, style="bold #ebcb8b"), 7))
    if report.measured is not None:
        from hloscope.render.measured_text import summary_phrases as measured  # lazy: render/, with a profile

        out += [(Text(words, style="#88c0d0"), rank) for words, rank in measured(report.measured)]
    if s.step is not None:
        st = s.step
        out.append((Text(f"compute {human_us(st.compute_us)}, waits on transfers {human_us(st.exposed_transfer_us)} "
                         f"/ collectives {human_us(st.exposed_collective_us)}"
                         + (f" / other {human_us(st.other_wait_us)}" if st.other_wait_us > 0 else "")
                         + (f" (host link {st.link_mode})" if st.link_mode != "achieved" else "")), 1))
    out.append((memory_text(memory, source), 3))
    return out


def lay_out(phrases: list[tuple[Text, int]], width: int, lines: int) -> Text:
    """``phrases`` on at most ``lines`` lines of ``width`` cells, in their order, joined by :data:`SEP`:
    a phrase that does not fit the rest of a line starts the next. They are taken by rank, highest
    first (the earlier of equal rank first), each if the lines still hold it, so a phrase left out is
    left out whole. A phrase wider than a line wraps at its spaces."""
    order = sorted(range(len(phrases)), key=lambda i: (-phrases[i][1], i))
    kept: list[int] = []
    rows: list[Text] = []
    for i in order:
        trial = sorted([*kept, i])
        got = _rows([phrases[j][0] for j in trial], width)
        if len(got) <= lines or not kept:
            kept, rows = trial, got
    out = Text()
    for i, row in enumerate(rows[:lines]):
        if i:
            out.append("\n")
        out.append_text(row)
    return out


def _rows(texts: list[Text], width: int) -> list[Text]:
    rows: list[Text] = [Text()]
    for t in texts:
        if not t.cell_len:
            continue
        row = rows[-1]
        sep = SEP if row.cell_len else ""
        if row.cell_len + len(sep) + t.cell_len <= width:
            row.append(sep)
            row.append_text(t)
            continue
        if row.cell_len:
            rows.append(Text())
        for part in t.wrap(_CONSOLE, max(1, width)):
            if rows[-1].cell_len:
                rows.append(Text())
            rows[-1].append_text(part)
    return rows


def memory_text(memory: Any, source: str = "a bare HLO file") -> Text:
    """The memory line; ``source``: what was opened, in words (:func:`source_words`), for when
    it carries no memory figures."""
    t = Text()
    if memory is None:
        t.append(f"memory: not known for {source} (open an `hloscope compile` artifact folder or use "
                 "--workload)", style="dim")
        return t
    fits = memory.fits
    t.append("memory: device allocation ")
    t.append(human_bytes(memory.device_allocation_bytes), style="bold")
    t.append(f" of {human_bytes(memory.hbm_bytes)} HBM: ")
    t.append("fits" if fits else f"does NOT fit (+{human_bytes(memory.pressure.excess_bytes)})",
             style="bold #a3be8c" if fits else "bold #bf616a")
    t.append(f" · host {human_bytes(memory.host_bytes)}")
    if memory.top_buffers:
        t.append(" · largest at peak: ")
        t.append(", ".join(f"{human_bytes(b.size_bytes)} {b.role.value}" for b in memory.top_buffers[:3]))
    return t


def source_words(path: str | None) -> str:
    """What kind of input ``path`` is, in the words of the memory line (issue 36: an nsys-jax archive
    was called a bare HLO file)."""
    if path is None:
        return "this compile"

    p = Path(path)
    try:
        with p.open("rb") as f:
            zipped = f.read(4) == b"PK\x03\x04"  # a .zip the loader read: an nsys-jax archive
    except OSError:
        zipped = False
    if zipped:
        return "an nsys-jax archive (it holds the module and its profile, not XLA's memory figures)"
    if p.is_dir():
        return "a dump folder without XLA's buffer assignment (*-buffer-assignment.txt)"
    if p.name.endswith((".pb", ".pb.xz")):
        return "an HloProto file"
    return "a bare HLO file"


class SummaryBar(Static):
    """Totals and memory facts of the loaded report, laid out anew for its width (:func:`lay_out`):
    as many lines as its ``max-height`` (app.tcss) allows, whole phrases only."""

    phrases: list[tuple[Text, int]] | None = None

    def set_report(self, report: Report, memory: Any, source: str = "a bare HLO file") -> None:
        self.phrases = summary_phrases(report, memory, source)
        self._fill()

    def on_resize(self) -> None:
        self.call_after_refresh(self._fill)  # laid out again after this layout pass, at its new width

    def _fill(self) -> None:
        if self.phrases is None:
            return
        lines = self.styles.max_height
        most = int(lines.value) if lines is not None and lines.is_cells else 4
        # the content's width (inside its padding 0 1, app.tcss); before the first layout, the screen's less that
        width = self.size.width or max(1, self.app.size.width - 2)
        self.update(lay_out(self.phrases, width, most))
