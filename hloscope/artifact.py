"""Read a step from disk into a full report: the one loader every command and view uses.

Contract: ``read_step(path, target)`` reads an HLO file, an XLA dump folder, an
``hloscope compile`` artifact folder or stdin (``-``) into a
:class:`~hloscope.analysis.inputs.StepInputs` (the manifest read once): the notes
on which file was read, and for an artifact folder the target it was compiled
for (unless one is given), the step's tensor names, its memory figures and XLA's
memory texts. ``load_report(path, target, options)`` runs the pipeline
(``analyze_step``) on them. ``load_unoptimized`` finds the module before
optimizations beside it. No JAX: the compile layer writes these folders
(``hloscope.compile.run.artifacts``) with the names defined here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.dump_folder import (
    BEFORE_SUFFIX,
    BUFFER_ASSIGNMENT_SUFFIX,
    LIVE_RANGE_SUFFIX,
    MEMORY_REPORT_SUFFIX,
    TARGET_ARGUMENTS_SUFFIX,
    DumpFolder,
    sibling,
)
from hloscope.hlo.folders import (
    MANIFEST_FILE,
    MANIFEST_SCHEMA,
    OPTIMIZED_FILE,
    REPORT_FILE,
    REPORT_TEXT_FILE,
    UNOPTIMIZED_FILE,
)
from hloscope.hlo.shape import HOST_MEMORY_SPACE
from hloscope.hlo.xla_dumps import (
    BUFFER_ASSIGNMENT_FILE,
    DUMP_FILES,
    LIVE_AT_PEAK_FILE,
    MEMORY_REPORT_FILE,
    XlaDumpTexts,
    allocation_figures,
)
from hloscope.targets import (
    Target,
    TargetOrigin,
    as_target,
    get_target,
    target_for_device,
)

if TYPE_CHECKING:  # the analysis is imported when a step is loaded, so reading a manifest stays light
    from hloscope.analysis.inputs import StepInputs
    from hloscope.analysis.report import Report
    from hloscope.analysis.simulate.overlap import AnalysisOptions
    from hloscope.analysis.structure.backend import CompiledFor
    from hloscope.analysis.structure.name_records import NameRecord
    from hloscope.hlo.model import Module

    R = TypeVar("R", bound=Report)

__all__ = ["BUFFER_ASSIGNMENT_FILE", "LIVE_AT_PEAK_FILE", "MANIFEST_FILE", "MANIFEST_SCHEMA", "MEMORY_REPORT_FILE",
           "OPTIMIZED_FILE", "REPORT_FILE", "REPORT_TEXT_FILE", "UNOPTIMIZED_FILE", "LoadedStep", "is_artifact_folder",
           "is_json_report", "load_report", "load_unoptimized", "platform_target", "read_manifest", "read_step",
           "resolve_target", "unoptimized_of"]



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
    schema = data.get("schema", MANIFEST_SCHEMA)  # (a folder put together by hand may leave it out)
    if schema != MANIFEST_SCHEMA:
        raise HloscopeError(f"{file}: manifest schema {str(schema)[:80]!r}, this hloscope reads {MANIFEST_SCHEMA!r} "
                            "(written by another hloscope version? compile it again)", EXIT_BAD_INPUT)
    return data


def is_json_report(path: str) -> bool:
    """Whether ``path`` is a file holding a JSON report (``{`` first) rather than HLO text."""
    if path == "-" or Path(path).is_dir():  # a folder is listed once, by the loader, never opened as a file
        return False
    try:
        with open(path, "rb") as f:
            return f.read(1) == b"{"
    except OSError:  # a folder, a missing file: not a JSON report (the loader says what it is)
        return False


def _folder_texts(folder: Path) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in DUMP_FILES:
        p = folder / name
        out[name] = p.read_text(errors="replace") if p.is_file() else None
    return out


def resolve_target(path: str, target: str | Target | None,
                   manifest: Mapping[str, Any] | None = None,
                   backend: CompiledFor | None = None) -> tuple[Target, TargetOrigin]:
    """The target to judge ``path`` with, and where it came from: given, an artifact folder's
    manifest, the GPU an nsys-jax archive's GpuTargetConfig names, the TPU a dump names or the
    default of the module's platform (``backend``, when the module was read), else the default.
    ``manifest``: the folder's manifest when the caller read it already."""
    if target:
        return as_target(target), TargetOrigin.GIVEN
    if manifest is None:
        manifest = read_manifest(path)
    if manifest and isinstance(manifest.get("target"), str) and manifest["target"]:
        return get_target(manifest["target"]), TargetOrigin.MANIFEST
    if str(path).endswith(".zip"):
        from hloscope.hlo.loader import archive_device  # lazy: the HLO loader; targets resolve without it

        found = target_for_device(archive_device(path))
        if found is not None:
            return found, TargetOrigin.ARCHIVE
    return platform_target(backend)


def platform_target(backend: CompiledFor | None) -> tuple[Target, TargetOrigin]:
    """The target a module is judged on when nothing names one: its platform's room's choice
    (``hloscope.analysis.platforms``: a TPU module's chip as its dump names it, else the default TPU; a
    GPU module's the default target), else (a CPU or unknown module) the default target."""
    platform = backend.backend.platform if backend is not None else None
    if backend is None or platform is None:
        return as_target(None), TargetOrigin.DEFAULT
    # lazy: the analysis, once a module was read; the tui resolves a target before its first screen without it
    from hloscope.analysis.platforms import backend_of

    return backend_of(platform).default_target(backend)


def _versions(manifest: Mapping[str, Any]) -> dict[str, str]:
    """The package versions a manifest records (``versions``), strings only."""
    found = manifest.get("versions")
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)} \
        if isinstance(found, dict) else {}


