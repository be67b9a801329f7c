"""Compile a JAX step for a GPU target with no GPU: topology, mesh, flags, artifacts.

``compile_step`` lowers and compiles ``fn`` for ``devices`` compile-only GPUs of
``target`` and returns a :class:`CompileResult` with the scheduled HLO, the
unoptimized HLO, memory figures and the exact options used. Nothing is
allocated: arguments are ``jax.ShapeDtypeStruct``.
"""

from __future__ import annotations

import dataclasses
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

from hloscope.analysis.memory import report_space_totals
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

#: Phases of one compile, in order, as ``compile_step(phase=...)`` reports them; the
#: caller adds its own after (analysis, writing artifacts).
PHASE_STARTING = "starting JAX"
PHASE_TRACING = "tracing"
PHASE_LOWERING = "lowering"
PHASE_XLA = "XLA compile"
PHASES = (PHASE_STARTING, PHASE_TRACING, PHASE_LOWERING, PHASE_XLA)


def _no_phase(name: str) -> None:
    return None


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
    device_memory_size: the HBM size, bytes, XLA compiled for (the target's, or
    ``memory_override_bytes`` when one was given).
    extra_files: artifact name -> text: XLA's memory-usage report, the live-at-peak
    section of its live-range dump, the buffer-assignment lines of those values.
    tensor_names: the step's ``checkpoint_name`` call sites read from its jaxpr
    (``hloscope.compile.names``); the analysis matches transfers to them.
    compiled: the ``jax.stages.Compiled`` (in the process that compiled it only).
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
    device_memory_size: int = 0
    extra_files: dict[str, str] = field(default_factory=dict)
    tensor_names: list[dict[str, Any]] = field(default_factory=list)
    compiled: Any = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        # The jax Compiled object stays in the process that made it (it does not pickle).
        return {k: v for k, v in self.__dict__.items() if k != "compiled"} | {"compiled": None}


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
        if "topology not implemented" in str(e):
            raise HloscopeError(environment.STARTED_TOO_EARLY, EXIT_ENVIRONMENT) from None
        raise HloscopeError(f"cannot build a compile-only topology for {tgt.name}: {_first_line(e)}",
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


#: Artifact names of the memory texts XLA dumps (see :func:`_memory_texts`).
from hloscope.artifact import (  # noqa: E402 - the artifact file names are defined with their reader
    BUFFER_ASSIGNMENT_FILE,
    LIVE_AT_PEAK_FILE,
    MEMORY_REPORT_FILE,
)


def with_memory(target: Target, memory_override_bytes: int | None) -> Target:
    """``target`` with its HBM size replaced by ``memory_override_bytes`` (when given).

    XLA reads the HBM size from the GpuTargetConfig of the compile-only topology
    (``device_memory_size``); the scheduler's memory limit is derived from it.
    """
    if memory_override_bytes is None:
        return target
    if memory_override_bytes <= 0:
        raise HloscopeError(f"device memory override must be positive, got {memory_override_bytes} bytes",
                            EXIT_BAD_INPUT)
    return dataclasses.replace(target, device_memory_size=int(memory_override_bytes))


def _live_at_peak(text: str) -> str:
    """The header and the ``Live ranges at N (peak):`` section (with XLA's stack-trace
    breakdown) of a ``*-live-range.txt`` dump; the per-instruction lists are dropped."""
    lines = text.splitlines()
    out = lines[:1]
    keep = False
    for line in lines[1:]:
        if re.match(r"\s*Live ranges at \d+ \(peak\):", line):
            keep = True
        if keep:
            out.append(line)
    return "\n".join(out) + "\n" if keep else ""


def _assignment_at_peak(text: str, live_at_peak: str) -> str:
    """Buffer-assignment lines for the values live at peak: every ``allocation`` header
    line and the ``value:`` lines whose position is listed in ``live_at_peak``."""
    names = set(re.findall(r"^\s{4}(\S+): \d+ bytes", live_at_peak, re.M))
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith(("allocation ", "BufferAssignment")):
            out.append(line)
            continue
        m = re.match(r" value: <\d+ (\S+)(?: \(phi\))? @\d+>", line)
        # The live-range dump writes ``param.7{}`` where the assignment writes ``param.7``.
        if m and (m.group(1) in names or f"{m.group(1)}{{}}" in names):
            out.append(line)
    return "\n".join(out) + "\n"


def _memory_texts(dump: str) -> dict[str, str]:
    """The memory texts of the optimized module in an XLA dump folder, trimmed to what
    the memory analysis reads (a 671B step's full buffer assignment is tens of MB)."""
    def newest(suffix: str) -> str:
        found = sorted(glob.glob(os.path.join(dump, f"*after_optimizations-{suffix}")))
        return Path(found[-1]).read_text() if found else ""

    out: dict[str, str] = {}
    report = newest("memory-usage-report.txt")
    if report:
        out[MEMORY_REPORT_FILE] = report
    peak = _live_at_peak(newest("live-range.txt"))
    if peak:
        out[LIVE_AT_PEAK_FILE] = peak
        assignment = newest("buffer-assignment.txt")
        if assignment:
            out[BUFFER_ASSIGNMENT_FILE] = _assignment_at_peak(assignment, peak)
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
    memory_override_bytes: int | None = None,
    roles: dict[str, str] | None = None,
    phase: Callable[[str], None] | None = None,
) -> CompileResult:
    """Lower and compile ``fn(*args)`` for compile-only GPUs; allocate nothing.

    ``args`` are ``jax.ShapeDtypeStruct`` with shardings over ``mesh`` (build it
    with :func:`make_mesh`), or a callable ``mesh -> tuple of args``.
    ``memory_override_bytes`` compiles for the target with that HBM size instead
    of its own; the mesh must then be built here (``mesh=None``) or from
    ``with_memory(target, memory_override_bytes)``, because XLA takes the size
    from the topology the mesh's devices belong to.
    An argument without a sharding (a plain ``ShapeDtypeStruct``) is replicated
    on every device of the mesh. The result is always compiled for the target's
    GPUs: a module that comes out compiled for another platform is an error.
    ``roles``: checkpoint name -> what the tensor is ("Q projection"), for the report.
    ``phase`` is called with each phase's name as it starts (:data:`PHASES`).
    """
    say = phase or _no_phase
    say(PHASE_STARTING)
    environment.prepare()
    import jax

    tgt = with_memory(get_target(target) if isinstance(target, str) else target, memory_override_bytes)
    if mesh is None:
        mesh = make_mesh(tgt, devices, mesh_axes)
    if len(args) == 1 and callable(args[0]) and not isinstance(args[0], jax.ShapeDtypeStruct):
        args = tuple(args[0](mesh))
    args = place_on_mesh(args, mesh)
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
        with environment.quiet_native_stderr():
            return _compile(fn, args, tgt, mesh, options, compile_options, donate_argnums, dump, t0, roles, say)
    finally:
        shutil.rmtree(dump, ignore_errors=True)


