"""Memory facts of a compiled step: what the device must hold, what XLA's peak counts, what is live at peak.

Contract: pure (no JAX), facts only. :func:`memory_facts` takes the ``memory``
figures the compile layer records (``compiled.memory_analysis()`` plus the keys in
docs/compile.md), the target, and the texts XLA dumps next to the optimized
module (parsed by ``hloscope.hlo.xla_dumps``), and returns a frozen
:class:`MemoryFacts`. All sizes are bytes, per device. The words and flags of the
advice are written by ``hloscope.render.memory_text``.

Two figures are kept apart on purpose (docs/memory.md):

- *device allocation* = arguments + temporaries + outputs not aliased to an
  argument, all in device memory (space 0). This is what HBM must hold.
- XLA's ``peak_memory_in_bytes``, which is arguments + non-aliased outputs + the
  peak of the *largest* heap-simulator trace, whatever its memory space: when the
  pinned-host (S(5)) heap is larger than the device heap it is that one, and the
  figure then counts host buffers and overstates HBM use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.opclass import COLLECTIVE_OPCODES, collective_kind
from hloscope.hlo.model import Instruction, Module
from hloscope.hlo.shape import HOST_MEMORY_SPACE, Shape, parse_shape
from hloscope.hlo.xla_dumps import (
    LiveAtPeak,
    XlaDumpTexts,
    parse_assigned_values,
    parse_live_at_peak,
    parse_value_positions,
    report_space_totals,
)
from hloscope.targets import DEFAULT_HOST_POOL_BYTES, Target

__all__ = ["Action", "CompileFigures", "LiveAtPeak", "Limit", "MemoryFacts", "NextStep", "PeakBuffer", "Pressure",
           "Role", "bytes_by_role", "compile_figures", "derive_figures", "facts_from_dumps", "memory_facts",
           "peak_buffers", "scheduler_memory_limit"]

#: XLA:GPU's default ``xla_gpu_memory_limit_slop_factor`` (percent); debug_options_flags.cc.
DEFAULT_SLOP_FACTOR = 95
#: Share of HBM XLA:GPU takes as the scheduler's base limit when the module config gives none.
SCHEDULER_BASE_PERCENT = 80
#: How close (bytes) XLA's peak must come to arguments + outputs + host temporaries to be
#: read as "the host heap was the largest trace" (XLA adds a few bytes of small buffers).
_HOST_TRACE_TOLERANCE = 1 << 20


class Role(StrEnum):
    """What a buffer live at peak is, in the user's terms."""

    ARGUMENT = "weights/optimizer state"  # an argument of the step (weights, optimizer moments, the batch)
    SAVED_ACTIVATIONS = "saved activations"  # layer-stacked residuals carried out of the forward loop
    LOOP_CARRIED = "backward loop state"  # carried through the backward loop: gradients, re-laid-out weights
    OFFLOADED = "offloaded activations (host)"  # pinned host (S(5)) buffer
    STAGING = "offload staging buffer"  # device side of a host transfer
    LOGITS = "logits"
    COLLECTIVE = "collective buffer"
    TEMPORARY = "temporary"


@dataclass(frozen=True)
class PeakBuffer:
    """One value live at XLA's peak point.

    position: XLA's name of the value, instruction plus shape index (``while.243{6}``).
    size_bytes: its size.
    shape: its shape as XLA prints it ("" when neither the assignment nor the module gives it).
    memory_space: 0 device, 5 pinned host.
    role: what it is (:class:`Role`).
    detail: the argument name, loop, collective or op name behind the role ("" if none).
    instruction: the defining instruction's name; computation: where it is ("" if unknown).
    source: ``file:line`` of the JAX code that produced it, when the module carries it.
    stacked_layers: the layer count of a layer stack (its leading dimension, a forward loop's
    trip count or one more for a peeled iteration); 0 when the value is not one.
    """

    position: str
    size_bytes: int
    shape: str
    memory_space: int
    role: Role
    detail: str = ""
    instruction: str = ""
    computation: str = ""
    source: str = ""
    stacked_layers: int = 0


