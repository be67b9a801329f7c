"""What a check looks at: the analyzed step plus the facts some rules need, and how to load it.

A :class:`Subject` is the report of the optimized module, the memory facts when
they are known (a step compiled here, or a ``hloscope compile`` artifact folder),
and the unoptimized module when it is known (artifact and dump folders, or given
explicitly). A plain HLO file has no memory facts; rules that need them say so.

``load_path`` reads files and folders (no JAX); ``compile_workload_subject`` and
``compile_fn_subject`` import the compile layer lazily.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscope.analysis.memory import MemoryFacts
from hloscope.analysis.report import Report
from hloscope.artifact import load_report, load_unoptimized, memory_from_texts
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.loader import load_module
from hloscope.hlo.model import Module
from hloscope.targets import Target


@dataclass(frozen=True)
class Subject:
    """One step to check.

    label: how to name it to the user (a path, ``--workload llama3-405b``).
    memory: device memory facts (None: unknown, e.g. a plain HLO file).
    unoptimized: the module before optimizations (None: unknown).
    """

    report: Report
    label: str
    memory: MemoryFacts | None = None
    unoptimized: Module | None = None


def load_path(path: str, target: Target | None, unoptimized: str | None = None) -> Subject:
    """An HLO file, an XLA dump folder, or a ``hloscope compile`` artifact folder (``-``: stdin).
    ``target`` None: the artifact folder's own target, else the default."""
    p = Path(path)
    if path != "-" and p.is_file() and p.read_bytes()[:1] == b"{":
        raise HloscopeError(f"{path}: a JSON report; check reads HLO (give it as --baseline to compare)",
                            EXIT_BAD_INPUT)
    report = load_report(path, target)
    before = load_module(unoptimized) if unoptimized else None
    if before is None and report.module.is_scheduled:
        before = load_unoptimized(path)
    return Subject(report, path, report.memory, before)


def subject_from_compile(result: Any, report: Report, label: str, vocab: int | None = None) -> Subject:
    """A compiled step (a ``CompileResult`` and its report) with its memory facts and unoptimized module."""
    from hloscope.hlo.parser import parse_hlo

    memory = report.memory
    if memory is None:
        memory = memory_from_texts(result.memory, report.target, result.extra_files, report.module, vocab)
    before = parse_hlo(result.unoptimized_hlo, "<unoptimized>") if result.unoptimized_hlo else None
    return Subject(report, label, memory, before)


def compile_workload_subject(workload: str, sets: dict[str, str], target: Target, devices: int,
                             policy: str | None = None, lhs: bool = True, pipelined: bool = True,
                             xla_flags: list[str] | None = None) -> Subject:
    """Compile a built-in workload (in its own process) and wrap it as a subject."""
    from hloscope.compile.jobs import compile_workload

    result, report, extra = compile_workload(workload, sets, policy, target.name, devices, lhs, pipelined,
                                             list(xla_flags or []))
    sets_text = "".join(f" --set {k}={v}" for k, v in sets.items())
    return subject_from_compile(result, report, f"--workload {workload}{sets_text} --target {target.name}",
                             extra.get("config", {}).get("vocab"))


def compile_fn_subject(fn_ref: str, args_spec: str, target: Target, devices: int, lhs: bool = True,
                       pipelined: bool = True, xla_flags: list[str] | None = None, cwd: str = ".") -> Subject:
    """Compile the user's ``module:function`` on ``args_spec`` and wrap it as a subject."""
    from hloscope.compile.jobs import compile_fn

    result, report, _ = compile_fn(fn_ref, args_spec, target.name, devices, lhs, pipelined, list(xla_flags or []),
                                   os.path.abspath(cwd))
    return subject_from_compile(result, report, f"--fn {fn_ref} --target {target.name}")
