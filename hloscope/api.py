"""The Python API: ``analyze`` (no JAX needed) and ``compile_step`` (lazy JAX).

Both return a :class:`StepReport`: the analysis's frozen :class:`Report` with the
conveniences a Python user wants (``print(report)``, ``to_text``, ``to_dict``,
``dot``), which call the renderers. The analysis itself imports no renderer; this
layer sits above both (hlo -> analysis -> check/render -> api).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hloscope.analysis.inputs import StepInputs
from hloscope.analysis.report import Report, analyze_step
from hloscope.analysis.simulate.overlap import AnalysisOptions
from hloscope.artifact import (
    MANIFEST_FILE,
    OPTIMIZED_FILE,
    REPORT_FILE,
    REPORT_TEXT_FILE,
    UNOPTIMIZED_FILE,
    load_report,
)
from hloscope.check.subject import subject_from_compile
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.loader import looks_like_hlo_text
from hloscope.hlo.model import Module
from hloscope.hlo.parser import parse_hlo
from hloscope.hlo.shape import HOST_MEMORY_SPACE
from hloscope.render import render_to_string
from hloscope.render.html import markdown_summary
from hloscope.render.json_report import report_to_dict
from hloscope.request import CompileRequest, Layout, Policy, Scheduler, callable_name, xla_flag_texts
from hloscope.targets import BUILTIN_TARGETS, DEFAULT_TARGET, Target, as_target

if TYPE_CHECKING:
    from hloscope.check.subject import Subject
    from hloscope.compile.result import CompileResult


class StepReport(Report):
    """A :class:`Report` as the Python API returns it: the same frozen data, plus conveniences."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON report as a dict (docs/json-schema.md)."""
        return report_to_dict(self)

    def to_text(self) -> str:
        """The table report, as ``hloscope analyze`` prints it."""
        return render_to_string("table", self)

    def dot(self, view: str = "transfer", name: str | None = None, **kw: Any) -> Any:
        """A diagram (``graphviz.Digraph``) of ``view``: transfer, computation, schedule or calls
        (``hloscope.render.dot.draw.build_view``; ``kw``: radius, max_nodes, first)."""
        from hloscope.render.dot.draw import build_view  # lazy: graphviz, only for a diagram

        return build_view(self, view, name, **kw).graph

    def __str__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        """What a notebook cell shows: intent, the transfer table in verdict colours, the
        simulated step as an inline SVG (``hloscope.render.html``; no JavaScript)."""
        return render_to_string("html", self)

    def _repr_markdown_(self) -> str:
        """A short Markdown summary, for front ends that show Markdown rather than HTML."""
        return markdown_summary(self)


def analyze(x: Any, target: Target | str | None = None, host_space: int = HOST_MEMORY_SPACE) -> StepReport:
    """Analyze HLO text, a path (file, dump folder, ``hloscope compile`` artifact folder), a
    parsed Module, or a ``jax.stages.Compiled`` / ``Lowered``; returns the :class:`StepReport`.

    ``target`` None: an artifact folder's own target, else the default (``h100-sxm``). A string
    is HLO text when it reads like HLO (``HloModule`` after any blank lines and comments, or
    several lines); otherwise a path.
    """
    options = AnalysisOptions(host_space=host_space)
    if isinstance(x, os.PathLike) or (isinstance(x, str) and not looks_like_hlo_text(x)):
        path = os.fspath(x)
        if not path:
            raise HloscopeError("analyze: empty string: give HLO text or a path", EXIT_BAD_INPUT)
        return load_report(path, target, options, report_type=StepReport)
    tgt = as_target(target)
    text: str | None = None
    label = "<text>"
    if isinstance(x, Module):
        module = x
    elif isinstance(x, str):
        text = x
        module = parse_hlo(x)
    elif hasattr(x, "as_text") and hasattr(x, "memory_analysis"):  # jax.stages.Compiled
        text, label = _gpu_compiled(x).as_text(), "<compiled>"
        module = parse_hlo(text, label)
    elif hasattr(x, "compile") and hasattr(x, "as_text"):  # jax.stages.Lowered
        text, label = _gpu_compiled(x.compile()).as_text(), "<compiled>"
        module = parse_hlo(text, label)
    else:
        raise TypeError(f"cannot analyze {type(x).__name__}: give HLO text, a path, or a jax Compiled/Lowered")
    inputs = StepInputs(module, module.source_path or label, text)
    return analyze_step(inputs, tgt, options, report_type=StepReport)


def _gpu_compiled(compiled: Any) -> Any:
    """``compiled``, if it runs on GPUs or TPUs (compile-only or real); a one-line error if it was
    compiled for the host CPU."""
    from hloscope.compile.step.deviceless import compiled_platform  # lazy: the compile layer, for a compile only

    platform = compiled_platform(compiled)
    if platform not in ("gpu", "tpu"):
        raise HloscopeError(f"this step was compiled for {platform}, not a GPU or TPU: its schedule says nothing "
                            "about accelerator offloading; compile it with hloscope.compile_step(fn, *abstract_args, "
                            "target=...)", EXIT_BAD_INPUT)
    return compiled