@dataclass(frozen=True)
class Pressure:
    """Whether the schedule was produced over the memory limit, as facts.

    over_hbm: device allocation > HBM: the step would not run on this target.
    excess_bytes: device allocation - HBM (0 when it fits).
    scheduler_limit_bytes: XLA's scheduler memory limit,
        (HBM x 80% - arguments - non-aliased outputs) x slop / 100 (gpu_hlo_schedule.cc).
    over_scheduler_limit: device temporaries > that limit: the latency-hiding scheduler
        spent the schedule reducing memory, which closes overlap windows.
    slop_factor: the ``xla_gpu_memory_limit_slop_factor`` used for the limit (percent).
    """

    over_hbm: bool
    excess_bytes: int
    scheduler_limit_bytes: int
    over_scheduler_limit: bool
    slop_factor: int


class Action(StrEnum):
    """A change that lowers device memory or relaxes the scheduler (worded in ``render/memory_text.py``)."""

    OFFLOAD_SAVED = "offload-saved"  # offload the saved activations to host memory
    REMAT = "remat"  # recompute the saved activations instead of keeping them
    SMALLER_BATCH = "smaller-batch"  # a smaller per-device batch
    MORE_DEVICES = "more-devices"  # shard weights and optimizer state over more devices
    RAISE_SLOP = "raise-slop"  # let the scheduler use more memory


class Limit(StrEnum):
    """A memory limit the step is over."""

    HBM = "hbm"  # the device allocation is over HBM
    SCHEDULER = "scheduler"  # the temporaries are over the scheduler's memory limit


@dataclass(frozen=True)
class NextStep:
    """action: what to change; because: the role of the buffers it addresses, or the limit
    the step is over; offloaded: the names offloaded today (when offloading is on already)."""

    action: Action
    because: Role | Limit
    offloaded: tuple[str, ...] = ()


