"""Compile a JAX step for a GPU target with no GPU: topology, mesh, flags, artifacts.

``compile_step`` lowers and compiles ``fn`` for ``devices`` compile-only GPUs of
``target`` and returns a :class:`CompileResult` with the scheduled HLO, the
unoptimized HLO, memory figures and the exact options used. Nothing is
allocated: arguments are ``jax.ShapeDtypeStruct``.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscope.compile import environment
from hloscope.errors import (
    EXIT_BAD_INPUT,
    EXIT_COMPILE_FAILED,
    EXIT_ENVIRONMENT,
    EXIT_OUT_OF_MEMORY,
    EXIT_TRACE_FAILED,
    HloscopeError,
)
from hloscope.targets import Target, get_target

#: XLA options for the scheduling knobs the sweep varies.
LHS_FLAG = "xla_gpu_enable_latency_hiding_scheduler"
PIPELINED_OFFLOAD_FLAG = "xla_gpu_enable_pipelined_host_offloading"


@dataclass
class CompileResult:
    """What one deviceless compile produced.

    optimized_hlo / unoptimized_hlo: HLO text after / before XLA's passes.
    memory: byte figures (see docs/compile.md for each key).
    options: the XLA compiler options passed, name -> value.
    versions: package versions; target: target name; devices: device count.
    compile_seconds: wall time of lower + compile.
    """

    optimized_hlo: str
    unoptimized_hlo: str
    memory: dict[str, int]
    options: dict[str, Any]
    versions: dict[str, str]
    target: str
    devices: int
    mesh_shape: dict[str, int]
    compile_seconds: float
    extra_files: dict[str, str] = field(default_factory=dict)


def topology_for(devices: int) -> str:
    """``1x1xN`` up to 8 GPUs (one node), else ``1x(N/8)x8`` nodes of 8."""
    if devices < 1:
        raise HloscopeError(f"--devices must be at least 1, got {devices}", EXIT_BAD_INPUT)
    if devices <= 8:
        return f"1x1x{devices}"
    if devices % 8:
        raise HloscopeError(f"--devices above 8 must be a multiple of 8, got {devices}", EXIT_BAD_INPUT)
    return f"1x{devices // 8}x8"


def make_mesh(target: Target | str, devices: int, axes: Sequence[tuple[str, int]] | None = None) -> Any:
    """A ``jax.sharding.Mesh`` over ``devices`` compile-only GPUs of ``target``.

    ``axes`` is [(name, size), ...] with sizes multiplying to ``devices``; default
    one axis ``("fsdp", devices)``.
    """
    environment.prepare()
    import numpy as np
    from jax.experimental import topologies
    from jax.sharding import Mesh

    tgt = get_target(target) if isinstance(target, str) else target
    axes = list(axes or [("fsdp", devices)])
    size = 1
    for _, n in axes:
        size *= n
    if size != devices:
        raise HloscopeError(f"mesh axes {axes} hold {size} devices, not {devices}", EXIT_BAD_INPUT)
    topology = topology_for(devices)
    try:
        with environment.quiet_native_stderr():
            topo = topologies.get_topology_desc(
                platform="cuda", topology_name="", target_config=tgt.gpu_target_config(), topology=topology,
            )
    except Exception as e:
        hint = ""
        if os.environ.get("JAX_SKIP_CUDA_CONSTRAINTS_CHECK") != "1":
            hint = ("; jax was imported before hloscope could configure it: set JAX_PLATFORMS=cpu and "
                    "JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 before importing jax")
        raise HloscopeError(f"cannot build a compile-only topology for {tgt.name}: {_first_line(e)}{hint}",
                            EXIT_ENVIRONMENT) from None
    devs: Any = np.array(topo.devices[:devices]).reshape([n for _, n in axes])
    return Mesh(devs, tuple(name for name, _ in axes))


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:400]
    return text[:400]


def parse_flag(text: str) -> tuple[str, Any]:
    """``--xla_foo=true`` / ``xla_foo=3`` -> ("xla_foo", True / 3)."""
    name, eq, value = text.lstrip("-").partition("=")
    if not name or not re.fullmatch(r"[a-z0-9_]+", name):
        raise HloscopeError(f"bad XLA flag '{text}': expected name=value", EXIT_BAD_INPUT)
    if not eq:
        return name, True
    low = value.lower()
    if low in ("true", "false"):
        return name, low == "true"
    if re.fullmatch(r"-?\d+", value):
        return name, int(value)
    if re.fullmatch(r"-?\d+\.\d*", value):
        return name, float(value)
    return name, value


def _memory_report_totals(path: str) -> dict[int, int]:
    """Memory-space color -> total bytes, from XLA's memory-usage report."""
    out: dict[int, int] = {}
    color = None
    with open(path) as f:
        for line in f:
            m = re.match(r"Memory Space: .*\(color=(\d+)\)", line)
            if m:
                color = int(m.group(1))
                continue
            m = re.match(r"Total bytes: (\d+)", line)
            if m and color is not None:
                out[color] = int(m.group(1))
    return out