def compile_step(fn: Any, *abstract_args: Any, target: Target | str = DEFAULT_TARGET, devices: int = 8,
                 mesh: Any = None, mesh_axes: Any = None, flags: dict[str, Any] | None = None,
                 lhs: bool | None = None, pipelined_offload: bool | None = True,
                 scheduler: Scheduler | str | None = None, in_shardings: Any = None, out_shardings: Any = None,
                 donate_argnums: tuple[int, ...] = (), memory_fraction: float | None = None,
                 memory_override_bytes: int | None = None, cache: bool = False,
                 phase: Callable[[str], None] | None = None,
                 out: str | os.PathLike[str] | None = None,
                 topology: str | None = None, slices: int = 1,
                 per_core: bool = False) -> tuple[CompileResult, StepReport]:
    """Compile ``fn`` for ``devices`` compile-only GPUs or TPUs of ``target`` and analyze it.

    Works in a script that imported jax first (as long as no jax computation ran
    yet). Arguments without a sharding are replicated on every device. Returns
    ``(CompileResult, StepReport)``: ``result.compiled`` is the ``jax.stages.Compiled``;
    ``print(report)`` shows the table, with each transfer's ``checkpoint_name``
    and the source line of the tensor it moves. The options are ``hloscope compile``'s:
    ``scheduler``: lhs (default), lhs-approx or none (``lhs=False`` is ``none``);
    ``pipelined_offload`` (None: XLA's default); ``flags``: XLA options (``--xla-flag``);
    ``memory_fraction``: compile as JAX does on a GPU whose allocator takes that fraction of
    the HBM (``--memory-fraction``); ``memory_override_bytes``: as if the GPU had that much
    HBM (the what-if); ``cache``: use the compile cache (a hit has ``compiled=None``);
    ``phase``: called with each compile phase's name as it starts.
    ``in_shardings``/``out_shardings``/``donate_argnums`` as for ``jax.jit`` (memory kinds
    kept). ``out``: also write an artifact folder there, as ``hloscope compile --out`` does
    (``hloscope.analyze(out)`` and every command read it back); an earlier artifact folder
    at ``out`` is replaced, any other existing folder is an error. ``topology``: for a TPU
    target, the slice (``v5p:4x4x8`` or ``v5p-256``; ``devices`` must be its count); ``slices``:
    that many slices joined over DCN (``devices`` counts all; the default mesh is ``data`` across
    slices, ``fsdp`` inside one); ``per_core``: a device per TensorCore on v4 (``--per-core``).
    """
    # lazy: the compile layer, for a compile only
    from hloscope.compile.cuda.scheduler import resolve
    from hloscope.compile.run.jobs import analyze_result
    from hloscope.compile.step.deviceless import StepOptions
    from hloscope.compile.step.deviceless import compile_step as _compile

    tgt = as_target(target)
    # A built-in target's alias ("trillium") is asked for by the target's name ("tpu-v6e").
    named = tgt.name if not isinstance(target, str) or BUILTIN_TARGETS.get(tgt.name) is tgt else target
    request = CompileRequest(named, devices, fn=callable_name(fn),
                             scheduler=resolve(scheduler, lhs), pipelined=pipelined_offload,
                             xla_flags=tuple(xla_flag_texts(flags or {})),
                             memory_override_bytes=memory_override_bytes, memory_fraction=memory_fraction,
                             topology=topology, slices=slices, per_core=per_core)
    if mesh is None:  # before JAX starts: a device count the target's topology cannot take
        from hloscope.compile.step.rooms import room_for  # lazy: the compile layer, for a compile only

        room_for(tgt, request.layout).check_devices(devices, argument="compile_step's devices")
    result = _compile(request, fn, _args(abstract_args), StepOptions(
        mesh=mesh, mesh_axes=mesh_axes, donate_argnums=tuple(donate_argnums), in_shardings=in_shardings,
        out_shardings=out_shardings, cache=cache, phase=phase, target=tgt))
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", "step"))
    extra = {"fn": request.fn}
    source = str(Path(out) / OPTIMIZED_FILE) if out is not None else None
    report = analyze_result(result, tgt, extra=extra, source_path=source, label=f"<compile_step {name}>",
                            report_type=StepReport)
    if out is not None:
        save_artifacts(out, result, report, extra, force=True, request=request)
    return result, report