@dataclass(frozen=True)
class MemoryFacts:
    """Memory of one compiled step, per device, bytes.

    device_allocation_bytes: arguments + temporaries + non-aliased outputs in device memory.
    argument_bytes / temp_bytes / output_bytes / alias_bytes: XLA's device figures.
    xla_peak_bytes: XLA's ``peak_memory_in_bytes`` (0 when XLA gave none).
    host_bytes: host arguments + temporaries + outputs - aliases (pinned host, S(5)).
    host_argument_bytes / host_temp_bytes / host_output_bytes: XLA's host figures.
    report_space_bytes: memory-space color -> total bytes of XLA's memory-usage report.
    hbm_bytes: the target's (or the override's) HBM size.
    host_limit_bytes: host memory per GPU of the target (the ceiling for pinned-host
    buffers; 0: unknown). host_fits: host_bytes <= host_limit_bytes (None when unknown).
    fits: device allocation <= HBM, no slop; or <= ``allocator_bytes`` when the compile was given
    an allocator's share (``--memory-fraction``: JAX's allocator takes that much of the HBM).
    allocator_bytes: that share, bytes (0: none given; the compile-only default).
    host_pool_bytes: PJRT's pinned-host pool per process (``XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB``,
    64 GiB by default: ``GetGpuHostAllocator`` in XLA's se_gpu_pjrt_client); pinned-host
    buffers come from it, so a step whose host bytes exceed it fails to allocate however
    much memory the host has. host_pool_fits: host_bytes <= host_pool_bytes.
    xla_peak_counts_host: XLA's peak is arguments + outputs + the host heap, not the device heap
    (the figures that show it: ``xla_peak_io_bytes``, ``xla_peak_heap_bytes``, ``host_temp_bytes``
    against ``temp_bytes``).
    live_at_peak: XLA's live-range peak list, when the dump was given.
    host_live_at_peak_bytes: the host (S(5)) values in that list.
    top_buffers: the largest device values live at peak, largest first (never on-chip scratch).
    on_chip_bytes: memory-space color -> XLA's report total of the spaces that are the chip's own
    scratch, never its HBM (a TPU's VMEM ``S(1)`` and SMEM ``S(2)``; empty elsewhere or without a report).
    on_chip_live_at_peak_bytes: the on-chip values in the live-range peak list.
    pressure: see :class:`Pressure`.
    next_steps: at most three changes that address what fills the device.
    """

    device_allocation_bytes: int
    argument_bytes: int
    temp_bytes: int
    output_bytes: int
    alias_bytes: int
    xla_peak_bytes: int
    host_bytes: int
    host_argument_bytes: int
    host_temp_bytes: int
    host_output_bytes: int
    report_space_bytes: Mapping[int, int]
    hbm_bytes: int
    fits: bool
    xla_peak_counts_host: bool
    pressure: Pressure
    live_at_peak: LiveAtPeak | None = None
    host_live_at_peak_bytes: int = 0
    top_buffers: tuple[PeakBuffer, ...] = ()
    next_steps: tuple[NextStep, ...] = field(default_factory=tuple)
    host_limit_bytes: int = 0
    host_fits: bool | None = None
    allocator_bytes: int = 0
    host_pool_bytes: int = DEFAULT_HOST_POOL_BYTES
    on_chip_bytes: Mapping[int, int] = field(default_factory=dict)
    on_chip_live_at_peak_bytes: int = 0

    @property
    def live_at_peak_device_bytes(self) -> int:
        """The values live at XLA's live-range peak in device memory (HBM): neither host buffers nor
        on-chip scratch (0 without the dump)."""
        if self.live_at_peak is None:
            return 0
        return self.live_at_peak.total_bytes - self.host_live_at_peak_bytes - self.on_chip_live_at_peak_bytes

    @property
    def host_pool_fits(self) -> bool | None:
        """The host bytes of one GPU fit in PJRT's pinned-host pool (one process per GPU: the least a
        process asks for; a process driving n GPUs asks for n times as much); None where no pool is
        known (``host_pool_bytes`` 0: a TPU, whose runtime publishes no pinned-host limit)."""
        if not self.host_pool_bytes:
            return None
        return self.host_bytes <= self.host_pool_bytes

    @property
    def xla_peak_io_bytes(self) -> int:
        """The arguments and outputs not aliased to one, in XLA's peak (device figures)."""
        return self.argument_bytes + self.output_bytes - self.alias_bytes

    @property
    def xla_peak_heap_bytes(self) -> int:
        """XLA's peak less its arguments and outputs: the peak of the heap trace it took."""
        return self.xla_peak_bytes - self.xla_peak_io_bytes

    @property
    def limit_bytes(self) -> int:
        """What the step must fit in: the allocator's share of the HBM when the compile was given
        one (``--memory-fraction``), else the HBM."""
        return self.allocator_bytes or self.hbm_bytes


# ---- classification ---------------------------------------------------------------------------

def _split_position(position: str) -> tuple[str, tuple[int, ...]]:
    m = re.fullmatch(r"(.+?)\{([\d,]*)\}", position)
    if not m:
        return position, ()
    return m.group(1), tuple(int(i) for i in m.group(2).split(",") if i)


def _subshape(shape: Shape, index: tuple[int, ...]) -> Shape | None:
    s: Shape | None = shape
    for i in index:
        s = s.tuple_element(i) if s is not None else None
    return s


class _PeakIndex:
    """The module's shared :class:`ModuleIndex`, plus the trip counts of forward-pass loops
    (and +1 for a peeled iteration), which tell a saved layer stack by its leading dimension."""

    def __init__(self, index: ModuleIndex) -> None:
        self.index = index
        self.module = index.module
        self.by_name = self.index.instructions_by_name
        self.loop_of_body = self.index.loop_of_body
        self.wrapped_op = self.index.wrapped_op
        self.forward_trips: set[int] = set()
        for w in self.index.loops:
            trips = index.trip_count(w)
            if trips and "transpose(" not in w.metadata.get("op_name", ""):
                self.forward_trips.update((trips, trips + 1))