def compile_step(
    fn: Callable[..., Any],
    *args: Any,
    target: Target | str = "h100-sxm",
    devices: int = 8,
    mesh: Any = None,
    mesh_axes: Sequence[tuple[str, int]] | None = None,
    flags: dict[str, Any] | None = None,
    lhs: bool | None = True,
    pipelined_offload: bool | None = True,
    donate_argnums: Sequence[int] = (),
) -> CompileResult:
    """Lower and compile ``fn(*args)`` for compile-only GPUs; allocate nothing.

    ``args`` are ``jax.ShapeDtypeStruct`` with shardings over ``mesh`` (build it
    with :func:`make_mesh`), or a callable ``mesh -> tuple of args``.
    """
    environment.prepare()
    import jax

    tgt = get_target(target) if isinstance(target, str) else target
    if mesh is None:
        mesh = make_mesh(tgt, devices, mesh_axes)
    if len(args) == 1 and callable(args[0]) and not isinstance(args[0], jax.ShapeDtypeStruct):
        args = tuple(args[0](mesh))
    options: dict[str, Any] = {}
    if lhs is not None:
        options[LHS_FLAG] = lhs
    if pipelined_offload is not None:
        options[PIPELINED_OFFLOAD_FLAG] = pipelined_offload
    options.update(flags or {})
    dump = tempfile.mkdtemp(prefix="hloscope-dump-")
    compile_options = dict(options, xla_dump_to=dump, xla_dump_hlo_as_text=True,
                           xla_gpu_dump_llvmir=False)
    t0 = time.perf_counter()
    try:
        try:
            with jax.sharding.use_mesh(mesh) if hasattr(jax.sharding, "use_mesh") else _null():
                lowered = jax.jit(fn, donate_argnums=tuple(donate_argnums)).lower(*args)
        except HloscopeError:
            raise
        except Exception as e:
            raise HloscopeError(f"tracing {getattr(fn, '__name__', fn)} failed: {type(e).__name__}: {_first_line(e)}",
                                EXIT_TRACE_FAILED) from None
        try:
            compiled = lowered.compile(compiler_options=compile_options)
        except MemoryError:
            raise HloscopeError("the host ran out of memory while compiling", EXIT_OUT_OF_MEMORY) from None
        except Exception as e:
            msg = _first_line(e)
            code = EXIT_OUT_OF_MEMORY if "RESOURCE_EXHAUSTED" in msg and "host" in msg.lower() else EXIT_COMPILE_FAILED
            raise HloscopeError(f"XLA compile failed: {msg}", code) from None
        seconds = time.perf_counter() - t0
        optimized = compiled.as_text() or ""
        before = sorted(glob.glob(os.path.join(dump, "*before_optimizations.txt")))
        unoptimized = Path(before[-1]).read_text() if before else ""
        stats = compiled.memory_analysis()
        memory = {
            k: int(getattr(stats, k, 0) or 0)
            for k in ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
                      "temp_size_in_bytes", "generated_code_size_in_bytes", "peak_memory_in_bytes",
                      "host_argument_size_in_bytes", "host_output_size_in_bytes",
                      "host_alias_size_in_bytes", "host_temp_size_in_bytes")
        }
        reports = sorted(glob.glob(os.path.join(dump, "*after_optimizations-memory-usage-report.txt")))
        extra: dict[str, str] = {}
        if reports:
            totals = _memory_report_totals(reports[-1])
            memory["report_device_total_bytes"] = totals.get(0, 0)
            memory["report_host_total_bytes"] = totals.get(5, 0)
            extra["memory-usage-report.txt"] = Path(reports[-1]).read_text()
        if not memory["peak_memory_in_bytes"]:
            memory["peak_memory_in_bytes"] = (memory["argument_size_in_bytes"] + memory["output_size_in_bytes"]
                                              + memory["temp_size_in_bytes"] - memory["alias_size_in_bytes"])
        memory["host_total_bytes"] = (memory["host_argument_size_in_bytes"] + memory["host_output_size_in_bytes"]
                                      + memory["host_temp_size_in_bytes"] - memory["host_alias_size_in_bytes"])
    finally:
        shutil.rmtree(dump, ignore_errors=True)
    return CompileResult(
        optimized_hlo=optimized, unoptimized_hlo=unoptimized, memory=memory, options=options,
        versions=environment.versions(), target=tgt.name, devices=int(mesh.devices.size),
        mesh_shape={str(k): int(v) for k, v in mesh.shape.items()}, compile_seconds=seconds,
        extra_files=extra,
    )


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: object) -> None:
        return None
