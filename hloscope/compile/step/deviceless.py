"""Compile a JAX step for a GPU target with no GPU: the orchestration of one compile.

``compile_step(request, fn, args, options)`` lowers and compiles ``fn`` for the
compile-only GPUs a :class:`~hloscope.request.CompileRequest` names and returns
a frozen :class:`CompileResult` with the scheduled HLO, the unoptimized HLO, memory
figures and the exact options used; :class:`StepOptions` says how the step is traced
(mesh, donations, shardings) and reported. Nothing is allocated: arguments are
``jax.ShapeDtypeStruct``.

Each other job of a compile is a module of its own, and this one re-exports their public
names (the documented home of ``make_mesh``, ``device_mesh``, ``parse_flag``,
``allocator_bytes`` ...): the mesh and shardings (``hloscope.compile.step.mesh``), XLA options and
the dump folder (``xla_options``), the memory texts XLA dumps (``memory_dumps``), the device
memory XLA plans for (``device_memory``), one-line failures (``failures``); what differs
between JAX versions is in ``jaxcompat``.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from hloscope.analysis.inputs import ScheduleRun
from hloscope.analysis.intent.manifest import intent_to_dict
from hloscope.analysis.intent.model import with_preset
from hloscope.analysis.structure.name_records import NameRecord
from hloscope.compile.cuda.device_memory import allocator_bytes as allocator_bytes
from hloscope.compile.cuda.device_memory import build_device_memory_size as build_device_memory_size
from hloscope.compile.cuda.device_memory import with_device_memory_size as with_device_memory_size
from hloscope.compile.cuda.device_memory import with_memory as with_memory
from hloscope.compile.cuda.scheduler import LHS_FLAG as LHS_FLAG
from hloscope.compile.result import XLA_MEMORY_FIELDS, CompileMemory
from hloscope.compile.result import CompileResult as CompileResult
from hloscope.compile.seam import environment, jaxcompat
from hloscope.compile.seam.intent import read_intent
from hloscope.compile.seam.names import tensor_names
from hloscope.compile.seam.xla_options import PIPELINED_OFFLOAD_FLAG as PIPELINED_OFFLOAD_FLAG
from hloscope.compile.seam.xla_options import dump_folder, dumped, refuse_missing_files
from hloscope.compile.seam.xla_options import parse_flag as parse_flag
from hloscope.compile.step.cache import lookup
from hloscope.compile.step.failures import first_line, memory_kind_error, refuse_unseen_parameters, xla_error
from hloscope.compile.step.memory_dumps import memory_texts
from hloscope.compile.step.mesh import abstract_tree, check_devices, devices_for
from hloscope.compile.step.mesh import device_mesh as device_mesh
from hloscope.compile.step.mesh import make_mesh as make_mesh
from hloscope.compile.step.mesh import place_on_mesh as place_on_mesh
from hloscope.compile.step.mesh import topology_for as topology_for
from hloscope.compile.step.rooms import AnyTarget, Room, resolve_target, room_for
from hloscope.errors import EXIT_BAD_INPUT, EXIT_TRACE_FAILED, HloscopeError
from hloscope.request import CompileRequest
from hloscope.targets import Target

if TYPE_CHECKING:
    from jax import Device
    from jax.sharding import AbstractMesh, Mesh
    from jax.stages import Compiled, Lowered, Traced

    from hloscope.analysis.intent.model import Intent, Preset


#: Phases of one compile, in order, as ``compile_step(phase=...)`` reports them; the
#: caller adds its own after (analysis, writing artifacts).
PHASE_STARTING = "starting JAX"

PHASE_TRACING = "tracing"

PHASE_LOWERING = "lowering"

PHASE_XLA = "XLA compile"


PHASES = (PHASE_STARTING, PHASE_TRACING, PHASE_LOWERING, PHASE_XLA)


def _no_phase(name: str) -> None:
    return None


@dataclass(frozen=True)
class StepOptions:
    """How one step is traced and reported, beside the :class:`CompileRequest` that says what to compile for.

    mesh: the mesh the step's shardings are written over (:func:`make_mesh`); when given it
    decides the devices (its shape, and for an ``AbstractMesh`` its GPU, which must be the
    request's target's). mesh_axes: without ``mesh``, the axes of the mesh made here
    ([(name, size), ...], default one axis ``("fsdp", devices)``). donate_argnums /
    in_shardings / out_shardings: as for ``jax.jit`` (memory kinds kept). roles: checkpoint
    name -> what the tensor is ("Q projection"), for the report. cache: look the lowered
    module up in the compile cache (``hloscope.compile.step.cache``) and store what XLA emits (a
    hit has ``compiled=None``). phase: called with each phase's name as it starts
    (:data:`PHASES`). target: the :class:`~hloscope.targets.Target` itself when the caller
    holds one that its name does not find (a Target built in Python); its name must be the
    request's. preset: the framework preset whose list built the step's checkpoint policies
    (MaxText's ``remat_policy``), recorded in the step's intent as it is read.
    """

    mesh: Mesh | AbstractMesh | None = None
    mesh_axes: Sequence[tuple[str, int]] | None = None
    donate_argnums: tuple[int, ...] = ()
    in_shardings: Any = None
    out_shardings: Any = None
    roles: Mapping[str, str] | None = None
    cache: bool = False
    phase: Callable[[str], None] | None = None
    target: AnyTarget | None = None
    preset: Preset | None = None


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
    # lazy: jax is slow to import; only when tracing or compiling
    import jax

    if opts.target is not None and opts.target.name != request.target:
        raise ValueError(f"StepOptions.target is {opts.target.name}, the request's target is {request.target}")
    found_target = opts.target or resolve_target(request.target)
    lay = request.layout
    tgt, allocator = room_for(found_target, lay).planned_memory(request)
    room = room_for(tgt, lay)
    chosen = request.scheduler
    concrete = (device_mesh(tgt, request.devices, opts.mesh_axes, lay.topology, lay.slices, lay.per_core)
                if opts.mesh is None else devices_for(opts.mesh, tgt, lay))
    abstract = concrete.abstract_mesh
    if callable(args) and not isinstance(args, jax.ShapeDtypeStruct):
        args = tuple(args(abstract))
    # A jax.jit function's own in_shardings place its unsharded arguments.
    placed = place_on_mesh(tuple(args), abstract, tgt, replicate=not _is_jitted(fn))
    options_used = room.options(request, dict(parse_flag(f) for f in request.xla_flags))
    refuse_missing_files(options_used)
    dump = dump_folder(options_used)
    compile_options = room.compile_options(options_used, dump)
    t0 = time.perf_counter()
    try:
        with environment.capture_native_stderr() as log:
            return _compile(fn, placed, tgt, room, concrete, options_used, compile_options, opts, dump, t0,
                            lambda hlo: room.read_scheduler(hlo, log.peek(), chosen, options_used), allocator,
                            room.topology_label(int(concrete.devices.size)),
                            room.topology_key(int(concrete.devices.size)))
    finally:
        if dump != options_used.get("xla_dump_to"):
            shutil.rmtree(dump, ignore_errors=True)


def _compile(fn: Callable[..., Any], args: tuple[Any, ...], tgt: Target, room: Room, mesh: Mesh,
             options: dict[str, Any], compile_options: dict[str, Any], opts: StepOptions, dump: str, t0: float,
             scheduler_of: Callable[[str], tuple[ScheduleRun, dict[str, str]]],
             allocator: int | None, topology: str, topology_key: dict[str, object]) -> CompileResult:
    # lazy: jax is slow to import; only when tracing or compiling
    import jax

    say = opts.phase or _no_phase
    shardings = {k: v for k, v in (("in_shardings", opts.in_shardings), ("out_shardings", opts.out_shardings))
                 if v is not None}
    shardings = {k: abstract_tree(v, mesh.abstract_mesh, tgt) for k, v in shardings.items()}
    try:
        with room.tracing():
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
            # Lowered for the platform against the abstract mesh: memory kinds stay on the shardings
            # (compile-only GPUs have no memories to check them against).
            lowered = traced.lower(lowering_platforms=(room.lowering_platform,))
    except HloscopeError:
        raise
    except Exception as e:
        raise memory_kind_error(e) or HloscopeError(
            f"tracing {getattr(fn, '__name__', fn)} failed: {type(e).__name__}: {first_line(e)}",
            EXIT_TRACE_FAILED) from None
    device_assignment = _device_assignment(lowered, mesh, tgt)
    say(PHASE_XLA)

    # A compile that dumps into the user's folder must run XLA: a hit would write nothing there.
    found = lookup(lowered, options, tgt, mesh, use=opts.cache and "xla_dump_to" not in options,
                   allocator_bytes=allocator, room_key=topology_key, device_memory_size=room.device_memory_size())
    if found.record is not None:
        # The stored compile, with this call's time and the names and intent read from this trace.
        return CompileResult.from_record({**found.record, "compile_seconds": time.perf_counter() - t0,
                                          "cache": found.hit_info(),
                                          "tensor_names": [t.to_json() for t in _tensor_names(traced, opts.roles)],
                                          "intent": _intent_record(traced, opts.preset)})
    started = time.time()
    try:
        with build_device_memory_size(allocator):
            compiled = lowered.compile(compiler_options=compile_options, device_assignment=device_assignment)
    except Exception as e:  # MemoryError included
        raise xla_error(e) from None
    seconds = time.perf_counter() - t0
    optimized = jaxcompat.optimized_text(compiled, dump)
    platform = compiled_platform(compiled, room.device_platforms, room.family)
    if platform != room.family:
        raise HloscopeError(f"the step was compiled for {platform}, not for {tgt.name}'s {room.family.upper()}s; "
                            "give its arguments NamedShardings over hloscope.make_mesh(target, "
                            "devices) or pass that mesh as mesh=.", EXIT_BAD_INPUT)
    refuse_unseen_parameters(optimized)
    before = dumped(dump, "*before_optimizations.txt", started)
    unoptimized = Path(before[-1]).read_text() if before else ""
    stats = compiled.memory_analysis()
    memory = CompileMemory()
    for k in XLA_MEMORY_FIELDS:
        memory[k] = int(getattr(stats, k, 0) or 0)  # type: ignore[literal-required]
    extra = memory_texts(dump, started)
    # Raw figures only (XLA's, and the HBM compiled for): the derived ones (device allocation, host
    # total, report totals) are computed by hloscope.analysis.memory.compile_figures.
    memory["device_memory_size"] = room.device_memory_size()
    if allocator is not None:
        memory["allocator_bytes"] = allocator
    # Read before the cache stores the result, so that a later hit carries this compile's log too.
    scheduler, log_files = scheduler_of(optimized)
    extra.update(log_files)
    made: dict[str, Any] = dict(
        optimized_hlo=optimized, unoptimized_hlo=unoptimized, memory=memory, options=options,
        versions=environment.versions(), target=tgt.name, devices=int(mesh.devices.size),
        mesh_shape={str(k): int(v) for k, v in mesh.shape.items()}, compile_seconds=seconds,
        device_memory_size=room.device_memory_size(), extra_files=extra,
        tensor_names=tuple(_tensor_names(traced, opts.roles)), intent=_intent(traced, opts.preset), scheduler=scheduler,
        topology=topology)
    # The cache stores the result's record; the result returned carries the cache's word on it.
    return found.store(CompileResult(**made, compiled=compiled))


def _device_assignment(lowered: Lowered, mesh: Mesh, tgt: Target) -> tuple[Device, ...]:
    """The devices to compile ``lowered`` for: those its shardings name, else the first of ``mesh``.

    JAX computes the device list from concrete shardings met while lowering (None when
    all are abstract); a CPU device there is an error, and the backend the compile goes
    to is the compile-only client of the GPUs (JAX would take its default, the CPU).
    """
    named, n = jaxcompat.lowered_devices(lowered)
    if named is not None:
        check_devices(named, tgt)
        devices = tuple(named)
    else:
        devices = tuple(mesh.devices.flat)[:n or mesh.devices.size]
    jaxcompat.compile_for_backend(lowered, devices[0].client)
    return devices


def _intent(traced: Traced, preset: Preset | None = None) -> Intent | None:
    """What the step asked to offload (``hloscope.compile.seam.intent``), its policies marked as ``preset``'s
    when given; None if the jaxpr cannot be walked."""
    try:
        intent = read_intent(traced)
    except Exception:  # intent is read best effort: a jaxpr we cannot walk must not fail the compile
        return None
    return with_preset(intent, preset) if intent is not None and preset is not None else intent


def _intent_record(traced: Traced, preset: Preset | None = None) -> dict[str, Any] | None:
    """:func:`_intent` as a result record holds it."""
    intent = _intent(traced, preset)
    return intent_to_dict(intent) if intent is not None else None


def _tensor_names(traced: Traced, roles: Mapping[str, str] | None) -> list[NameRecord]:
    try:
        return tensor_names(traced.jaxpr, roles)
    except Exception:  # names are a convenience: a jaxpr we cannot walk must not fail the compile
        return []


def compiled_platform(compiled: Compiled, expected: frozenset[str] = frozenset({"cuda", "gpu", "rocm"}),
                      family: str = "gpu") -> str:
    """The platform of the devices ``compiled`` runs on: ``family`` for the compile-only devices
    of the room (whose platforms are ``expected``: the CUDA plugin calls its GPUs ``cuda``), else
    what JAX calls it (``cpu``)."""
    # lazy: jax is slow to import; only when tracing or compiling
    import jax

    shardings = jax.tree.leaves(compiled.input_shardings) + jax.tree.leaves(compiled.output_shardings)
    platforms = {d.platform for s in shardings for d in getattr(s, "device_set", ())}
    if not platforms or platforms <= expected:
        return family
    return ", ".join(sorted(platforms - expected))


def _is_jitted(fn: Any) -> bool:
    return hasattr(fn, "trace") and hasattr(fn, "lower")