def _collective(ins: Instruction, index: _PeakIndex) -> str:
    """The collective ``ins`` performs, itself or as the root of the fusion / async op it wraps ("" if none)."""
    kind = collective_kind(ins)
    root = index.wrapped_op(ins) if not kind and ins.opcode in ("async-start", "async-done", "fusion") else None
    return collective_kind(root) if root is not None else kind


def _collective_by_name(name: str) -> str:
    """The collective an instruction named like XLA names one (``reduce-scatter.4``, ``all-gather-start.1``)."""
    return next((op for op in COLLECTIVE_OPCODES if name.startswith(op) and name[len(op):][:1] in ("", ".", "-")),
                "")


def _reads_host(ins: Instruction, index: _PeakIndex) -> bool:
    """A device value computed from a host operand: the device side of a H->D transfer
    (a dynamic-slice or copy out of an S(5) buffer, possibly wrapped in a fusion)."""
    comp = index.module.computations.get(ins.computation)
    if comp is None or ins.opcode in ("while", "tuple", "parameter", "call", "conditional"):
        return False
    return any(op in comp.by_name and comp.by_name[op].shape.in_memory_space(HOST_MEMORY_SPACE)
               for op in ins.operands)


_Classified = tuple[Role, str, str, str, str, int]


def _classify(position: str, space: int, shape: Shape | None, index: _PeakIndex | None,
              vocab_size: int | None) -> _Classified:
    """(role, detail, instruction, computation, source, stacked layers) of one live value."""
    name, idx = _split_position(position)
    if space == HOST_MEMORY_SPACE:
        return Role.OFFLOADED, "", name, "", "", 0
    ins = index.by_name.get(name) if index is not None else None
    if ins is None or index is None:
        # compiled.as_text() prints async collectives in their sugared form, so the op inside
        # (``reduce-scatter.4``) is named in the dump but not in the module: go by its name.
        if _collective_by_name(name):
            return Role.COLLECTIVE, name.rsplit(".", 1)[0], name, "", "", 0
        if vocab_size and shape is not None and shape.dims and shape.dims[-1] == vocab_size:
            return Role.LOGITS, "", name, "", "", 0
        return Role.TEMPORARY, "", name, "", "", 0
    loc = index.module.source_location(ins)
    source = f"{loc.file}:{loc.line}" if loc else ""
    op_name = ins.metadata.get("op_name", "").replace("\\'", "'")
    comp = ins.computation
    where = (name, comp, source, 0)
    if ins.opcode == "parameter" and comp == index.module.entry_name:
        return (Role.ARGUMENT, op_name, *where)
    if _collective(ins, index):
        return (Role.COLLECTIVE, ins.opcode if not ins.wrapped_opcode else ins.wrapped_opcode, *where)
    if _reads_host(ins, index):
        return (Role.STAGING, op_name, *where)
    loop = ins if ins.opcode == "while" else (index.loop_of_body.get(comp) if ins.opcode == "parameter" else None)
    if loop is not None and idx:
        trips = index.index.trip_count(loop)
        loop_op = loop.metadata.get("op_name", "")
        stacked = shape is not None and trips is not None and bool(shape.dims) and shape.dims[0] in (trips, trips + 1)
        layers = shape.dims[0] if stacked and shape is not None else 0
        if "transpose(" not in loop_op and stacked:
            return (Role.SAVED_ACTIVATIONS, loop.name, name, comp, source, layers)
        if "transpose(" in loop_op:
            return (Role.LOOP_CARRIED, loop.name, name, comp, source, layers)
    # A layer stack written slice by slice in the forward pass (XLA may fuse the whole
    # stack into one buffer outside the loop tuple).
    if (op_name.endswith("dynamic_update_slice") and "transpose(" not in op_name and shape is not None
            and shape.dims and shape.dims[0] in index.forward_trips):
        return (Role.SAVED_ACTIVATIONS, "", name, comp, source, shape.dims[0])
    # Logits are computed once, after the layer loop: only outside loop bodies.
    if vocab_size and shape is not None and shape.dims and shape.dims[-1] == vocab_size and "/while/" not in op_name:
        return (Role.LOGITS, op_name, *where)
    return (Role.TEMPORARY, op_name.rsplit("/", 1)[-1], *where)


