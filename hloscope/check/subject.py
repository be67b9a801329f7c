"""What a check looks at: the analyzed step plus the facts some rules need, and how to load it.

A :class:`Subject` is the report of the optimized module, the memory facts when
they are known (a step compiled here, or a ``hloscope compile`` artifact folder),
and the unoptimized module when it is known (artifact and dump folders, or given
explicitly). A plain HLO file has no memory facts; rules that need them say so.

``load_path`` reads files and folders (no JAX); a step compiled in this run
becomes a subject through ``subject_from_compile`` (the API's ``compile_subject``
compiles a :class:`~hloscope.request.CompileRequest` and calls it): the
check layer never compiles.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.memory import MemoryFacts
from hloscope.analysis.report import Report, analyze_step
from hloscope.artifact import is_json_report, read_step, unoptimized_of
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.loader import load_module
from hloscope.hlo.model import Module
from hloscope.hlo.parser import parse_hlo
from hloscope.targets import Target


@dataclass(frozen=True)
class Subject:
    """One step to check.

    label: how to name it to the user (a path, ``--workload llama3-405b``).
    unoptimized: the module before optimizations (None: unknown).
    """

    report: Report
    label: str
    unoptimized: Module | None = None

    @property
    def memory(self) -> MemoryFacts | None:
        """The step's memory facts (None: unknown, e.g. a plain HLO file): the report's."""
        return self.report.memory


def load_path(path: str, target: Target | None, unoptimized: str | None = None,
              module: str | None = None) -> Subject:
    """An HLO file, an XLA dump folder, or a ``hloscope compile`` artifact folder (``-``: stdin).
    ``target`` None: the artifact folder's own target, else the default. ``module``: which module of
    an XLA dump folder."""
    if is_json_report(path):
        raise HloscopeError(f"{path}: a JSON report; check reads HLO (give it as --baseline to compare)",
                            EXIT_BAD_INPUT)
    step = read_step(path, target, module=module)  # a dump folder: listed once, each file read at most once
    report = analyze_step(step.inputs, step.target)
    before = load_module(unoptimized) if unoptimized else None
    if before is None:  # an artifact folder whose step asked for offload brought it already: parsed once
        before = report.inputs.unoptimized
    if before is None and report.module.is_scheduled:
        before = unoptimized_of(step, path)
    return Subject(report, path, before)


def subject_from_compile(report: Report, unoptimized_hlo: str, label: str) -> Subject:
    """A step compiled in this run (its report, with memory facts) and its module before optimizations."""
    before = parse_hlo(unoptimized_hlo, "<unoptimized>") if unoptimized_hlo else None
    return Subject(report, label, before)
