"""SummaryBar: the step totals and the memory facts, always visible above the lists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual.widgets import Static

from hloscope.analysis.kinds import VerdictKind
from hloscope.analysis.report import Report
from hloscope.tui.format import VERDICT_STYLE
from hloscope.tui.text import shown
from hloscope.units import human_bytes, human_us


def summary_text(report: Report, memory: Any, source: str = "a bare HLO file") -> Text:
    """Totals line; verdict counts and the simulated step; memory (device allocation vs HBM, largest at peak)."""
    s = report.summary
    t = Text()
    t.append(shown(report.module.name), style="bold")
    t.append(f" · target {shown(report.target.name)} · {s.transfers} transfers · to host "
             f"{human_bytes(s.to_host_bytes_per_step)}/step · to device {human_bytes(s.to_device_bytes_per_step)}"
             f"/step · exposed ~{human_us(s.est_exposed_us_per_step)}/step "
             f"({'simulated' if s.step is not None else 'estimate'})\n")
    for k, n in s.by_verdict.items():
        if n or k is not VerdictKind.UNSCHEDULED:
            t.append(f"{k.value} {n}", style=VERDICT_STYLE[k])
            t.append("  ")
    if s.step is not None:
        st = s.step
        t.append("· simulated step ")
        t.append(human_us(st.step_us), style="bold")
        t.append(f": compute {human_us(st.compute_us)}, waits on transfers {human_us(st.exposed_transfer_us)} "
                 f"/ collectives {human_us(st.exposed_collective_us)}"
                 + (f" / other {human_us(st.other_wait_us)}" if st.other_wait_us > 0 else "")
                 + (f" (host link {st.link_mode})" if st.link_mode != "achieved" else ""))
    t.append("\n")
    t.append_text(memory_text(memory, source))
    return t


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
    """Totals and memory facts of the loaded report."""

    def set_report(self, report: Report, memory: Any, source: str = "a bare HLO file") -> None:
        self.update(summary_text(report, memory, source))