def _named_position(position: str, positions: Mapping[str, tuple[str, ...]], index: _PeakIndex | None) -> str:
    """``position``, or where else its value is that the module names: the value of an op a sugared
    async op wraps (``loop_dynamic_update_slice_fusion.10`` inside ``fusion-start.7``, which
    compiled.as_text() does not name) is also the async-done's (``fusion-done.7{}``). A whole-output
    position is preferred to a tuple element's ("" if none is named)."""
    if index is None or _split_position(position)[0] in index.by_name:
        return position
    named = [p for p in positions.get(position, ()) if _split_position(p)[0] in index.by_name]
    return min(named, key=lambda p: bool(_split_position(p)[1]), default="")


def peak_buffers(live: LiveAtPeak, assigned: Mapping[str, tuple[int, str]],
                 module: ModuleIndex | Module | None = None, vocab_size: int | None = None,
                 positions: Mapping[str, tuple[str, ...]] | None = None) -> list[PeakBuffer]:
    """Every value of ``live`` with its memory space, shape and role, in XLA's order. ``module``: the
    optimized module's shared :class:`ModuleIndex` (or the module, indexed here). ``positions``: each
    value's other positions (:func:`~hloscope.hlo.xla_dumps.parse_value_positions`), which name the
    value of an op the module's sugared async ops hide."""
    if isinstance(module, Module):
        module = ModuleIndex(module)
    index = _PeakIndex(module) if module is not None else None
    out: list[PeakBuffer] = []
    for position, size in live.values:
        space, shape_text = assigned.get(position, (-1, ""))
        shape: Shape | None = None
        if shape_text:
            try:
                shape = parse_shape(shape_text)
            except ValueError:
                shape = None
        if index is not None and (space < 0 or shape is None):
            name, idx = _split_position(position)
            ins = index.by_name.get(name)
            if ins is not None:
                shape = _subshape(ins.shape, idx)
                if shape is not None and space < 0:
                    space = HOST_MEMORY_SPACE if shape.in_memory_space(HOST_MEMORY_SPACE) else 0
        space = max(space, 0)
        role, detail, ins_name, comp, source, layers = _classify(position, space, shape, index, vocab_size)
        if role is Role.TEMPORARY and not comp and positions:
            # Not an instruction of the module and not a collective by its name: read it where the
            # module names its value.
            named = _named_position(position, positions, index)
            if named and named != position:
                role, detail, ins_name, comp, source, layers = _classify(named, space, shape, index, vocab_size)
        out.append(PeakBuffer(position, size, shape_text or (str(shape) if shape is not None else ""), space,
                              role, detail, ins_name, comp, source, layers))
    return out


# ---- the facts --------------------------------------------------------------------------------

def scheduler_memory_limit(hbm_bytes: int, io_bytes: int, slop_factor: int = DEFAULT_SLOP_FACTOR,
                           allocator_bytes: int = 0) -> int:
    """XLA:GPU's scheduler memory limit: (base - inputs and outputs) x slop / 100.

    From ``GetSchedulerMemoryLimit`` in xla/service/gpu/gpu_hlo_schedule.cc: the base is the
    module config's ``device_memory_size`` when set (``allocator_bytes``: on a GPU jaxlib
    sets it to its allocator's limit), else 80% of the HBM (a compile-only device: no
    allocator, so jaxlib sets none).
    """
    base = allocator_bytes or hbm_bytes * SCHEDULER_BASE_PERCENT // 100
    return (base - io_bytes) * slop_factor // 100


