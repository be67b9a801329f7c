"""What the TUI opens, checked before the app starts and loaded in a worker.

``check_source`` does the cheap checks (path exists, a folder holds a module,
the file starts like HLO text) so bad input is a one-line error before the
terminal is taken over. ``load_source`` does the slow part (read, parse,
analyze, or compile a built-in workload) and returns a :class:`Loaded`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError

if TYPE_CHECKING:  # the analysis is imported by the worker, not before the first screen
    from hloscope.analysis.report import Report
    from hloscope.tui.rows import ScheduleLayout
    from hloscope.tui.timeaxis import TimeAxis

#: Bytes read to decide whether a file looks like HLO text.
_SNIFF_BYTES = 64 * 1024


@dataclass(frozen=True)
class WorkloadSpec:
    """A built-in workload to compile (``hloscope tui --workload``), with the compile options."""

    name: str
    sets: dict[str, str]
    policy: str | None
    devices: int
    lhs: bool
    pipelined: bool
    xla_flags: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Source:
    """One schedule to open: a path (file, dump folder, artifact folder) or a workload."""

    path: str | None = None
    workload: WorkloadSpec | None = None
    target: str | None = None  # None: the artifact folder's own target, else the default target
    host_space: int = 5

    @property
    def label(self) -> str:
        if self.workload is not None:
            return f"workload {self.workload.name} ({self.target_name}, {self.workload.devices} devices)"
        return str(self.path)

    @property
    def target_name(self) -> str:
        """``target``, else the target an ``hloscope compile`` artifact folder was compiled for, else the default."""
        from hloscope.targets import DEFAULT_TARGET

        if self.target:
            return self.target
        if self.path:
            from hloscope.artifact import read_manifest

            try:
                name = (read_manifest(self.path) or {}).get("target")
            except HloscopeError:  # an unreadable manifest is reported when the folder is loaded
                name = None
            if isinstance(name, str) and name:
                return name
        return DEFAULT_TARGET


@dataclass(frozen=True)
class Loaded:
    """A loaded schedule: the report, its memory facts when known, and the HLO text for line lookups.

    times: the simulated step as a time axis for the schedule (None when the module
    was not simulated). layout: the schedule's lanes, the entry computation laid
    out (None only for a Loaded built by hand). seconds: how long reading, parsing and analysing took.
    """

    source: Source
    report: Report
    text: str
    file: str
    memory: Any = None  # hloscope.analysis.memory.MemoryFacts or None
    seconds: float = 0.0
    times: TimeAxis | None = None
    layout: ScheduleLayout | None = None
    _line_starts: list[int] = field(default_factory=list, repr=False, compare=False)

    def hlo_line(self, line: int) -> str:
        """The 1-based line ``line`` of the HLO text ("" when out of range)."""
        if not self._line_starts:
            starts = self._line_starts
            starts.append(0)
            find = self.text.find
            i = find("\n")
            while i >= 0:
                starts.append(i + 1)
                i = find("\n", i + 1)
        if not 1 <= line <= len(self._line_starts):
            return ""
        begin = self._line_starts[line - 1]
        end = self.text.find("\n", begin)
        return self.text[begin:] if end < 0 else self.text[begin:end]


def check_source(source: Source) -> None:
    """Raise a one-line :class:`HloscopeError` for input that cannot be a schedule."""
    from hloscope.hlo.loader import pick_dump_file
    from hloscope.targets import get_target

    get_target(source.target_name)
    if source.workload is not None:
        return
    path = Path(str(source.path))
    if not path.exists():
        raise HloscopeError(f"{path}: no such file or directory", EXIT_BAD_INPUT)
    if path.is_dir():
        path = pick_dump_file(path)
    try:
        with open(path, "rb") as f:
            head = f.read(_SNIFF_BYTES)
    except OSError as e:
        raise HloscopeError(f"{path}: cannot read: {e.strerror or e}", EXIT_BAD_INPUT) from None
    if not head.strip():
        raise HloscopeError(f"{path}: empty file; expected HLO text", EXIT_BAD_INPUT)
    if b"\0" in head or b"HloModule" not in head:
        raise HloscopeError(f"{path}: not HLO text (no 'HloModule' header in its first {_SNIFF_BYTES // 1024} KiB)",
                            EXIT_BAD_INPUT)


def load_source(source: Source) -> Loaded:
    """Read (or compile) and analyze ``source``. Raises :class:`HloscopeError` on bad input."""
    import time

    from hloscope.tui.rows import ScheduleLayout
    from hloscope.tui.timeaxis import TimeAxis

    t0 = time.perf_counter()
    loaded = _compile(source) if source.workload is not None else _read(source)
    timeline = loaded.report.timeline
    times = TimeAxis(timeline) if timeline is not None else None
    layout = ScheduleLayout(loaded.report)
    layout.rows(loaded.report.module.entry_name)  # the first schedule shown, laid out off the UI thread
    return replace(loaded, seconds=time.perf_counter() - t0, times=times, layout=layout)


def _read(source: Source) -> Loaded:
    from hloscope.analysis.overlap import AnalysisOptions
    from hloscope.artifact import load_report
    from hloscope.hlo.loader import read_hlo_text

    path = str(source.path)
    text, name = read_hlo_text(path)
    report = load_report(path, source.target_name, AnalysisOptions(host_space=source.host_space))
    return Loaded(source, report, text, name, report.memory)


def _compile(source: Source) -> Loaded:
    from hloscope.compile.jobs import compile_workload

    w = source.workload
    assert w is not None
    result, report, _ = compile_workload(w.name, w.sets, w.policy, source.target_name, w.devices, w.lhs,
                                         w.pipelined, w.xla_flags)
    return Loaded(source, report, result.optimized_hlo, f"<compiled {w.name}>", report.memory)
