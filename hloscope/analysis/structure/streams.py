"""The execution stream XLA:GPU gives each async start, as the XLA of the jaxlib that compiled it does.

Pass: ``assign_execution_streams(index, model=...) -> StreamAssignment``; ``stream_model(jaxlib,
module)`` picks the model.

Two versions of ``xla/service/gpu/execution_stream_assignment.cc`` are modelled.

:data:`XLA_0_10` follows XLA commit ``5a9e73cbd92530cac2ac36f4736a774b2412afe2`` (the
``XLA_COMMIT`` of jax-v0.10.2's ``third_party/xla/revision.bzl``; the cuda plugin of jaxlib
0.10.2 carries that file's log strings, ``Start new %v execution scope``, and its two scope
kinds): computations are visited breadth first from the entry (``call``, ``conditional`` and
``while`` add their callees; a while's body before its condition, XLA's called-computation
order); inside each, instructions in XLA's post order (``MakeInstructionPostOrder``: a
depth-first walk from each instruction without users, operands first in order, control
predecessors before them). Every *scope start* gets a stream:

- a ``copy-start``, or an ``async-start`` wrapping anything but a collective: the next
  of ``compute_streams`` compute streams (one counter over the whole module, modulo 4:
  XLA's default, which ``--xla_gpu_executable_num_compute_streams`` does not change);
- an ``async-start`` wrapping a collective, ``all-gather-start``, ``all-reduce-start``,
  ``collective-permute-start``, ``send``, ``recv``: the next communication stream (1);
- an instruction with the ``_xla_stream_annotation`` frontend attribute: that number,
  of its kind.

:data:`XLA_0_12` is the XLA of jaxlib 0.12.0.1 (jax git hash ``dc4af684``; its XLA commit is
not recorded here: the stored jax history ends before that release). Read in
``third_party/xla/xla/service/gpu/execution_stream_assignment.cc`` and
``xla/backends/gpu/runtime/execution_stream_id.h`` of tensorflow/tensorflow (commit
``05f47330be0af441f2c14801ea46b2e02b29e098``, the 2026 file with the two memcpy scope
kinds), and checked against jaxlib 0.12.0.1 itself: its cuda plugin carries that file's
strings (``memcpy_d2h``, ``memcpy_h2d_stream``, ``Start new %v execution scope``) and its
``TF_CPP_VMODULE=execution_stream_assignment=3`` log of the mlp offload step
(``fixtures/jax012/xla-logs/mlp_offload.streams.log``) is what this model gives. The same
walk, with two more scope kinds, each one fixed stream:

- a ``copy-start`` whose destination (tuple element 0) is in host memory (``S(5)``): the
  D2H memcpy stream; whose source (element 1) is: the H2D memcpy stream; else compute;
- an ``async-start`` that does not wrap a collective and wraps (directly, or as the root
  of a non-custom fusion) a ``dynamic-update-slice`` whose result is in host memory: D2H;
  a ``dynamic-slice`` whose operand 0 is: H2D; anything else: the compute rotation.

The annotation does not apply to the memcpy kinds. Not modelled at 0.12: collectives of a
named communication domain (their own stream pools) and pipelined send/recv pairs on
communication streams 1 and 2 (with more than one communication stream), neither of which
changes a compute or memcpy stream.

Which model: the jaxlib version of the compile (a compile's versions, an artifact folder's
``manifest.json``): 0.12 and later take :data:`XLA_0_12`, earlier ones :data:`XLA_0_10`
(JAX 0.11's XLA already makes device-side slice copies async, but its host copies still take
the compute rotation: marin-community/marin's logbook measured them queueing there on JAX
0.11.1). Without a version (a bare ``.hlo.txt``, an XLA dump folder), a module printed with
XLA 0.12's compact tuple-element operands (``%param#0``, which no earlier printer writes)
takes :data:`XLA_0_12`; any other takes :data:`XLA_0_10` (the text carries no version).

Its done (and updates) run on the start's stream. Each stream runs what is issued on
it in order, so a host copy issued behind a device-to-device slice copy on the same
stream waits for it.
Approximation: XLA walks a computation's instruction list, whose order the text does
not keep; the text (schedule) order is used to find the instructions without users,
which changes nothing when the root is the only one (the usual case).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from hloscope.analysis.structure.callgraph import callee_name
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.hlo.model import Computation, Instruction, Module
from hloscope.hlo.shape import HOST_MEMORY_SPACE, Shape

#: XLA commit of the first model (jax-v0.10.2's third_party/xla/revision.bzl).
XLA_COMMIT = "5a9e73cbd92530cac2ac36f4736a774b2412afe2"
#: ``kDefaultNumComputeStreams`` / the Options default of the modelled version.
DEFAULT_COMPUTE_STREAMS = 4
DEFAULT_COMMUNICATION_STREAMS = 1
STREAM_ANNOTATION = "_xla_stream_annotation"

_WRAPPED_COLLECTIVES = frozenset({
    "all-gather", "all-reduce", "all-to-all", "collective-broadcast", "collective-permute",
    "ragged-all-to-all", "reduce-scatter",
})
_COLLECTIVE_STARTS = frozenset({"all-gather-start", "all-reduce-start", "collective-permute-start", "send", "recv"})


class StreamKind(StrEnum):
    """XLA's execution scope kinds (``ExecutionScopeKind``; the memcpy kinds from XLA 0.12)."""

    COMPUTE = "compute"
    COMMUNICATION = "communication"
    MEMCPY_D2H = "memcpy_d2h"
    MEMCPY_H2D = "memcpy_h2d"