def _xla_peak_counts_host(m: Mapping[str, int]) -> bool:
    """XLA's peak is arguments and outputs plus the host (S(5)) heap: the host temporaries are
    larger than the device ones and the peak's heap is theirs, within a few small buffers."""
    peak = m.get("peak_memory_in_bytes", 0) if m.get("peak_memory_from_xla", 1) else 0
    if not peak:
        return False
    io = m.get("argument_size_in_bytes", 0) + m.get("output_size_in_bytes", 0) - m.get("alias_size_in_bytes", 0)
    host_temp = m.get("host_temp_size_in_bytes", 0)
    return host_temp > m.get("temp_size_in_bytes", 0) and abs(peak - io - host_temp) <= _HOST_TRACE_TOLERANCE


def _next_steps(fits: bool, pressure: Pressure, top: tuple[PeakBuffer, ...],
                offloaded_names: Sequence[str] = ()) -> tuple[NextStep, ...]:
    steps: list[NextStep] = []
    if not fits:
        roles = [b.role for b in top]
        if Role.SAVED_ACTIVATIONS in roles:
            # With offloading on already, what stays on device is saved under other names (or none).
            steps.append(NextStep(Action.OFFLOAD_SAVED, Role.SAVED_ACTIVATIONS, tuple(offloaded_names)))
            steps.append(NextStep(Action.REMAT, Role.SAVED_ACTIVATIONS))
        if Role.ARGUMENT in roles:
            steps.append(NextStep(Action.MORE_DEVICES, Role.ARGUMENT))
        steps.append(NextStep(Action.SMALLER_BATCH, Limit.HBM))
    elif pressure.over_scheduler_limit:
        steps.append(NextStep(Action.RAISE_SLOP, Limit.SCHEDULER))
        steps.append(NextStep(Action.SMALLER_BATCH, Limit.SCHEDULER))
    return tuple(steps[:3])