@dataclass(frozen=True)
class LoadedStep:
    """A step read from disk: what the pipeline reads, the target, and where the target came from.
    folder: the XLA dump folder the module was picked from, listed once and each file read at most
    once (None for any other input): what else is read of it (:func:`unoptimized_of`) is read there."""

    inputs: StepInputs
    target: Target
    target_origin: TargetOrigin
    folder: DumpFolder | None = None


def read_step(path: str, target: str | Target | None = None,
              names: Sequence[Mapping[str, object] | NameRecord] = (),
              keep_text: bool = False, module: str | None = None) -> LoadedStep:
    """Read ``path`` (file, dump folder, artifact folder, ``-``) with all it carries, each file once.
    ``keep_text``: the inputs keep the HLO text the module was parsed from (the TUI's line lookups).
    ``module``: which module of an XLA dump folder (``--module``; ``hloscope.hlo.dump_folder``)."""
    # lazy: the analysis; tui reads manifests without it
    from hloscope.analysis.inputs import ScheduleRun, StepInputs, int_figures

    # lazy: the analysis; tui reads manifests without it
    from hloscope.analysis.intent.manifest import intent_from_dict
    from hloscope.analysis.structure.backend import find_backend

    # lazy: the analysis; tui reads manifests without it
    from hloscope.analysis.structure.name_records import name_records
    from hloscope.hlo.loader import ARTIFACT_NOTE, read_source  # lazy: the HLO loader; targets resolve without it

    source = read_source(path, module)
    hlo, notes, folder = source.module, source.notes, source.folder
    text = source.text if keep_text else None
    name = hlo.source_path or "<stdin>"
    manifest = read_manifest(path) if folder is None else None
    target_arguments = _target_arguments(hlo.source_path, folder)
    backend = find_backend(hlo, name, target_arguments)
    tgt, origin = resolve_target(path, target, manifest, backend)
    if manifest is None:
        dumps, figures = _dump_memory(folder, hlo.source_path, tgt, target_arguments)
        return LoadedStep(StepInputs(hlo, name, text, name_records(names), figures, dumps=dumps, notes=notes,
                                     compiled_for=backend), tgt, origin, folder)
    notes = (*notes, f"{ARTIFACT_NOTE} target {tgt.name} "
                     f"({'--target' if origin == TargetOrigin.GIVEN else 'from manifest.json'}), "
                     f"{manifest.get('devices', '?')} devices, XLA options {manifest.get('xla_options', {})}")
    names = names or manifest.get("tensor_names") or ()  # the JSON form: read once, below
    figures = manifest.get("memory")
    vocab = (manifest.get("config") or {}).get("vocab")
    intent = intent_from_dict(manifest.get("intent"))
    unoptimized = load_unoptimized(path) if intent is not None and intent.asks_for_offload() else None
    inputs = StepInputs(hlo, name, text, name_records(names),
                        int_figures(figures) if isinstance(figures, dict) else None,
                        XlaDumpTexts.from_files(_folder_texts(Path(path))), manifest, notes,
                        vocab if isinstance(vocab, int) and not isinstance(vocab, bool) else None,
                        intent=intent, unoptimized=unoptimized,
                        scheduler=ScheduleRun.from_record(manifest.get("scheduler")),
                        versions=_versions(manifest), compiled_for=backend)
    return LoadedStep(inputs, tgt, origin)