#: XLA's fixed memcpy streams (``kMemcpyD2HStreamId`` 0, ``kMemcpyH2DStreamId`` 1).
_MEMCPY_NUMBER = {StreamKind.MEMCPY_D2H: 0, StreamKind.MEMCPY_H2D: 1}


@dataclass(frozen=True)
class StreamModel:
    """One XLA version's stream assignment. name: the jaxlib it is read from. xla_commit: its XLA
    commit when known (""). memcpy_streams: host copies take the two fixed memcpy streams."""

    name: str
    xla_commit: str
    memcpy_streams: bool


XLA_0_10 = StreamModel("jaxlib 0.10.2", XLA_COMMIT, memcpy_streams=False)
XLA_0_12 = StreamModel("jaxlib 0.12.0.1", "", memcpy_streams=True)


def _version(text: str) -> tuple[int, ...] | None:
    parts: list[int] = []
    for p in text.split(".")[:2]:
        digits = "".join(c for c in p if c.isdigit()) if p[:1].isdigit() else ""
        if not digits:
            return None
        parts.append(int(digits))
    return tuple(parts) if len(parts) == 2 else None


def compact_tuple_elements(module: Module) -> bool:
    """Whether ``module`` was printed with XLA 0.12's compact tuple-element operands (``%p#0``: the
    parser names the get-tuple-element it adds ``p#0``, a name no printed instruction has)."""
    return any("#" in ins.name for comp in module.computations.values() for ins in comp.instructions)


def stream_model(jaxlib: str | None, module: Module | None = None) -> StreamModel:
    """The model for a module compiled by ``jaxlib`` (a version string; None or unreadable:
    unknown): 0.12 and later :data:`XLA_0_12`, earlier :data:`XLA_0_10`; unknown: :data:`XLA_0_12`
    for a module printed with compact tuple elements, else :data:`XLA_0_10`."""
    version = _version(jaxlib) if jaxlib else None
    if version is not None:
        return XLA_0_12 if version >= (0, 12) else XLA_0_10
    return XLA_0_12 if module is not None and compact_tuple_elements(module) else XLA_0_10


@dataclass(frozen=True, order=True)
class ExecutionStream:
    """One of XLA's execution streams: ``ComputationStreamId(n)`` or ``CommunicationStreamId(n)``."""

    kind: StreamKind
    number: int

    @property
    def label(self) -> str:
        """``compute:2``; a memcpy stream by its kind alone (``memcpy_d2h``: there is one of each)."""
        return self.kind.value if self.kind in _MEMCPY_NUMBER else f"{self.kind.value}:{self.number}"


@dataclass(frozen=True)
class StreamAssignment:
    """The stream of every scope start (and, through it, its done).

    streams: (computation, start name) -> its stream. order: per stream, its starts in
    the order XLA assigned them (computations breadth first, post order inside).
    compute_streams / communication_streams: the round-robin sizes modelled.
    model: the XLA version whose algorithm this is.
    """

    streams: Mapping[tuple[str, str], ExecutionStream]
    order: Mapping[ExecutionStream, tuple[tuple[str, str], ...]]
    compute_streams: int = DEFAULT_COMPUTE_STREAMS
    communication_streams: int = DEFAULT_COMMUNICATION_STREAMS
    model: StreamModel = XLA_0_10

    @property
    def xla_commit(self) -> str:
        return self.model.xla_commit

    def stream_of(self, computation: str, name: str) -> ExecutionStream | None:
        return self.streams.get((computation, name))

    def sharing(self, computation: str, name: str) -> tuple[str, ...]:
        """The other starts of the same computation on this start's stream, in schedule order."""
        s = self.streams.get((computation, name))
        if s is None:
            return ()
        return tuple(n for c, n in self.order[s] if c == computation and n != name)


def _host(shape: Shape | None) -> bool:
    return shape is not None and not shape.is_tuple and shape.memory_space == HOST_MEMORY_SPACE


def _copy_direction(ins: Instruction) -> StreamKind | None:
    """A ``copy-start``'s memcpy kind (XLA 0.12's ``CopyStartDirection``): its shape is
    ``(destination, source, u32[])``; None for a device-to-device copy."""
    if not ins.shape.is_tuple or len(ins.shape.tuple_shapes) < 2:
        return None
    if _host(ins.shape.tuple_element(0)):
        return StreamKind.MEMCPY_D2H
    if _host(ins.shape.tuple_element(1)):
        return StreamKind.MEMCPY_H2D
    return None


