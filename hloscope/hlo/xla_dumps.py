"""Parsers of the memory texts XLA dumps beside an optimized module (no analysis, no JAX).

XLA writes, with ``--xla_dump_to``, a memory-usage report (``*-memory-usage-report.txt``),
a live-range dump (``*-live-range.txt``) and a buffer assignment
(``*-buffer-assignment.txt``). ``hloscope compile`` keeps the parts the memory
analysis reads, under the file names below; :class:`XlaDumpTexts` carries them to
the analysis, and the three parsers turn them into plain figures.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

#: Files of an ``hloscope compile`` artifact folder that hold XLA's memory texts (docs/compile.md).
MEMORY_REPORT_FILE = "memory-usage-report.txt"
LIVE_AT_PEAK_FILE = "live-range-at-peak.txt"
BUFFER_ASSIGNMENT_FILE = "buffer-assignment-at-peak.txt"
#: XLA's scheduler and latency-estimator log lines of the compile (``hloscope.hlo.xla_log``).
SCHEDULER_LOG_FILE = "xla-scheduler.log"
DUMP_FILES = (MEMORY_REPORT_FILE, LIVE_AT_PEAK_FILE, BUFFER_ASSIGNMENT_FILE, SCHEDULER_LOG_FILE)


@dataclass(frozen=True)
class XlaDumpTexts:
    """XLA's memory texts of one compiled module (None: not dumped or not kept).

    memory_report: the memory-usage report. live_range: the live-range dump, or its
    peak section. buffer_assignment: buffer-assignment ``value:`` lines. scheduler_log:
    XLA's scheduler and latency-estimator log lines (``hloscope.hlo.xla_log`` reads them).
    target_arguments: the module's ``*.target_arguments.txt`` in an XLA dump folder ("" when
    absent; TPU dumps write it, and it names the TPU version).
    """

    memory_report: str | None = None
    live_range: str | None = None
    buffer_assignment: str | None = None
    scheduler_log: str | None = None
    target_arguments: str = ""

    @classmethod
    def from_files(cls, files: Mapping[str, str | None]) -> XlaDumpTexts:
        """From artifact file name -> text (a compile's ``extra_files``, an artifact folder)."""
        return cls(files.get(MEMORY_REPORT_FILE), files.get(LIVE_AT_PEAK_FILE), files.get(BUFFER_ASSIGNMENT_FILE),
                   files.get(SCHEDULER_LOG_FILE))


@dataclass(frozen=True)
class LiveAtPeak:
    """XLA's live-range dump at its peak point (all memory spaces together).

    schedule_point: the 0-based point in the flattened schedule XLA names as the peak.
    total_bytes: XLA's "peak usage" total at that point (device and host values).
    values: (position, bytes) in XLA's order (largest first); XLA may list only the larger ones.
    """

    schedule_point: int
    total_bytes: int
    values: tuple[tuple[str, int], ...]


_SPACE_RE = re.compile(r"^Memory Space: .*\(color=(\d+)\)")
_TOTAL_RE = re.compile(r"^Total bytes: (\d+)")
_PEAK_HEAD_RE = re.compile(r"^\s*Live ranges at (\d+) \(peak\):")
_PEAK_VALUE_RE = re.compile(r"^\s{4}(\S+): (\d+) bytes")
_PEAK_TOTAL_RE = re.compile(r"^\s*Stack trace breakdown for peak usage: ([\d ]+) bytes")
_POSITIONS_HEAD_RE = re.compile(r"^<\d+ (\S+)(?: \(phi\))? @\d+>$")
_POSITION_RE = re.compile(r"^  (\S+)(?: \{([\d,]*)\})?$")
_VALUE_RE = re.compile(r"^ value: <\d+ (\S+)(?: \(phi\))? @(\d+)> \(size=(\d+),offset=\d+\): (.*)$")


def report_space_totals(text: str) -> dict[int, int]:
    """Memory-space color -> total bytes, from XLA's ``*-memory-usage-report.txt``."""
    out: dict[int, int] = {}
    color: int | None = None
    for line in text.splitlines():
        m = _SPACE_RE.match(line)
        if m:
            color = int(m.group(1))
            continue
        m = _TOTAL_RE.match(line)
        if m and color is not None:
            out[color] = int(m.group(1))
    return out


def parse_live_at_peak(text: str) -> LiveAtPeak | None:
    """The ``Live ranges at N (peak):`` list of a ``*-live-range.txt`` dump (whole or trimmed)."""
    point: int | None = None
    values: list[tuple[str, int]] = []
    total = 0
    for line in text.splitlines():
        if point is None:
            m = _PEAK_HEAD_RE.match(line)
            if m:
                point = int(m.group(1))
            continue
        m = _PEAK_TOTAL_RE.match(line)
        if m:
            total = int(m.group(1).replace(" ", ""))
            break
        m = _PEAK_VALUE_RE.match(line)
        if m:
            values.append((m.group(1), int(m.group(2))))
        elif line.strip() and not line.startswith("    "):
            break
    if point is None:
        return None
    return LiveAtPeak(point, total or sum(b for _, b in values), tuple(values))


def parse_assigned_values(text: str) -> dict[str, tuple[int, str]]:
    """Value position -> (memory-space color, shape text) from ``value:`` lines of a buffer assignment.

    A position without a shape index (``param.7``) is also stored as ``param.7{}``, the
    form the live-range dump uses.
    """
    out: dict[str, tuple[int, str]] = {}
    for line in text.splitlines():
        m = _VALUE_RE.match(line)
        if m:
            pos, color, shape = m.group(1), int(m.group(2)), m.group(4).strip()
            out.setdefault(pos, (color, shape))
            if not pos.endswith("}"):
                out.setdefault(pos + "{}", (color, shape))
    return out


_ALLOCATION_RE = re.compile(r"^allocation \d+: size (\d+),(.*):$")
_ALLOCATION_COLOR_RE = re.compile(r"\bcolor (\d+)\b")


def allocation_figures(text: str, host_color: int, on_chip: frozenset[int] = frozenset()) -> dict[str, int]:
    """The step's memory figures, bytes, from the ``allocation N: size S, ...:`` headers of a
    ``*-buffer-assignment.txt``, under the names ``compiled.memory_analysis()`` gives them
    (docs/compile.md): arguments (``parameter N``), outputs (``maybe-live-out``; an argument that is
    one is also aliased), temporaries (the rest; constants and thread-local buffers are neither),
    each for the device and (``host_*``) for ``host_color``. Colors in ``on_chip`` (a TPU's VMEM and
    SMEM) are counted in neither. Empty when the text has no allocation."""
    out = dict.fromkeys(("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
                         "temp_size_in_bytes", "host_argument_size_in_bytes", "host_output_size_in_bytes",
                         "host_alias_size_in_bytes", "host_temp_size_in_bytes"), 0)
    found = False
    for line in text.splitlines():
        m = _ALLOCATION_RE.match(line)
        if m is None:
            continue
        found = True
        size, what = int(m.group(1)), m.group(2)
        c = _ALLOCATION_COLOR_RE.search(what)
        color = int(c.group(1)) if c else 0
        if color in on_chip:
            continue
        prefix = "host_" if color == host_color else ""
        argument, live_out = " parameter " in what, "maybe-live-out" in what
        if argument:
            out[prefix + "argument_size_in_bytes"] += size
        if live_out:
            out[prefix + "output_size_in_bytes"] += size
            if argument:
                out[prefix + "alias_size_in_bytes"] += size
        if not argument and not live_out and " constant" not in what and "thread-local" not in what:
            out[prefix + "temp_size_in_bytes"] += size
    return out if found else {}


def parse_value_positions(text: str) -> dict[str, tuple[str, ...]]:
    """Value -> its other positions, from ``*-buffer-assignment-values.txt`` blocks (``<1792 name @0>``,
    `` positions:``, one ``  name`` or ``  name {i}`` line each). Both written as the live-range dump
    writes a position (``tuple.69{5}``, ``fusion-done.7{}``); the value's own position is left out."""
    out: dict[str, tuple[str, ...]] = {}
    value = ""
    found: list[str] = []
    in_positions = False
    for line in text.splitlines():
        m = _POSITIONS_HEAD_RE.match(line)
        if m:
            value = m.group(1) if m.group(1).endswith("}") else m.group(1) + "{}"
            found = []
            out[value] = ()
            in_positions = False
            continue
        if not value:
            continue
        if line == " positions:":
            in_positions = True
            continue
        p = _POSITION_RE.match(line) if in_positions else None
        if p is None:
            in_positions = False
            continue
        position = f"{p.group(1)}{{{p.group(2) or ''}}}"
        if position != value:
            found.append(position)
            out[value] = tuple(found)
    return out