@overload
def load_report(path: str, target: str | Target | None = None, options: AnalysisOptions | None = None,
                names: Sequence[Mapping[str, object] | NameRecord] = (), *, report_type: None = None,
                module: str | None = None) -> Report: ...


@overload
def load_report(path: str, target: str | Target | None = None, options: AnalysisOptions | None = None,
                names: Sequence[Mapping[str, object] | NameRecord] = (), *, report_type: type[R],
                module: str | None = None) -> R: ...


def load_report(path: str, target: str | Target | None = None, options: AnalysisOptions | None = None,
                names: Sequence[Mapping[str, object] | NameRecord] = (), *, report_type: type[Report] | None = None,
                module: str | None = None) -> Report:
    """Read and analyze ``path`` (file, dump folder, artifact folder, ``-``), with all it carries.
    ``report_type``: the report class to build (default :class:`Report`). ``module``: which module of
    an XLA dump folder."""
    from hloscope.analysis.report import Report, analyze_step  # lazy: the analysis; tui reads manifests without it

    step = read_step(path, target, names, module=module)
    return analyze_step(step.inputs, step.target, options, report_type=report_type or Report)


def load_unoptimized(path: str, module: str | None = None) -> Module | None:
    """The module before optimizations that goes with ``path``: an artifact folder's
    ``unoptimized.hlo.txt``, or the same module's ``*before_optimizations.txt`` in a dump folder
    (``module``: which module of it)."""
    from hloscope.hlo.loader import load_module, pick_dump_file  # lazy: the HLO loader; targets resolve without it

    p = Path(path)
    if not p.is_dir():
        return None
    if is_artifact_folder(p):
        return load_module(str(p / UNOPTIMIZED_FILE)) if (p / UNOPTIMIZED_FILE).is_file() else None
    chosen = pick_dump_file(p, module)
    if not chosen.name.endswith("after_optimizations.txt"):
        return None
    before = sibling(chosen, BEFORE_SUFFIX)
    return load_module(str(before)) if before is not None else None


def _dump_memory(folder: DumpFolder | None, source: str | None, target: Target,
                 target_arguments: str) -> tuple[XlaDumpTexts, dict[str, int] | None]:
    """XLA's memory texts of a dump folder's module and the memory figures its buffer assignment
    gives (None without one: the report then has no memory section). The platform's on-chip spaces
    (a TPU's VMEM, SMEM) are never counted as device memory."""
    if folder is None or not source:
        return XlaDumpTexts(target_arguments=target_arguments), None
    from hloscope.analysis.platforms import backend_for  # lazy: the analysis; tui reads manifests without it

    chosen = Path(source)
    assignment = folder.text(folder.sibling(chosen, BUFFER_ASSIGNMENT_SUFFIX))
    if assignment is None:
        return XlaDumpTexts(target_arguments=target_arguments), None
    figures = allocation_figures(assignment, HOST_MEMORY_SPACE, backend_for(target).on_chip_spaces)
    dumps = XlaDumpTexts(folder.text(folder.sibling(chosen, MEMORY_REPORT_SUFFIX)),
                         folder.text(folder.sibling(chosen, LIVE_RANGE_SUFFIX)), assignment,
                         target_arguments=target_arguments)
    return dumps, figures or None


def unoptimized_of(step: LoadedStep, path: str) -> Module | None:
    """The module before optimizations of a step read from ``path``: from its dump folder (the same
    module's ``*before_optimizations.txt``, taken from the one listing and read at most once), else as
    :func:`load_unoptimized` finds it."""
    folder = step.folder
    if folder is None:
        return load_unoptimized(path)
    from hloscope.hlo.loader import parse_text  # lazy: the HLO loader; targets resolve without it

    chosen = Path(step.inputs.module.source_path or "")
    if not chosen.name.endswith("after_optimizations.txt"):
        return None
    before = folder.sibling(chosen, BEFORE_SUFFIX)
    text = folder.text(before)
    return parse_text(text, str(before)) if text is not None else None


def _target_arguments(source: str | None, folder: DumpFolder | None = None) -> str:
    """The ``*.target_arguments.txt`` XLA wrote beside a dump folder's module (TPU dumps: it names
    the TPU version), "" when there is none. ``folder``: the dump folder the module was picked from."""
    if not source:
        return ""
    if folder is not None:
        return folder.text(folder.sibling(Path(source), TARGET_ARGUMENTS_SUFFIX)) or ""
    found = sibling(Path(source), TARGET_ARGUMENTS_SUFFIX)
    if found is None:
        return ""
    try:
        return found.read_text(errors="replace")
    except OSError:
        return ""
