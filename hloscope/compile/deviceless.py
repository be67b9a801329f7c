"""Compile a JAX step for a GPU target with no GPU: topology, mesh, flags, artifacts.

``compile_step(request, fn, args, options)`` lowers and compiles ``fn`` for the
compile-only GPUs a :class:`~hloscope.compile.request.CompileRequest` names and returns
a frozen :class:`CompileResult` with the scheduled HLO, the unoptimized HLO, memory
figures and the exact options used; :class:`StepOptions` says how the step is traced
(mesh, donations, shardings) and reported. Nothing is allocated: arguments are
``jax.ShapeDtypeStruct``.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import glob
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from hloscope.compile import environment, jaxcompat
from hloscope.compile.request import CompileRequest, Scheduler
from hloscope.compile.result import XLA_MEMORY_FIELDS, CompileMemory, ScheduleRecord, TensorName
from hloscope.compile.result import CompileResult as CompileResult
from hloscope.compile.scheduler import LHS_FLAG as LHS_FLAG
from hloscope.compile.scheduler import SCHEDULER_OPTIONS, read_run
from hloscope.compile.topology import compile_only_devices
from hloscope.compile.topology import topology_for as _topology_for
from hloscope.errors import (
    EXIT_BAD_INPUT,
    EXIT_COMPILE_FAILED,
    EXIT_OUT_OF_MEMORY,
    EXIT_TRACE_FAILED,
    HloscopeError,
)
from hloscope.targets import Target, get_target

if TYPE_CHECKING:
    from hloscope.analysis.intent import Intent

#: Phases of one compile, in order, as ``compile_step(phase=...)`` reports them; the
#: caller adds its own after (analysis, writing artifacts).
PHASE_STARTING = "starting JAX"
PHASE_TRACING = "tracing"
PHASE_LOWERING = "lowering"
PHASE_XLA = "XLA compile"
PHASES = (PHASE_STARTING, PHASE_TRACING, PHASE_LOWERING, PHASE_XLA)


def _no_phase(name: str) -> None:
    return None


#: XLA options for the scheduling knobs the sweep varies (the scheduler's: hloscope.compile.scheduler).
PIPELINED_OFFLOAD_FLAG = "xla_gpu_enable_pipelined_host_offloading"


def topology_for(devices: int, target: Target | str = "h100-sxm") -> str:
    """The compile-only topology string for ``devices`` GPUs of ``target`` (``hloscope.compile.topology``)."""
    return _topology_for(get_target(target) if isinstance(target, str) else target, devices).name


def _axes(devices: int, axes: Sequence[tuple[str, int]] | None) -> list[tuple[str, int]]:
    out = [(str(n), int(k)) for n, k in (axes or [("fsdp", devices)])]
    size = 1
    for _, n in out:
        size *= n
    if size != devices:
        raise HloscopeError(f"mesh axes {out} hold {size} devices, not {devices}", EXIT_BAD_INPUT)
    return out


def device_mesh(target: Target | str, devices: int, axes: Sequence[tuple[str, int]] | None = None) -> Any:
    """A concrete ``jax.sharding.Mesh`` over ``devices`` compile-only GPUs of ``target``.

    Compile-only devices report no memories, so a ``NamedSharding`` over this mesh
    loses its ``memory_kind`` when it is built (JAX checks the kind against the
    devices' memories); build shardings over :func:`make_mesh` instead.
    """
    environment.prepare()  # before the first jax import: JAX_PLATFORMS, and the plugin's chatter hidden
    import numpy as np
    from jax.sharding import Mesh

    tgt = get_target(target) if isinstance(target, str) else target
    ax = _axes(devices, axes)
    devs: Any = np.array(compile_only_devices(tgt, devices)).reshape([n for _, n in ax])
    return Mesh(devs, tuple(name for name, _ in ax))


def make_mesh(target: Target | str, devices: int, axes: Sequence[tuple[str, int]] | None = None) -> Any:
    """The mesh to write a step's shardings over: an ``AbstractMesh`` of ``devices`` GPUs of ``target``.

    ``axes`` is [(name, size), ...] with sizes multiplying to ``devices``; default one
    axis ``("fsdp", devices)``. It carries the GPU's name (``device_kind``), so
    :func:`compile_step` knows which target it belongs to; ``NamedSharding(mesh, spec,
    memory_kind="pinned_host")`` keeps its memory kind (a concrete mesh of compile-only
    devices would drop it) and reaches XLA. ``compile_step`` compiles for the target's
    compile-only GPUs laid out as this mesh.
    """
    return device_mesh(target, devices, axes).abstract_mesh


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


def _dumped(dump: str, pattern: str, since: float) -> list[str]:
    """Files of the dump folder matching ``pattern`` written by this compile (modified at or after
    ``since``: a folder the user named may hold earlier dumps), in name order."""
    return sorted(f for f in glob.glob(os.path.join(dump, pattern)) if os.path.getmtime(f) >= since - 1)


def _memory_texts(dump: str, since: float) -> dict[str, str]:
    """The memory texts of the optimized module in an XLA dump folder, trimmed to what
    the memory analysis reads (a 671B step's full buffer assignment is tens of MB)."""
    def newest(suffix: str) -> str:
        found = _dumped(dump, f"*after_optimizations-{suffix}", since)
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


def _refuse_missing_files(options: dict[str, Any]) -> None:
    """An XLA option that names a file the compile reads must name one: XLA itself ignores a
    missing profile without a word, and the compile would look scheduled with it."""
    from hloscope.compile.cache import FILE_OPTIONS

    for name in FILE_OPTIONS:
        value = options.get(name)
        if value is not None and not os.path.exists(str(value)):
            raise HloscopeError(f"--xla-flag {name}={value}: no such file or folder", EXIT_BAD_INPUT)


def allocator_bytes(target: Target, memory_fraction: float | None) -> int | None:
    """What JAX's GPU allocator takes of ``target``'s HBM at ``memory_fraction`` (None: no fraction).

    jaxlib (``PyClient::CompileAndLoadIfrtProgram``) sets the executable's device memory size
    to the allocator's ``bytes_limit``, which the BFC allocator puts at the HBM times the
    fraction; XLA's GPU scheduler then takes that as its base instead of 80% of the HBM
    (``GetSchedulerMemoryLimit`` in ``gpu_hlo_schedule.cc``).
    """
    if memory_fraction is None:
        return None
    if not 0 < memory_fraction <= 1:
        raise HloscopeError(f"memory fraction {memory_fraction:g}: expected a number in (0, 1], as "
                            "XLA_PYTHON_CLIENT_MEM_FRACTION takes", EXIT_BAD_INPUT)
    return int(target.device_memory_size * memory_fraction)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def with_device_memory_size(options: Any, nbytes: int) -> Any:
    """``options`` (an ``xla_client.CompileOptions``) with its executable build options'
    ``device_memory_size`` set to ``nbytes``.

    The Python binding does not expose that field, so it is set on the serialized proto:
    ``CompileOptionsProto.executable_build_options`` is field 3 and
    ``ExecutableBuildOptionsProto.device_memory_size`` field 15 (``xla/pjrt/proto/
    compile_options.proto``); an embedded message that appears twice is merged.
    """
    inner = b"\x78" + _varint(nbytes)  # field 15, varint
    return type(options).ParseFromString(options.SerializeAsString() + b"\x1a" + _varint(len(inner)) + inner)


#: The device memory size the compile running in this thread (or context) gives XLA; None: none.
_DEVICE_MEMORY_SIZE: contextvars.ContextVar[int | None] = contextvars.ContextVar("hloscope_device_memory_size",
                                                                                 default=None)
_WRAP_LOCK = threading.Lock()


def _wrap_compile_options() -> None:
    """Wrap JAX's ``get_compile_options`` once, for the process: the wrapper sets the device memory
    size only for a compile that asked for one in its own thread (:data:`_DEVICE_MEMORY_SIZE`), so
    compiles in other threads, and later ones, get JAX's options unchanged."""
    from jax._src import compiler

    with _WRAP_LOCK:
        if getattr(compiler.get_compile_options, "_hloscope_wrapped", False):
            return
        original = compiler.get_compile_options

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            options = original(*args, **kwargs)
            nbytes = _DEVICE_MEMORY_SIZE.get()
            return options if nbytes is None else with_device_memory_size(options, nbytes)

        wrapped._hloscope_wrapped = True  # type: ignore[attr-defined]
        compiler.get_compile_options = wrapped


@contextlib.contextmanager
def build_device_memory_size(nbytes: int | None) -> Iterator[None]:
    """While compiling in this thread, give XLA ``nbytes`` as the device memory size, as jaxlib
    does on a GPU from its allocator's limit (compile-only devices have no allocator, so jaxlib
    sets none)."""
    if nbytes is None:
        yield
        return
    _wrap_compile_options()
    token = _DEVICE_MEMORY_SIZE.set(nbytes)
    try:
        yield
    finally:
        _DEVICE_MEMORY_SIZE.reset(token)


@dataclass(frozen=True)
class StepOptions:
    """How one step is traced and reported, beside the :class:`CompileRequest` that says what to compile for.

    mesh: the mesh the step's shardings are written over (:func:`make_mesh`); when given it
    decides the devices (its shape, and for an ``AbstractMesh`` its GPU, which must be the
    request's target's). mesh_axes: without ``mesh``, the axes of the mesh made here
    ([(name, size), ...], default one axis ``("fsdp", devices)``). donate_argnums /
    in_shardings / out_shardings: as for ``jax.jit`` (memory kinds kept). roles: checkpoint
    name -> what the tensor is ("Q projection"), for the report. cache: look the lowered
    module up in the compile cache (``hloscope.compile.cache``) and store what XLA emits (a
    hit has ``compiled=None``). phase: called with each phase's name as it starts
    (:data:`PHASES`). target: the :class:`~hloscope.targets.Target` itself when the caller
    holds one that its name does not find (a Target built in Python); its name must be the
    request's.
    """

    mesh: Any = None
    mesh_axes: Sequence[tuple[str, int]] | None = None
    donate_argnums: tuple[int, ...] = ()
    in_shardings: Any = None
    out_shardings: Any = None
    roles: Mapping[str, str] | None = None
    cache: bool = False
    phase: Callable[[str], None] | None = None
    target: Target | None = None


def compile_step(request: CompileRequest, fn: Callable[..., Any],
                 args: Sequence[Any] | Callable[[Any], Sequence[Any]] = (),
                 options: StepOptions | None = None) -> CompileResult:
    """Lower and compile ``fn(*args)`` for compile-only GPUs of ``request.target``; allocate nothing.

    ``request`` says what to compile for: target, devices, scheduler, pipelined host
    offloading, XLA flags, an HBM override (``memory_override_bytes``: the devices are made
    here, from the target, so any mesh of the same GPU works) and the allocator's fraction
    (``memory_fraction``: compile as JAX does on a GPU whose allocator takes that fraction of
    the HBM, ``XLA_PYTHON_CLIENT_MEM_FRACTION``: jaxlib then gives XLA the allocator's limit
    as the device memory size, and XLA's scheduler plans for it, :func:`allocator_bytes`;
    without it XLA plans for 80% of the HBM, as it does when no allocator is known). Its
    workload / fn fields name the step for the caller; ``fn`` here is the step itself.

    ``args`` are ``jax.ShapeDtypeStruct`` with shardings over the mesh (build it with
    :func:`make_mesh`), or a callable ``mesh -> tuple of args``; a step may take no
    arguments at all. An argument without a sharding (a plain ``ShapeDtypeStruct``) is
    replicated on every device of the mesh. Memory kinds (``pinned_host``,
    ``unpinned_host``, ``device``) on shardings over :func:`make_mesh` reach XLA:
    arguments, results (``out_shardings``) and ``jax.device_put`` inside the step. ``fn``
    may already be a ``jax.jit`` function (its own ``in_shardings``/``out_shardings`` then
    apply). The result is always compiled for the target's GPUs: a step that places a
    value on a CPU device is an error (exit 2). ``options``: :class:`StepOptions`.
    """
    opts = options or StepOptions()
    say = opts.phase or _no_phase
    say(PHASE_STARTING)
    environment.prepare()
    import jax

    if opts.target is not None and opts.target.name != request.target:
        raise ValueError(f"StepOptions.target is {opts.target.name}, the request's target is {request.target}")
    tgt = with_memory(opts.target or get_target(request.target), request.memory_override_bytes)
    allocator = allocator_bytes(tgt, request.memory_fraction)
    chosen = request.scheduler
    concrete = device_mesh(tgt, request.devices, opts.mesh_axes) if opts.mesh is None else _devices_for(opts.mesh, tgt)
    abstract = concrete.abstract_mesh
    if callable(args) and not isinstance(args, jax.ShapeDtypeStruct):
        args = tuple(args(abstract))
    # A jax.jit function's own in_shardings place its unsharded arguments.
    placed = place_on_mesh(tuple(args), abstract, tgt, replicate=not _is_jitted(fn))
    options_used: dict[str, Any] = dict(SCHEDULER_OPTIONS[chosen])
    if request.pipelined is not None:
        options_used[PIPELINED_OFFLOAD_FLAG] = request.pipelined
    options_used.update(parse_flag(f) for f in request.xla_flags)
    _refuse_missing_files(options_used)
    dump = _dump_folder(options_used)
    compile_options = {**jaxcompat.compile_flags(), **options_used, "xla_dump_to": dump,
                       "xla_dump_hlo_as_text": True, "xla_gpu_dump_llvmir": False}
    t0 = time.perf_counter()
    try:
        with environment.capture_native_stderr() as log:
            return _compile(fn, placed, tgt, concrete, options_used, compile_options, opts, dump, t0,
                            lambda hlo: _read_scheduler(hlo, log.peek(), chosen), allocator)
    finally:
        if dump != options_used.get("xla_dump_to"):
            shutil.rmtree(dump, ignore_errors=True)


def _dump_folder(options: dict[str, Any]) -> str:
    """Where XLA dumps: the folder ``--xla-flag xla_dump_to=DIR`` names (created, and kept), else a
    scratch folder removed after the compile. A DIR that is a file, or cannot be made, is one line (exit 2)."""
    given = options.get("xla_dump_to")
    if given is None:
        return tempfile.mkdtemp(prefix="hloscope-dump-")
    if not isinstance(given, str) or not given:
        raise HloscopeError("--xla-flag xla_dump_to=DIR: DIR must be a folder name", EXIT_BAD_INPUT)
    if os.path.exists(given) and not os.path.isdir(given):
        raise HloscopeError(f"--xla-flag xla_dump_to={given}: names a file, not a folder", EXIT_BAD_INPUT)
    try:
        os.makedirs(given, exist_ok=True)
    except OSError as e:
        raise HloscopeError(f"--xla-flag xla_dump_to={given}: cannot make the folder: {e.strerror or e}",
                            EXIT_BAD_INPUT) from None
    return given


def _read_scheduler(optimized: str, text: str | None, chosen: Scheduler) -> tuple[ScheduleRecord, dict[str, str]]:
    """Which scheduler ran (read from the HLO and XLA's log so far) and the log's scheduler and
    estimator lines as the artifact's scheduler log (extra file name -> text)."""
    from hloscope.hlo.xla_dumps import SCHEDULER_LOG_FILE
    from hloscope.hlo.xla_log import scheduler_log_lines

    lines = scheduler_log_lines(text or "")
    record = cast(ScheduleRecord, read_run(optimized, text, chosen).to_record())
    return record, ({SCHEDULER_LOG_FILE: lines} if lines else {})


def _devices_for(mesh: Any, tgt: Target) -> Any:
    """The concrete mesh of ``tgt``'s compile-only GPUs that ``mesh`` (abstract or concrete) stands for."""
    from jax.sharding import Mesh

    if isinstance(mesh, Mesh):
        platforms = {d.platform for d in mesh.devices.flat}
        if platforms - {"gpu", "cuda"}:
            raise HloscopeError(f"mesh= holds {', '.join(sorted(platforms))} devices, not compile-only GPUs: "
                                f"build it with hloscope.compile.deviceless.make_mesh('{tgt.name}', "
                                f"{mesh.devices.size})", EXIT_BAD_INPUT)
    abstract = mesh if not isinstance(mesh, Mesh) else mesh.abstract_mesh
    kind, platform = _kind(abstract)
    if kind is not None and kind != tgt.description:
        raise HloscopeError(f"mesh= was made for {kind} GPUs, not for {tgt.name} ({tgt.description}): build it "
                            f"with make_mesh('{tgt.name}', {abstract.size})", EXIT_BAD_INPUT)
    if platform not in ("gpu", "cuda"):
        raise HloscopeError(f"mesh= is a mesh of {platform} devices, not of {tgt.name}'s GPUs: build it with "
                            f"make_mesh('{tgt.name}', {abstract.size})", EXIT_BAD_INPUT)
    return device_mesh(tgt, int(abstract.size), list(zip(abstract.axis_names, abstract.axis_sizes, strict=True)))


def _kind(abstract: Any) -> tuple[str | None, str]:
    """(device kind, platform) an ``AbstractMesh`` was made for (None, "gpu") when it does not say."""
    device = getattr(abstract, "abstract_device", None)
    if device is None:
        return None, "gpu"
    return device.device_kind, jaxcompat.abstract_device_platform(device)


def _abstract_sharding(s: Any, abstract: Any, tgt: Target) -> Any:
    """``s`` over ``abstract`` (keeping its spec and memory kind); a sharding on CPU devices is an error."""
    from jax.sharding import AbstractMesh, NamedSharding

    if isinstance(s, NamedSharding):
        if isinstance(s.mesh, AbstractMesh):
            kind, _ = _kind(s.mesh)
            if kind is not None and kind != tgt.description:
                raise HloscopeError(f"a sharding is over a mesh of {kind} GPUs, not of {tgt.name} "
                                    f"({tgt.description}): build it over make_mesh('{tgt.name}', ...)",
                                    EXIT_BAD_INPUT)
            return s
        _check_devices(s.mesh.devices.flat, tgt)
        if tuple(s.mesh.axis_names) != tuple(abstract.axis_names) or s.mesh.devices.shape != tuple(
                abstract.axis_sizes):
            return s
        return NamedSharding(abstract, s.spec, memory_kind=s.memory_kind)
    device_set = getattr(s, "device_set", None)
    if device_set:
        _check_devices(device_set, tgt)
    return s


def _check_devices(devices: Any, tgt: Target) -> None:
    cpus = sorted({str(d) for d in devices if d.platform not in ("gpu", "cuda", "rocm")})
    if cpus:
        raise HloscopeError(f"a sharding places values on {', '.join(cpus[:3])} (the host's CPU), not on "
                            f"{tgt.name}'s GPUs: build it over hloscope.compile.deviceless.make_mesh"
                            f"('{tgt.name}', devices); host memory is memory_kind='pinned_host' on a GPU sharding",
                            EXIT_BAD_INPUT)


def _abstract_tree(tree: Any, abstract: Any, tgt: Target) -> Any:
    import jax
    from jax.sharding import Sharding

    return jax.tree.map(lambda s: _abstract_sharding(s, abstract, tgt) if isinstance(s, Sharding) else s, tree,
                        is_leaf=lambda x: isinstance(x, Sharding))


def _memory_kind_error(e: BaseException) -> HloscopeError | None:
    """A one-line exit-2 error for JAX's complaint about a memory kind, else None."""
    text = str(e)
    m = re.search(r"invalid memory kind: ?(\S+?)\.? Valid memory kinds are: ([\w, ]+)", text, re.I)
    if m:
        return HloscopeError(f"unsupported memory kind '{m.group(1)}': the target's GPUs have "
                             f"{m.group(2).strip()}", EXIT_BAD_INPUT)
    if "memory kind" in text.lower() or "memory_kind" in text:
        return HloscopeError(f"bad memory placement: {_first_line(e)}", EXIT_BAD_INPUT)
    if "memory_space of all inputs" in text:
        # On real GPUs JAX fills in memory_kind="device" for a sharding that names none; over
        # the abstract mesh no memory kind means "where the value already is".
        return HloscopeError(f"tracing failed: {_first_line(e)} (a NamedSharding over make_mesh(...) without "
                             "memory_kind leaves a value where it is: give memory_kind='device' to bring it "
                             "from host memory)", EXIT_TRACE_FAILED)
    return None


def _compile(fn: Callable[..., Any], args: tuple[Any, ...], tgt: Target, mesh: Any, options: dict[str, Any],
             compile_options: dict[str, Any], opts: StepOptions, dump: str, t0: float,
             scheduler_of: Callable[[str], tuple[ScheduleRecord, dict[str, str]]],
             allocator: int | None) -> CompileResult:
    import jax

    say = opts.phase or _no_phase
    shardings = {k: v for k, v in (("in_shardings", opts.in_shardings), ("out_shardings", opts.out_shardings))
                 if v is not None}
    shardings = {k: _abstract_tree(v, mesh.abstract_mesh, tgt) for k, v in shardings.items()}
    try:
        say(PHASE_TRACING)
        if _is_jitted(fn):  # already a jax.jit function: keep its shardings
            if opts.donate_argnums or shardings:
                raise HloscopeError(f"{getattr(fn, '__name__', 'fn')} is already a jax.jit function: give "
                                    "donate_argnums and shardings to its jax.jit, not to compile_step",
                                    EXIT_BAD_INPUT)
            traced = cast(Any, fn).trace(*args)
        else:
            traced = jax.jit(fn, donate_argnums=tuple(opts.donate_argnums), **shardings).trace(*args)
        say(PHASE_LOWERING)
        # Lowered for CUDA against the abstract mesh: memory kinds stay on the shardings
        # (the compile-only devices have no memories to check them against).
        lowered = traced.lower(lowering_platforms=("cuda",))
    except HloscopeError:
        raise
    except Exception as e:
        raise _memory_kind_error(e) or HloscopeError(
            f"tracing {getattr(fn, '__name__', fn)} failed: {type(e).__name__}: {_first_line(e)}",
            EXIT_TRACE_FAILED) from None
    device_assignment = _device_assignment(lowered, mesh, tgt)
    say(PHASE_XLA)
    from hloscope.compile.cache import lookup

    # A compile that dumps into the user's folder must run XLA: a hit would write nothing there.
    found = lookup(lowered, options, tgt, mesh, use=opts.cache and "xla_dump_to" not in options,
                   allocator_bytes=allocator)
    if found.record is not None:
        # The stored compile, with this call's time and the names and intent read from this trace.
        return CompileResult.from_record({**found.record, "compile_seconds": time.perf_counter() - t0,
                                          "cache": found.hit_info(), "tensor_names": _tensor_names(traced, opts.roles),
                                          "intent": _intent_record(traced)})
    started = time.time()
    try:
        with build_device_memory_size(allocator):
            compiled = lowered.compile(compiler_options=compile_options, device_assignment=device_assignment)
    except MemoryError:
        raise HloscopeError("the host ran out of memory while compiling", EXIT_OUT_OF_MEMORY) from None
    except Exception as e:
        msg = _first_line(e)
        code = EXIT_OUT_OF_MEMORY if "RESOURCE_EXHAUSTED" in msg and "host" in msg.lower() else EXIT_COMPILE_FAILED
        raise HloscopeError(f"XLA compile failed: {msg}", code) from None
    seconds = time.perf_counter() - t0
    optimized = jaxcompat.optimized_text(compiled, dump)
    platform = compiled_platform(compiled)
    if platform != "gpu":
        raise HloscopeError(f"the step was compiled for {platform}, not for {tgt.name}'s GPUs; give its "
                            "arguments NamedShardings over hloscope.compile.deviceless.make_mesh(target, devices) "
                            "or pass that mesh as mesh=.", EXIT_BAD_INPUT)
    _refuse_unseen_parameters(optimized)
    before = _dumped(dump, "*before_optimizations.txt", started)
    unoptimized = Path(before[-1]).read_text() if before else ""
    stats = compiled.memory_analysis()
    memory = CompileMemory()
    for k in XLA_MEMORY_FIELDS:
        memory[k] = int(getattr(stats, k, 0) or 0)  # type: ignore[literal-required]
    extra = _memory_texts(dump, started)
    # Raw figures only (XLA's, and the HBM compiled for): the derived ones (device allocation, host
    # total, report totals) are computed by hloscope.analysis.memory.compile_figures.
    memory["device_memory_size"] = tgt.device_memory_size
    if allocator is not None:
        memory["allocator_bytes"] = allocator
    # Read before the cache stores the result, so that a later hit carries this compile's log too.
    scheduler, log_files = scheduler_of(optimized)
    extra.update(log_files)
    made: dict[str, Any] = dict(
        optimized_hlo=optimized, unoptimized_hlo=unoptimized, memory=memory, options=options,
        versions=environment.versions(), target=tgt.name, devices=int(mesh.devices.size),
        mesh_shape={str(k): int(v) for k, v in mesh.shape.items()}, compile_seconds=seconds,
        device_memory_size=tgt.device_memory_size, extra_files=extra,
        tensor_names=_tensor_names(traced, opts.roles), intent=_intent(traced), scheduler=scheduler,
        topology=_topology_name(tgt, int(mesh.devices.size)))
    # The cache stores the result's record; the result returned carries the cache's word on it.
    return found.store(CompileResult(**made, compiled=compiled))


def _refuse_unseen_parameters(optimized: str) -> None:
    """An argument in ``unpinned_host`` memory is memory space 6 in the entry layout, and XLA
    reads it with no instruction of the schedule (measured: no copy, no S(6) buffer; the
    runtime moves it), so no transfer could be judged: refuse it in one line rather than
    report 0 transfers. (An unpinned_host *result* is written by a visible copy.)"""
    m = re.search(r"entry_computation_layout=\{\((.*?)\)->", optimized.split("\n", 1)[0])
    if not m:
        return
    unseen = re.findall(r"(\w+\[[\d,]*\])\{[^}]*:S\(6\)\}", m.group(1))
    if unseen:
        raise HloscopeError(f"{len(unseen)} argument(s) in memory_kind='unpinned_host' ({', '.join(unseen[:3])} per "
                            "device): XLA reads them with no instruction of the schedule (the runtime copies them), "
                            "so hloscope cannot judge that transfer; use memory_kind='pinned_host'", EXIT_BAD_INPUT)


def _topology_name(tgt: Target, devices: int) -> str:
    topo = _topology_for(tgt, devices)
    return f"{topo.name} ({topo.describe()})"


def _device_assignment(lowered: Any, mesh: Any, tgt: Target) -> tuple[Any, ...]:
    """The devices to compile ``lowered`` for: those its shardings name, else the first of ``mesh``.

    JAX computes the device list from concrete shardings met while lowering (None when
    all are abstract); a CPU device there is an error, and the backend the compile goes
    to is the compile-only client of the GPUs (JAX would take its default, the CPU).
    """
    lowering = lowered._lowering  # jax internals: the MeshComputation behind jax.stages.Lowered
    named = getattr(lowering, "_device_list", None)
    if named is not None:
        _check_devices(list(named), tgt)
        devices = tuple(named)
    else:
        n = int(lowering.compile_args.get("num_devices") or mesh.devices.size)
        devices = tuple(mesh.devices.flat)[:n]
    lowering.compile_args["backend"] = devices[0].client
    return devices


def _intent(traced: Any) -> Intent | None:
    """What the step asked to offload (``hloscope.compile.intent``); None if the jaxpr cannot be walked."""
    from hloscope.compile.intent import read_intent

    try:
        return read_intent(traced)
    except Exception:  # intent is read best effort: a jaxpr we cannot walk must not fail the compile
        return None


def _intent_record(traced: Any) -> dict[str, Any] | None:
    """:func:`_intent` as a result record holds it."""
    from hloscope.analysis.intent import intent_to_dict

    intent = _intent(traced)
    return intent_to_dict(intent) if intent is not None else None


def _tensor_names(traced: Any, roles: Mapping[str, str] | None) -> list[TensorName]:
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


def _is_jitted(fn: Any) -> bool:
    return hasattr(fn, "trace") and hasattr(fn, "lower")


def place_on_mesh(args: Sequence[Any], mesh: Any, target: Target | None = None,
                  replicate: bool = True) -> tuple[Any, ...]:
    """Every ``ShapeDtypeStruct`` leaf over ``mesh``: without a sharding, replicated; with a
    ``NamedSharding`` over the concrete mesh of the same devices, the same spec and memory
    kind over ``mesh`` (an ``AbstractMesh``). A leaf placed on CPU devices is an error."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    replicated = NamedSharding(mesh, PartitionSpec())

    def place(x: Any) -> Any:
        if isinstance(x, jax.ShapeDtypeStruct):
            if x.sharding is None:
                if not replicate:
                    return x
                return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=replicated)
            if target is not None:
                s = _abstract_sharding(x.sharding, mesh, target)
                if s is not x.sharding:
                    return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s)
        elif isinstance(x, jax.Array) and target is not None:
            _check_devices(x.devices(), target)
        return x

    return tuple(jax.tree.map(place, a) for a in args)