def _compile(fn: Callable[..., Any], args: tuple[Any, ...], tgt: Target, mesh: Any, options: dict[str, Any],
             compile_options: dict[str, Any], donate_argnums: Sequence[int], dump: str, t0: float,
             roles: dict[str, str] | None, say: Callable[[str], None]) -> CompileResult:
    import jax

    try:
        with jax.sharding.use_mesh(mesh) if hasattr(jax.sharding, "use_mesh") else _null():
            say(PHASE_TRACING)
            traced = jax.jit(fn, donate_argnums=tuple(donate_argnums)).trace(*args)
            say(PHASE_LOWERING)
            lowered = traced.lower()
    except HloscopeError:
        raise
    except Exception as e:
        raise HloscopeError(f"tracing {getattr(fn, '__name__', fn)} failed: {type(e).__name__}: {_first_line(e)}",
                            EXIT_TRACE_FAILED) from None
    say(PHASE_XLA)
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
    platform = compiled_platform(compiled)
    if platform != "gpu":
        raise HloscopeError(f"the step was compiled for {platform}, not for {tgt.name}'s GPUs: give every "
                            "argument a NamedSharding over hloscope.make_mesh(target, devices), or pass "
                            "mesh=", EXIT_COMPILE_FAILED)
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
    extra = _memory_texts(dump)
    if MEMORY_REPORT_FILE in extra:
        totals = report_space_totals(extra[MEMORY_REPORT_FILE])
        memory["report_device_total_bytes"] = totals.get(0, 0)
        memory["report_host_total_bytes"] = totals.get(5, 0)
    # What the device must hold: arguments + temporaries + outputs not aliased to an argument.
    memory["device_allocation_bytes"] = (memory["argument_size_in_bytes"] + memory["output_size_in_bytes"]
                                         + memory["temp_size_in_bytes"] - memory["alias_size_in_bytes"])
    memory["peak_memory_from_xla"] = int(bool(memory["peak_memory_in_bytes"]))
    memory["device_memory_size"] = tgt.device_memory_size
    if not memory["peak_memory_in_bytes"]:
        memory["peak_memory_in_bytes"] = (memory["argument_size_in_bytes"] + memory["output_size_in_bytes"]
                                          + memory["temp_size_in_bytes"] - memory["alias_size_in_bytes"])
    memory["host_total_bytes"] = (memory["host_argument_size_in_bytes"] + memory["host_output_size_in_bytes"]
                                  + memory["host_temp_size_in_bytes"] - memory["host_alias_size_in_bytes"])
    return CompileResult(
        optimized_hlo=optimized, unoptimized_hlo=unoptimized, memory=memory, options=options,
        versions=environment.versions(), target=tgt.name, devices=int(mesh.devices.size),
        mesh_shape={str(k): int(v) for k, v in mesh.shape.items()}, compile_seconds=seconds,
        device_memory_size=tgt.device_memory_size, extra_files=extra,
        tensor_names=_tensor_names(traced, roles), compiled=compiled,
    )


def _tensor_names(traced: Any, roles: dict[str, str] | None) -> list[dict[str, Any]]:
    from hloscope.compile.names import tensor_names

    try:
        return tensor_names(traced.jaxpr, roles)
    except Exception:  # names are a convenience: a jaxpr we cannot walk must not fail the compile
        return []


def compiled_platform(compiled: Any) -> str:
    """The platform of the devices ``compiled`` runs on: ``gpu`` for the compile-only
    GPUs (the CUDA plugin calls them ``cuda``), else what JAX calls it (``cpu``)."""
    import jax

    shardings = jax.tree.leaves(compiled.input_shardings) + jax.tree.leaves(compiled.output_shardings)
    platforms = {d.platform for s in shardings for d in getattr(s, "device_set", ())}
    if not platforms or platforms <= {"cuda", "gpu", "rocm"}:
        return "gpu"
    return ", ".join(sorted(platforms - {"cuda", "gpu", "rocm"}))


def place_on_mesh(args: Sequence[Any], mesh: Any) -> tuple[Any, ...]:
    """Give every ``ShapeDtypeStruct`` leaf without a sharding a replicated one on ``mesh``."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    replicated = NamedSharding(mesh, PartitionSpec())

    def place(x: Any) -> Any:
        if isinstance(x, jax.ShapeDtypeStruct) and x.sharding is None:
            return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=replicated)
        return x

    return tuple(jax.tree.map(place, a) for a in args)


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: object) -> None:
        return None