def memory_facts(memory: Mapping[str, int], target: Target, report_text: str | None = None,
                 buffer_assignment: str | None = None, module: ModuleIndex | Module | None = None,
                 live_range: str | None = None, *, hbm_bytes: int | None = None,
                 slop_factor: int = DEFAULT_SLOP_FACTOR, vocab_size: int | None = None,
                 top: int = 8, offloaded_names: Sequence[str] = (),
                 host_pool_bytes: int = DEFAULT_HOST_POOL_BYTES,
                 figures: CompileFigures | None = None, on_chip: frozenset[int] = frozenset()) -> MemoryFacts:
    """Build :class:`MemoryFacts` from the compile layer's ``memory`` dict and XLA's dumps.

    ``hbm_bytes`` overrides the target's HBM (defaults to ``memory["device_memory_size"]``,
    then the target's). ``live_range`` is a ``*-live-range.txt`` (or its peak section);
    ``buffer_assignment`` gives each live value's memory space and shape; ``module`` (the
    optimized module, or its shared :class:`ModuleIndex`) gives roles, instructions and source
    lines; ``vocab_size`` lets a ``[..., vocab]`` value be called logits; ``offloaded_names``:
    what the step offloads today (for the advice). ``figures``: the compile's figures as its
    loader derived them (:func:`derive_figures` of ``memory`` and the same report), else derived here.
    ``on_chip``: the memory spaces that are the chip's scratch, not HBM (a TPU's VMEM and SMEM:
    ``PlatformBackend.on_chip_spaces``): never among the largest device buffers.
    """
    g = memory.get
    args, temp, out, alias = (g("argument_size_in_bytes", 0), g("temp_size_in_bytes", 0),
                              g("output_size_in_bytes", 0), g("alias_size_in_bytes", 0))
    host_args, host_temp, host_out = (g("host_argument_size_in_bytes", 0), g("host_temp_size_in_bytes", 0),
                                      g("host_output_size_in_bytes", 0))
    derived = figures if figures is not None else derive_figures(memory)
    device_allocation, host = derived.device_allocation_bytes, derived.host_total_bytes
    hbm = hbm_bytes or g("device_memory_size", 0) or target.memory_per_device
    allocator = g("allocator_bytes", 0)
    room = allocator or hbm  # what the step must fit in (MemoryFacts.limit_bytes)
    fits = device_allocation <= room
    counts_host = _xla_peak_counts_host(memory)
    io = args + out - alias + host_args + host_out
    limit = scheduler_memory_limit(hbm, io, slop_factor, allocator)
    pressure = Pressure(over_hbm=not fits, excess_bytes=max(0, device_allocation - room),
                        scheduler_limit_bytes=limit, over_scheduler_limit=temp > limit, slop_factor=slop_factor)
    live = parse_live_at_peak(live_range) if live_range else None
    buffers: list[PeakBuffer] = []
    if live is not None:
        buffers = peak_buffers(live, parse_assigned_values(buffer_assignment or ""), module, vocab_size,
                               parse_value_positions(buffer_assignment or ""))
    device = sorted((b for b in buffers if b.memory_space != HOST_MEMORY_SPACE and b.memory_space not in on_chip),
                    key=lambda b: -b.size_bytes)
    spaces = (dict(derived.report_space_bytes) if derived.has_report
              else report_space_totals(report_text) if report_text else {})
    top_buffers = tuple(device[:top])
    return MemoryFacts(
        device_allocation_bytes=device_allocation, argument_bytes=args, temp_bytes=temp, output_bytes=out,
        alias_bytes=alias, xla_peak_bytes=g("peak_memory_in_bytes", 0) if g("peak_memory_from_xla", 1) else 0,
        host_bytes=host, host_argument_bytes=host_args, host_temp_bytes=host_temp, host_output_bytes=host_out,
        report_space_bytes=spaces,
        hbm_bytes=hbm, fits=fits, xla_peak_counts_host=counts_host, pressure=pressure,
        live_at_peak=live,
        host_live_at_peak_bytes=sum(b.size_bytes for b in buffers if b.memory_space == HOST_MEMORY_SPACE),
        top_buffers=top_buffers, next_steps=_next_steps(fits, pressure, top_buffers, offloaded_names),
        host_limit_bytes=target.host_memory_per_device,
        host_fits=(host <= target.host_memory_per_device) if target.host_memory_per_device else None,
        allocator_bytes=allocator, host_pool_bytes=host_pool_bytes,
        on_chip_bytes={c: n for c, n in sorted(spaces.items()) if c in on_chip},
        on_chip_live_at_peak_bytes=sum(b.size_bytes for b in buffers if b.memory_space in on_chip),
    )


