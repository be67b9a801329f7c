"""Read a step from disk into a full report: the one loader every command and view uses.

Contract: ``load_report(path, target, options)`` reads an HLO file, an XLA dump
folder or an ``hloscope compile`` artifact folder and returns the analyzed
:class:`~hloscope.analysis.report.Report` with everything the input carries:
the notes on which file was read, and for an artifact folder the target it was
compiled for (unless one is given), the step's tensor names and its memory facts
(device allocation, XLA's peak, live-at-peak buffers). ``load_unoptimized``
finds the module before optimizations beside it. No JAX: the compile layer
writes these folders (``hloscope.compile.artifacts``) with the names defined here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.targets import DEFAULT_TARGET, Target, get_target

if TYPE_CHECKING:  # the analysis is imported when a step is loaded, so reading a manifest stays light
    from hloscope.analysis.memory import MemoryFacts
    from hloscope.analysis.overlap import AnalysisOptions
    from hloscope.analysis.report import Report
    from hloscope.hlo.model import Module

#: Files of an ``hloscope compile`` artifact folder (docs/compile.md).
OPTIMIZED_FILE = "optimized.hlo.txt"
UNOPTIMIZED_FILE = "unoptimized.hlo.txt"
MANIFEST_FILE = "manifest.json"
MEMORY_REPORT_FILE = "memory-usage-report.txt"
LIVE_AT_PEAK_FILE = "live-range-at-peak.txt"
BUFFER_ASSIGNMENT_FILE = "buffer-assignment-at-peak.txt"


def is_artifact_folder(path: str | Path) -> bool:
    p = Path(path)
    return p.is_dir() and (p / MANIFEST_FILE).is_file() and (p / OPTIMIZED_FILE).is_file()


def read_manifest(path: str | Path) -> dict[str, Any] | None:
    """The manifest of an artifact folder, or None for any other input."""
    if str(path) == "-" or not is_artifact_folder(path):
        return None
    file = Path(path) / MANIFEST_FILE
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError) as e:
        raise HloscopeError(f"{file}: cannot read the manifest: {e}", EXIT_BAD_INPUT) from None
    if not isinstance(data, dict):
        raise HloscopeError(f"{file}: not a JSON object", EXIT_BAD_INPUT)
    return data


def memory_from_texts(memory: Mapping[str, Any], target: Target, texts: Mapping[str, str | None],
                      module: Module | None, vocab_size: int | None = None,
                      offloaded_names: Sequence[str] = ()) -> MemoryFacts:
    """Memory facts from the compile layer's figures and XLA's memory texts (keyed by the file names above)."""
    from hloscope.analysis.memory import memory_facts

    figures = {k: v for k, v in memory.items() if isinstance(v, int) and not isinstance(v, bool)}
    return memory_facts(figures, target, texts.get(MEMORY_REPORT_FILE), texts.get(BUFFER_ASSIGNMENT_FILE), module,
                        texts.get(LIVE_AT_PEAK_FILE), hbm_bytes=figures.get("device_memory_size") or None,
                        vocab_size=vocab_size, offloaded_names=offloaded_names)


def offloaded_names(report: Report) -> tuple[str, ...]:
    """The checkpoint names (else instruction names) of the step's transfers to host."""
    names = {t.checkpoint_name or t.instruction.name for t in report.transfers if t.direction == "to_host"}
    return tuple(sorted(names))


def _folder_texts(folder: Path) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in (MEMORY_REPORT_FILE, LIVE_AT_PEAK_FILE, BUFFER_ASSIGNMENT_FILE):
        p = folder / name
        out[name] = p.read_text(errors="replace") if p.is_file() else None
    return out


def resolve_target(path: str, target: str | Target | None) -> tuple[Target, str]:
    """The target to judge ``path`` with, and where it came from (``given``, ``manifest``, ``default``)."""
    if isinstance(target, Target):
        return target, "given"
    if target:
        return get_target(target), "given"
    manifest = read_manifest(path)
    if manifest and isinstance(manifest.get("target"), str) and manifest["target"]:
        return get_target(manifest["target"]), "manifest"
    return get_target(DEFAULT_TARGET), "default"


def load_report(path: str, target: str | Target | None = None, options: AnalysisOptions | None = None,
                names: Sequence[Mapping[str, Any]] = ()) -> Report:
    """Read and analyze ``path`` (file, dump folder, artifact folder, ``-``), with all it carries."""
    from hloscope.analysis.report import analyze_module
    from hloscope.hlo.loader import load_module_with_notes

    module, notes = load_module_with_notes(path)
    tgt, origin = resolve_target(path, target)
    manifest = read_manifest(path)
    memory = None
    if manifest is not None:
        notes = (*notes, f"artifact folder: target {tgt.name} "
                         f"({'--target' if origin == 'given' else 'from manifest.json'}), "
                         f"{manifest.get('devices', '?')} devices, XLA options {manifest.get('xla_options', {})}")
        names = names or manifest.get("tensor_names") or ()
    report = analyze_module(module, tgt, options, notes=tuple(notes), names=names)
    if manifest is not None and isinstance(manifest.get("memory"), dict) and \
            "temp_size_in_bytes" in manifest["memory"]:
        vocab = (manifest.get("config") or {}).get("vocab")
        memory = memory_from_texts(manifest["memory"], tgt, _folder_texts(Path(path)), module,
                                   vocab if isinstance(vocab, int) else None, offloaded_names(report))
        report = replace(report, memory=memory)
    return report


def load_unoptimized(path: str) -> Module | None:
    """The module before optimizations that goes with ``path``: an artifact folder's
    ``unoptimized.hlo.txt``, or the same module's ``*before_optimizations.txt`` in a dump folder."""
    from hloscope.hlo.loader import load_module, pick_dump_file

    p = Path(path)
    if not p.is_dir():
        return None
    if is_artifact_folder(p):
        return load_module(str(p / UNOPTIMIZED_FILE)) if (p / UNOPTIMIZED_FILE).is_file() else None
    chosen = pick_dump_file(p)
    if not chosen.name.endswith("after_optimizations.txt"):
        return None
    module_id = chosen.name.split(".", 1)[0]  # module_6045
    for q in sorted(p.iterdir()):
        if q.name.startswith(module_id + ".") and q.name.endswith("before_optimizations.txt"):
            return load_module(str(q))
    return None
