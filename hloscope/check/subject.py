"""What a check looks at: the analyzed step plus the facts some rules need, and how to load it.

A :class:`Subject` is the report of the optimized module, the memory facts when
they are known (a step compiled here, or a ``hloscope compile`` artifact folder),
and the unoptimized module when it is known (artifact and dump folders, or given
explicitly). A plain HLO file has no memory facts; rules that need them say so.

``load_path`` reads files and folders (no JAX); ``compile_workload_subject`` and
``compile_fn_subject`` import the compile layer lazily.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscope.analysis.memory import MemoryFacts, memory_facts
from hloscope.analysis.report import Report, analyze_module
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.loader import load_module, pick_dump_file
from hloscope.hlo.model import Module
from hloscope.targets import Target

#: Files of a ``hloscope compile`` artifact folder (docs/compile.md).
ARTIFACT_OPTIMIZED = "optimized.hlo.txt"
ARTIFACT_UNOPTIMIZED = "unoptimized.hlo.txt"
ARTIFACT_MANIFEST = "manifest.json"
ARTIFACT_MEMORY_REPORT = "memory-usage-report.txt"


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


def _read_manifest(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / ARTIFACT_MANIFEST).read_text())
    except (OSError, ValueError) as e:
        raise HloscopeError(f"{folder / ARTIFACT_MANIFEST}: cannot read: {e}", EXIT_BAD_INPUT) from None
    if not isinstance(data, dict):
        raise HloscopeError(f"{folder / ARTIFACT_MANIFEST}: not a JSON object", EXIT_BAD_INPUT)
    return data


def _folder_memory(folder: Path, target: Target, module: Module) -> MemoryFacts | None:
    memory = _read_manifest(folder).get("memory")
    if not isinstance(memory, dict) or "temp_size_in_bytes" not in memory:
        return None
    report_file = folder / ARTIFACT_MEMORY_REPORT
    report_text = report_file.read_text() if report_file.is_file() else None
    return memory_facts({k: v for k, v in memory.items() if isinstance(v, int)}, target, report_text, module=module)


def _dump_unoptimized(chosen: Path) -> Path | None:
    """The ``*before_optimizations.txt`` of the same module in an XLA dump folder."""
    prefix = chosen.name.split(".sm_")[0].split("_gpu_after")[0]
    for p in sorted(chosen.parent.iterdir()):
        if p.name.endswith("before_optimizations.txt") and p.name.startswith(prefix.rsplit(".", 1)[0]):
            return p
    return None


def load_path(path: str, target: Target, unoptimized: str | None = None) -> Subject:
    """An HLO file, an XLA dump folder, or a ``hloscope compile`` artifact folder (``-``: stdin)."""
    p = Path(path)
    memory: MemoryFacts | None = None
    before: Module | None = load_module(unoptimized) if unoptimized else None
    if path != "-" and p.is_file() and p.read_bytes()[:1] == b"{":
        raise HloscopeError(f"{path}: a JSON report; check reads HLO (give it as --baseline to compare)",
                            EXIT_BAD_INPUT)
    module = load_module(path)
    if p.is_dir() and (p / ARTIFACT_MANIFEST).is_file() and (p / ARTIFACT_OPTIMIZED).is_file():
        memory = _folder_memory(p, target, module)
        if before is None and (p / ARTIFACT_UNOPTIMIZED).is_file():
            before = load_module(os.fspath(p / ARTIFACT_UNOPTIMIZED))
    elif p.is_dir() and before is None:
        found = _dump_unoptimized(pick_dump_file(p))
        if found is not None and module.is_scheduled:
            before = load_module(os.fspath(found))
    return Subject(analyze_module(module, target), path, memory, before)


def subject_from_compile(result: Any, report: Report, label: str, vocab: int | None = None) -> Subject:
    """A compiled step (a ``CompileResult`` and its report) with its memory facts and unoptimized module."""
    from hloscope.compile.deviceless import BUFFER_ASSIGNMENT_FILE, LIVE_AT_PEAK_FILE, MEMORY_REPORT_FILE
    from hloscope.hlo.parser import parse_hlo

    memory = report.memory
    if memory is None:
        files = result.extra_files
        memory = memory_facts(result.memory, report.target, files.get(MEMORY_REPORT_FILE),
                              files.get(BUFFER_ASSIGNMENT_FILE), report.module, files.get(LIVE_AT_PEAK_FILE),
                              vocab_size=vocab)
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