def _async_direction(index: ModuleIndex, ins: Instruction) -> StreamKind | None:
    """An ``async-start``'s memcpy kind (XLA 0.12's ``AsyncHostMemcpyDirection``): the wrapped op,
    or the root of the non-custom fusion it wraps, a dynamic-update-slice into host memory (D2H)
    or a dynamic-slice of host memory (H2D)."""
    inner = index.wrapped_op(ins)
    if inner is not None and inner.opcode == "fusion":
        inner = index.wrapped_op(inner) if inner.attr("kind") != "kCustom" else None
    if inner is None:
        return None
    if inner.opcode == "dynamic-update-slice" and _host(inner.shape):
        return StreamKind.MEMCPY_D2H
    if inner.opcode == "dynamic-slice" and inner.operands:
        source = index.module.computations[inner.computation].by_name.get(inner.operands[0])
        if source is not None and _host(source.shape):
            return StreamKind.MEMCPY_H2D
    return None


def scope_kind(index: ModuleIndex, ins: Instruction, model: StreamModel = XLA_0_10) -> StreamKind | None:
    """The execution scope ``ins`` starts (``IsExecutionScopeStart``) under ``model``, or None."""
    op = ins.opcode
    if op == "async-start":
        root = index.wrapped_op(ins)
        if root is not None and root.opcode in _WRAPPED_COLLECTIVES:
            return StreamKind.COMMUNICATION
        return (_async_direction(index, ins) if model.memcpy_streams else None) or StreamKind.COMPUTE
    if op in _COLLECTIVE_STARTS:
        return StreamKind.COMMUNICATION
    if op == "copy-start":
        return (_copy_direction(ins) if model.memcpy_streams else None) or StreamKind.COMPUTE
    return None


def post_order(index: ModuleIndex, comp: Computation) -> list[Instruction]:
    """XLA's ``MakeInstructionPostOrder`` of ``comp`` (channel dependencies aside: SPMD modules have none)."""
    by_name = comp.by_name
    users = index.users_map(comp.name)
    visited: dict[str, int] = {}  # 1 visiting, 2 visited
    out: list[Instruction] = []
    for root in comp.instructions:
        if users.get(root.name) or visited.get(root.name) == 2:
            continue
        stack = [root]
        while stack:
            cur = stack[-1]
            state = visited.get(cur.name, 0)
            if state:
                stack.pop()
                if state == 1:
                    visited[cur.name] = 2
                    out.append(cur)
                continue
            visited[cur.name] = 1
            for o in reversed(cur.operands):
                dep = by_name.get(o)
                if dep is not None and visited.get(o) != 2:
                    stack.append(dep)
            for p in cur.control_predecessors:
                dep = by_name.get(p)
                if dep is not None and visited.get(p) != 2:
                    stack.append(dep)
    return out


def _callees(ins: Instruction) -> list[str]:
    if ins.opcode == "while":
        return [c for c in (callee_name(ins, "body"), callee_name(ins, "condition")) if c]
    return list(ins.called_computations)


def assign_execution_streams(index: ModuleIndex, compute_streams: int = DEFAULT_COMPUTE_STREAMS,
                             communication_streams: int = DEFAULT_COMMUNICATION_STREAMS,
                             model: StreamModel = XLA_0_10) -> StreamAssignment:
    """Every scope start's stream, as ``model``'s XLA assigns them."""
    module = index.module
    streams: dict[tuple[str, str], ExecutionStream] = {}
    counters = {StreamKind.COMPUTE: 0, StreamKind.COMMUNICATION: 0}
    sizes = {StreamKind.COMPUTE: max(1, compute_streams), StreamKind.COMMUNICATION: max(1, communication_streams)}
    queue: deque[str] = deque([module.entry_name])
    while queue:
        comp = module.computations.get(queue.popleft())
        if comp is None:
            continue
        for ins in post_order(index, comp):
            kind = scope_kind(index, ins, model)
            if kind is not None and (comp.name, ins.name) not in streams:
                annotated = ins.frontend_attributes.get(STREAM_ANNOTATION, "")
                if kind in _MEMCPY_NUMBER:
                    stream = ExecutionStream(kind, _MEMCPY_NUMBER[kind])
                elif annotated.strip().lstrip("-").isdigit():
                    stream = ExecutionStream(kind, int(annotated))
                else:
                    stream = ExecutionStream(kind, counters[kind])
                    counters[kind] = (counters[kind] + 1) % sizes[kind]
                streams[(comp.name, ins.name)] = stream
            if ins.opcode in ("call", "conditional", "while"):
                queue.extend(_callees(ins))
    order: dict[ExecutionStream, list[tuple[str, str]]] = {}
    for key, s in streams.items():
        order.setdefault(s, []).append(key)
    pos = {(c, n): module.computations[c].by_name[n].position for c, n in streams}
    return StreamAssignment(
        streams, {s: tuple(sorted(keys, key=lambda k: (k[0], pos.get(k, 0)))) for s, keys in sorted(order.items())},
        compute_streams, communication_streams, model)
