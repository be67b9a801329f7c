"""The Python API: ``analyze`` (no JAX needed) and ``compile_step`` (lazy JAX)."""

from __future__ import annotations

import os
from typing import Any

from hloscope.analysis.overlap import AnalysisOptions
from hloscope.analysis.report import Report, analyze_module
from hloscope.artifact import load_report
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.loader import looks_like_hlo_text
from hloscope.hlo.model import Module
from hloscope.hlo.parser import parse_hlo
from hloscope.hlo.shape import HOST_MEMORY_SPACE
from hloscope.targets import DEFAULT_TARGET, Target, get_target


def analyze(x: Any, target: Target | str | None = None, host_space: int = HOST_MEMORY_SPACE) -> Report:
    """Analyze HLO text, a path (file, dump folder, ``hloscope compile`` artifact folder), a
    parsed Module, or a ``jax.stages.Compiled`` / ``Lowered``; returns the :class:`Report`.

    ``target`` None: an artifact folder's own target, else the default (``h100-sxm``). A string
    is HLO text when it reads like HLO (``HloModule`` after any blank lines and comments, or
    several lines); otherwise a path.
    """
    options = AnalysisOptions(host_space=host_space)
    if isinstance(x, os.PathLike) or (isinstance(x, str) and not looks_like_hlo_text(x)):
        path = os.fspath(x)
        if not path:
            raise HloscopeError("analyze: empty string: give HLO text or a path", EXIT_BAD_INPUT)
        return load_report(path, target, options)
    tgt = get_target(target or DEFAULT_TARGET) if not isinstance(target, Target) else target
    if isinstance(x, Module):
        module = x
    elif isinstance(x, str):
        module = parse_hlo(x)
    elif hasattr(x, "as_text") and hasattr(x, "memory_analysis"):  # jax.stages.Compiled
        module = parse_hlo(_gpu_compiled(x).as_text(), "<compiled>")
    elif hasattr(x, "compile") and hasattr(x, "as_text"):  # jax.stages.Lowered
        module = parse_hlo(_gpu_compiled(x.compile()).as_text(), "<compiled>")
    else:
        raise TypeError(f"cannot analyze {type(x).__name__}: give HLO text, a path, or a jax Compiled/Lowered")
    return analyze_module(module, tgt, options)


def _gpu_compiled(compiled: Any) -> Any:
    """``compiled``, if it runs on GPUs; a one-line error if it was compiled for the host CPU."""
    from hloscope.compile.deviceless import compiled_platform

    platform = compiled_platform(compiled)
    if platform != "gpu":
        raise HloscopeError(f"this step was compiled for {platform}, not a GPU: its schedule says nothing about GPU "
                            "offloading; compile it with hloscope.compile_step(fn, *abstract_args, target=...)",
                            EXIT_BAD_INPUT)
    return compiled


def compile_step(fn: Any, *abstract_args: Any, target: Target | str = DEFAULT_TARGET, devices: int = 8,
                 mesh: Any = None, mesh_axes: Any = None, flags: dict[str, Any] | None = None,
                 lhs: bool | None = True, pipelined_offload: bool | None = True) -> tuple[Any, Report]:
    """Compile ``fn`` for ``devices`` compile-only GPUs of ``target`` and analyze it.

    Works in a script that imported jax first (as long as no jax computation ran
    yet). Arguments without a sharding are replicated on every device. Returns
    ``(CompileResult, Report)``: ``result.compiled`` is the ``jax.stages.Compiled``;
    ``print(report)`` shows the table, with each transfer's ``checkpoint_name``
    and the source line of the tensor it moves.
    """
    from hloscope.compile.deviceless import compile_step as _compile
    from hloscope.compile.jobs import analyze_result

    result = _compile(fn, *abstract_args, target=target, devices=devices, mesh=mesh, mesh_axes=mesh_axes,
                      flags=flags, lhs=lhs, pipelined_offload=pipelined_offload)
    return result, analyze_result(result, get_target(target) if isinstance(target, str) else target)