def compile_maxtext(*settings: str, config: str | os.PathLike[str] | None = None,
                    target: Target | str = DEFAULT_TARGET, devices: int = 8, flags: dict[str, Any] | None = None,
                    scheduler: Scheduler | str | None = None, pipelined_offload: bool | None = True,
                    memory_fraction: float | None = None, memory_override_bytes: int | None = None,
                    phase: Callable[[str], None] | None = None,
                    out: str | os.PathLike[str] | None = None,
                    topology: str | None = None, slices: int = 1) -> tuple[CompileResult, StepReport]:
    """Compile MaxText's own train step for ``devices`` compile-only GPUs or TPUs of ``target`` and analyze it.

    ``settings`` are MaxText's ``KEY=VALUE`` overrides (``"remat_policy=qkv_proj_offloaded"``) on
    ``config`` (a MaxText config file; default the installed MaxText's ``base.yml``), as
    ``hloscope compile --maxtext [CONFIG.yml] KEY=VALUE ...`` takes them (docs/maxtext.md). The
    compile runs in its own process (MaxText sets process-wide JAX options), so ``result.compiled``
    is None. Needs Python 3.12+ and ``pip install 'hloscope[maxtext]'``; a bad setting is one
    :class:`~hloscope.errors.HloscopeError` (exit code 2). The other options are :func:`compile_step`'s;
    ``out`` also writes the artifact folder. For a TPU target MaxText compiles for its own slice of
    ``devices`` (or ``topology``: ``v5p-256``, ``v5p:4x4x8``), ``slices`` of it over DCN
    (``compile_topology_num_slices``; ``devices`` counts all).
    """
    # lazy: the compile layer, for a compile only
    from hloscope.compile.cuda.scheduler import resolve
    from hloscope.compile.maxtext import check_available, split_args
    from hloscope.compile.run.jobs import analyze_result, compile_request_result
    from hloscope.compile.step.rooms import room_for

    tgt = as_target(target)
    items = (*([os.fspath(config)] if config is not None else []), *settings)
    split_args(items)
    check_available()
    layout = Layout(topology, slices)
    room_for(tgt, layout).check_devices(devices, argument="compile_maxtext's devices")
    request = CompileRequest(target if isinstance(target, str) else tgt.name, devices, maxtext=items, topology=topology,
                             slices=slices,
                             scheduler=resolve(scheduler, None), pipelined=pipelined_offload,
                             xla_flags=tuple(xla_flag_texts(flags or {})),
                             memory_override_bytes=memory_override_bytes, memory_fraction=memory_fraction)
    result, extra = compile_request_result(request, phase)
    source = str(Path(out) / OPTIMIZED_FILE) if out is not None else None
    report = analyze_result(result, tgt, extra=extra, source_path=source, label="<compile_maxtext>",
                            report_type=StepReport)
    if out is not None:
        save_artifacts(out, result, report, extra, force=True, request=request)
    return result, report


def _args(abstract_args: tuple[Any, ...]) -> Any:
    """The step's arguments as ``deviceless.compile_step`` takes them: a tuple, or one callable ``mesh -> args``."""
    if len(abstract_args) == 1 and callable(abstract_args[0]) and not hasattr(abstract_args[0], "shape"):
        return abstract_args[0]
    return abstract_args


def artifact_files(result: CompileResult, report: Report, extra: dict[str, Any],
                   request: CompileRequest | None = None) -> dict[str, str]:
    """The files of an artifact folder (docs/compile.md) for a compile and its report (``request``:
    what was asked for, kept in the manifest so that the same compile can reuse the folder)."""
    from hloscope.compile.run.artifacts import manifest  # lazy: the compile layer, for a compile only

    return {
        OPTIMIZED_FILE: result.optimized_hlo,
        UNOPTIMIZED_FILE: result.unoptimized_hlo,
        MANIFEST_FILE: manifest(result, extra, request),
        REPORT_FILE: render_to_string("json", report),
        REPORT_TEXT_FILE: render_to_string("table", report),
        **result.extra_files,
    }


def save_artifacts(out: str | os.PathLike[str], result: CompileResult, report: Report,
                   extra: dict[str, Any] | None = None, *, force: bool = False,
                   request: CompileRequest | None = None) -> Path:
    """Write the artifact folder of a compile at ``out``; returns its resolved path. An existing
    folder is replaced only with ``force`` and only if it is an earlier artifact folder."""
    from hloscope.compile.run.artifacts import write_artifacts  # lazy: the compile layer, for a compile only

    return write_artifacts(Path(out), artifact_files(result, report, extra or {}, request), force=force)


def compile_subject(request: CompileRequest, label: str | None = None) -> Subject:
    """Compile ``request`` (in its own process) and wrap it as a check subject, with its memory
    facts and its module before optimizations."""
    from hloscope.compile.run.jobs import compile_request  # lazy: the compile layer, for a compile only

    step = compile_request(request)
    return subject_from_compile(step.report, step.result.unoptimized_hlo, label or request_label(request))


def request_label(request: CompileRequest) -> str:
    """How ``hloscope check`` names a compiled step: the options that made it."""
    if request.maxtext is not None:
        return f"--maxtext {' '.join(request.maxtext)} --target {request.target}"
    if request.fn is not None:
        return f"--fn {request.fn} --target {request.target}"
    sets = "".join(f" --set {k}={v}" for k, v in request.sets)
    return f"--workload {request.workload}{sets} --target {request.target}"


__all__ = ["CompileRequest", "Policy", "Scheduler", "StepReport", "analyze", "artifact_files", "compile_maxtext",
           "compile_step",
           "compile_subject", "save_artifacts"]
