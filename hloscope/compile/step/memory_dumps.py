"""The memory texts XLA dumps for the optimized module, trimmed to what the memory analysis reads.

``memory_texts(dump, since)`` -> artifact file name -> text: XLA's memory-usage report, the
``Live ranges at N (peak):`` section of its live-range dump, and the buffer-assignment lines of the
values live at that peak (a 671B step's full assignment is tens of MB), followed by those values'
positions from XLA's ``*-buffer-assignment-values.txt``. The file names are the
artifact's (``hloscope.artifact``), where they are read back.
"""

from __future__ import annotations

import re
from pathlib import Path

from hloscope.artifact import BUFFER_ASSIGNMENT_FILE, LIVE_AT_PEAK_FILE, MEMORY_REPORT_FILE
from hloscope.compile.seam.xla_options import dumped


def live_at_peak(text: str) -> str:
    """The header and the ``Live ranges at N (peak):`` section (with XLA's stack-trace
    breakdown) of a ``*-live-range.txt`` dump; the per-instruction lists are dropped."""
    lines = text.splitlines()
    out = lines[:1]
    keep = False
    for line in lines[1:]:
        if re.match(r"\s*Live ranges at \d+ \(peak\):", line):
            keep = True
        if keep:
            out.append(line)
    return "\n".join(out) + "\n" if keep else ""


def assignment_at_peak(text: str, live_at_peak: str) -> str:
    """Buffer-assignment lines for the values live at peak: every ``allocation`` header
    line and the ``value:`` lines whose position is listed in ``live_at_peak``."""
    names = set(re.findall(r"^\s{4}(\S+): \d+ bytes", live_at_peak, re.M))
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith(("allocation ", "BufferAssignment")):
            out.append(line)
            continue
        m = re.match(r" value: <\d+ (\S+)(?: \(phi\))? @\d+>", line)
        # The live-range dump writes ``param.7{}`` where the assignment writes ``param.7``.
        if m and (m.group(1) in names or f"{m.group(1)}{{}}" in names):
            out.append(line)
    return "\n".join(out) + "\n"


def positions_at_peak(values: str, live_at_peak: str) -> str:
    """The header and ``positions:`` lines of the ``*-buffer-assignment-values.txt`` blocks of the values
    live at peak: where else each value is (``fusion-done.7`` for the value of
    ``loop_dynamic_update_slice_fusion.10``, the op a sugared ``fusion-start.7`` wraps, which the optimized
    module as compiled.as_text() prints it does not name)."""
    names = set(re.findall(r"^\s{4}(\S+): \d+ bytes", live_at_peak, re.M))
    out: list[str] = []
    keep = False
    in_positions = False
    for line in values.splitlines():
        m = re.match(r"<\d+ (\S+)(?: \(phi\))? @\d+>$", line)
        if m:
            keep = m.group(1) in names or f"{m.group(1)}{{}}" in names
            in_positions = False
            if keep:
                out.append(line)
            continue
        if not keep:
            continue
        if line == " positions:":
            in_positions = True
            out.append(line)
        elif in_positions and line.startswith("  "):
            out.append(line)
        else:
            in_positions = False
    return "\n".join(out) + "\n" if out else ""


def memory_texts(dump: str, since: float) -> dict[str, str]:
    """The memory texts of the optimized module in an XLA dump folder, trimmed to what
    the memory analysis reads (a 671B step's full buffer assignment is tens of MB)."""
    def newest(suffix: str) -> str:
        found = dumped(dump, f"*after_optimizations-{suffix}", since)
        return Path(found[-1]).read_text() if found else ""

    out: dict[str, str] = {}
    report = newest("memory-usage-report.txt")
    if report:
        out[MEMORY_REPORT_FILE] = report
    peak = live_at_peak(newest("live-range.txt"))
    if peak:
        out[LIVE_AT_PEAK_FILE] = peak
        assignment = newest("buffer-assignment.txt")
        if assignment:
            out[BUFFER_ASSIGNMENT_FILE] = assignment_at_peak(assignment, peak) + positions_at_peak(
                newest("buffer-assignment-values.txt"), peak)
    return out