@dataclass(frozen=True)
class CompileFigures:
    """The memory figures of one compile, derived once from the raw ones the compile layer records
    (``compiled.memory_analysis()`` and ``device_memory_size``; docs/compile.md), bytes.

    raw: the recorded figures (name -> bytes; already-derived names in it are recomputed, not
    trusted). device_allocation_bytes: arguments + outputs + temporaries - aliased, in device
    memory. host_total_bytes: the same in host memory. peak_from_xla: XLA gave a peak
    (``peak_memory_in_bytes``); else the peak is the device allocation. report_space_bytes: XLA's
    memory-usage report's totals per memory space (empty without the report).
    """

    raw: Mapping[str, int]
    device_allocation_bytes: int
    host_total_bytes: int
    peak_from_xla: bool
    report_space_bytes: Mapping[int, int] = field(default_factory=dict)
    has_report: bool = False

    @property
    def peak_bytes(self) -> int:
        """XLA's ``peak_memory_in_bytes`` when it gave one, else the device allocation."""
        return self.raw.get("peak_memory_in_bytes", 0) if self.peak_from_xla else self.device_allocation_bytes

    def as_dict(self) -> dict[str, int]:
        """The figures docs/compile.md lists (manifest and report ``compile.memory``): the raw ones,
        then ``report_device_total_bytes`` / ``report_host_total_bytes`` (with XLA's report),
        ``device_allocation_bytes``, ``peak_memory_from_xla`` (``peak_memory_in_bytes`` is the device
        allocation when 0) and ``host_total_bytes``."""
        out = dict(self.raw)
        if self.has_report:
            out["report_device_total_bytes"] = self.report_space_bytes.get(0, 0)
            out["report_host_total_bytes"] = self.report_space_bytes.get(HOST_MEMORY_SPACE, 0)
        out["device_allocation_bytes"] = self.device_allocation_bytes
        out["peak_memory_from_xla"] = int(self.peak_from_xla)
        if not self.peak_from_xla:
            out["peak_memory_in_bytes"] = self.device_allocation_bytes
        out["host_total_bytes"] = self.host_total_bytes
        return out


def derive_figures(raw: Mapping[str, int], dumps: XlaDumpTexts | None = None) -> CompileFigures:
    """:class:`CompileFigures` from a compile's raw figures and, when given, XLA's memory-usage report."""
    g = raw.get
    report = dumps.memory_report if dumps is not None else None
    return CompileFigures(
        raw=dict(raw),
        device_allocation_bytes=(g("argument_size_in_bytes", 0) + g("output_size_in_bytes", 0)
                                 + g("temp_size_in_bytes", 0) - g("alias_size_in_bytes", 0)),
        host_total_bytes=(g("host_argument_size_in_bytes", 0) + g("host_output_size_in_bytes", 0)
                          + g("host_temp_size_in_bytes", 0) - g("host_alias_size_in_bytes", 0)),
        peak_from_xla=bool(g("peak_memory_from_xla", int(bool(g("peak_memory_in_bytes", 0))))),
        report_space_bytes=report_space_totals(report) if report else {},
        has_report=bool(report),
    )


def compile_figures(raw: Mapping[str, int], dumps: XlaDumpTexts | None = None) -> dict[str, int]:
    """``derive_figures(raw, dumps).as_dict()``: the figures docs/compile.md lists for a compile."""
    return derive_figures(raw, dumps).as_dict()


def facts_from_dumps(figures: Mapping[str, int], target: Target, dumps: XlaDumpTexts,
                     index: ModuleIndex | None, vocab_size: int | None = None,
                     offloaded_names: Sequence[str] = (),
                     host_pool_bytes: int = DEFAULT_HOST_POOL_BYTES,
                     derived: CompileFigures | None = None, on_chip: frozenset[int] = frozenset()) -> MemoryFacts:
    """:func:`memory_facts` from a compile's raw figures and XLA's dump texts (the pipeline's call).
    ``derived``: the figures derived once from them and ``dumps`` (:func:`derive_figures`).
    ``on_chip``: the platform's on-chip memory spaces (never HBM)."""
    return memory_facts(figures, target, dumps.memory_report, dumps.buffer_assignment, index, dumps.live_range,
                        hbm_bytes=figures.get("device_memory_size") or None, vocab_size=vocab_size,
                        offloaded_names=offloaded_names, host_pool_bytes=host_pool_bytes,
                        figures=derived if derived is not None else derive_figures(figures, dumps), on_chip=on_chip)


def bytes_by_role(buffers: tuple[PeakBuffer, ...] | list[PeakBuffer]) -> dict[Role, int]:
    """Total bytes per role, largest first."""
    out: dict[Role, int] = {}
    for b in buffers:
        out[b.role] = out.get(b.role, 0) + b.size_bytes
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))
