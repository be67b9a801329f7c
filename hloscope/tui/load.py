"""What the TUI opens, checked before the app starts and loaded in a worker.

``check_source`` does the cheap checks (path exists, a folder holds a module,
the file starts like HLO text) so bad input is a one-line error before the
terminal is taken over. ``load_source`` does the slow part (read, parse,
analyze, or compile a built-in workload) and returns a :class:`Loaded`: the first screen.
``measure_margins`` does what comes after it (the margins' re-simulations).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.request import CompileRequest
from hloscope.targets import DEFAULT_TARGET, TargetOrigin, get_target

if TYPE_CHECKING:  # the analysis is imported by the worker, not before the first screen
    from hloscope.analysis.memory import MemoryFacts
    from hloscope.analysis.report import Report
    from hloscope.tui.rows import ScheduleLayout
    from hloscope.tui.timeaxis import TimeAxis

#: Bytes read to decide whether a file looks like HLO text.
_SNIFF_BYTES = 64 * 1024


@dataclass(frozen=True)
class Source:
    """One schedule to open: a path (file, dump folder, artifact folder) or a compile request
    (``hloscope tui --workload``)."""

    path: str | None = None
    request: CompileRequest | None = None
    target: str | None = None  # None: the artifact folder's own target, else the default target
    host_space: int = 5
    measured: str | None = None  # a measured profile to show beside the figures (an nsys-jax archive is its own)

    @property
    def label(self) -> str:
        if self.request is not None:
            what = "MaxText's step" if self.request.maxtext is not None else f"workload {self.request.workload}"
            return f"{what} ({self.target_name}, {self.request.devices} devices)"
        return str(self.path)

    @cached_property
    def target_name(self) -> str:
        """The target this source is judged on, by the one rule (``artifact.resolve_target``:
        ``target``, else an artifact folder's or an nsys-jax archive's own, else the default); a
        workload's is its request's. Resolved once per source, not on every access."""
        if self.target:
            return self.target
        if self.request is not None:
            return self.request.target
        from hloscope.artifact import resolve_target  # lazy: after tui's first screen

        try:
            return resolve_target(str(self.path or ""), None)[0].name
        except HloscopeError:  # an unreadable manifest or archive is reported when the source is loaded
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
    memory: MemoryFacts | None = None
    seconds: float = 0.0
    times: TimeAxis | None = None
    layout: ScheduleLayout | None = None
    target_origin: TargetOrigin | None = None
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
    """Raise a one-line :class:`HloscopeError` for input that cannot be a schedule.

    The cheap part of what ``hloscope analyze`` refuses, with its words: a missing path, a folder
    with no module, an empty or binary file (HloProto bytes and nsys-jax archives are read by
    content, as analyze reads them), text with no module in it. Text that opens like HLO but
    fails to parse is refused by the loader (:func:`load_source`) with the parser's position."""
    # lazy: the HLO loader, for a path only
    from hloscope.hlo.loader import is_binary_module, pick_dump_file, sniff_bytes

    get_target(source.target_name)
    if source.request is not None:
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
    if is_binary_module(head, path.name):
        return
    sniff_bytes(head, str(path))  # empty or binary: the same words as analyze
    # A module with or without its HloModule header ('ENTRY main {', XLA's tests write both) has a
    # computation body; text with none in its first 64 KiB is not one.
    if b"{" not in head and b"HloModule" not in head:
        raise HloscopeError(f"{path}: not HLO text (no 'HloModule' header and no computation in its first "
                            f"{_SNIFF_BYTES // 1024} KiB)", EXIT_BAD_INPUT)


def load_source(source: Source) -> Loaded:
    """Read (or compile) and analyze ``source``. Raises :class:`HloscopeError` on bad input."""
    # lazy: after tui's first screen
    from hloscope.tui.rows import ScheduleLayout
    from hloscope.tui.timeaxis import TimeAxis

    t0 = time.perf_counter()
    loaded = _compile(source) if source.request is not None else _read(source)
    timeline = loaded.report.timeline
    times = TimeAxis(timeline) if timeline is not None else None
    layout = ScheduleLayout(loaded.report)
    # Not the margins: their re-simulations took 2-10x the whole analysis on the 32-layer module, and
    # the first screen does not need them. The app measures them after that screen (measure_margins).
    if not loaded.report.verdicts:  # the schedule is the first screen: laid out off the UI thread
        layout.rows(loaded.report.module.entry_name)
    return replace(loaded, seconds=time.perf_counter() - t0, times=times, layout=layout)


def measure_margins(loaded: Loaded) -> None:
    """The report's margins and marginal costs (``Report.margins``: re-simulations of the step,
    cached on the report), for a worker thread: the views read them once this returns."""
    _ = loaded.report.margins


def _read(source: Source) -> Loaded:
    # lazy: after tui's first screen
    from hloscope.analysis.report import analyze_step
    from hloscope.analysis.simulate.overlap import AnalysisOptions
    from hloscope.artifact import read_step

    # The loader analyze uses: each file read once, the text kept for line lookups.
    step = read_step(str(source.path), source.target, keep_text=True)
    profile = None
    host_lines = None
    if source.measured:
        # lazy: after tui's first screen
        from hloscope.analysis.measured.read import parse_measured
        from hloscope.hlo.profile_files import read_measured_file
        from hloscope.hlo.profiles.host_lines import read_host_lines

        file = read_measured_file(source.measured)
        profile = parse_measured(file, step.inputs.module.name)  # its executions, of several programs
        host_lines = read_host_lines(file)
    report = analyze_step(step.inputs, step.target, AnalysisOptions(host_space=source.host_space,
                                                                    compare_with=profile, host_lines=host_lines))
    if report.measured is not None and report.measured.match is not None:
        from hloscope.render.measured_text import refusal_line  # lazy: render/, with the profile only

        # a profile of another program: refused as analyze refuses it (one line, exit 2)
        if (line := refusal_line(report.measured.profile.source, report.measured.match)) is not None:
            raise HloscopeError(line, EXIT_BAD_INPUT)
    return Loaded(source, report, step.inputs.text or "", step.inputs.label, report.memory,
                  target_origin=step.target_origin)


def _compile(source: Source) -> Loaded:
    from hloscope.analysis.simulate.overlap import AnalysisOptions  # lazy: after tui's first screen
    from hloscope.compile.run.jobs import compile_request  # lazy: the compile layer, for a compile only

    request = source.request
    assert request is not None
    step = compile_request(request, AnalysisOptions(host_space=source.host_space))
    what = "maxtext" if request.maxtext is not None else request.workload
    return Loaded(source, step.report, step.result.optimized_hlo, f"<compiled {what}>",
                  step.report.memory,
                  target_origin=TargetOrigin.REQUEST)
