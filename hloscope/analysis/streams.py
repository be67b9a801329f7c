"""The execution stream XLA:GPU gives each async start, as the XLA of jaxlib 0.10.2 does.

Pass: ``assign_execution_streams(index) -> StreamAssignment``.

Modelled on ``xla/service/gpu/execution_stream_assignment.cc`` at XLA commit
``5a9e73cbd92530cac2ac36f4736a774b2412afe2`` (the ``XLA_COMMIT`` of jax-v0.10.2's
``third_party/xla/revision.bzl``; the cuda plugin of jaxlib 0.10.2 carries that file's
log strings, ``Start new %v execution scope``, and its two scope kinds): computations
are visited breadth first from the entry (``call``, ``conditional`` and ``while`` add
their callees; a while's body before its condition, XLA's called-computation order);
inside each, instructions in XLA's post order (``MakeInstructionPostOrder``: a
depth-first walk from each instruction without users, operands first in order,
control predecessors before them). Every *scope start* gets a stream:

- a ``copy-start``, or an ``async-start`` wrapping anything but a collective: the next
  of ``compute_streams`` compute streams (one counter over the whole module, modulo 4:
  XLA's default, which ``--xla_gpu_executable_num_compute_streams`` does not change);
- an ``async-start`` wrapping a collective, ``all-gather-start``, ``all-reduce-start``,
  ``collective-permute-start``, ``send``, ``recv``: the next communication stream (1);
- an instruction with the ``_xla_stream_annotation`` frontend attribute: that number,
  of its kind.

Its done (and updates) run on the start's stream. Each stream runs what is issued on
it in order, so a host copy issued behind a device-to-device slice copy on the same
stream waits for it. Newer XLA differs: later versions split collectives by
communication domain, and after that host copies (``copy-start`` with an S(5) side,
async dynamic-(update-)slices of host memory) get two dedicated memcpy streams (D2H,
H2D) instead of the compute round robin; this module models the pin's version only.
Approximation: XLA walks a computation's instruction list, whose order the text does
not keep; the text (schedule) order is used to find the instructions without users,
which changes nothing when the root is the only one (the usual case).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from hloscope.analysis.callgraph import callee_name
from hloscope.analysis.index import ModuleIndex
from hloscope.hlo.model import Computation, Instruction

#: XLA commit this module follows (jax-v0.10.2's third_party/xla/revision.bzl).
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
    """XLA's execution scope kinds (``ExecutionScopeKind``)."""

    COMPUTE = "compute"
    COMMUNICATION = "communication"


@dataclass(frozen=True, order=True)
class ExecutionStream:
    """One of XLA's execution streams: ``ComputationStreamId(n)`` or ``CommunicationStreamId(n)``."""

    kind: StreamKind
    number: int

    @property
    def label(self) -> str:
        return f"{self.kind.value}:{self.number}"


@dataclass(frozen=True)
class StreamAssignment:
    """The stream of every scope start (and, through it, its done).

    streams: (computation, start name) -> its stream. order: per stream, its starts in
    the order XLA assigned them (computations breadth first, post order inside).
    compute_streams / communication_streams: the round-robin sizes modelled.
    xla_commit: the XLA version whose algorithm this is.
    """

    streams: Mapping[tuple[str, str], ExecutionStream]
    order: Mapping[ExecutionStream, tuple[tuple[str, str], ...]]
    compute_streams: int = DEFAULT_COMPUTE_STREAMS
    communication_streams: int = DEFAULT_COMMUNICATION_STREAMS
    xla_commit: str = XLA_COMMIT

    def stream_of(self, computation: str, name: str) -> ExecutionStream | None:
        return self.streams.get((computation, name))

    def sharing(self, computation: str, name: str) -> tuple[str, ...]:
        """The other starts of the same computation on this start's stream, in schedule order."""
        s = self.streams.get((computation, name))
        if s is None:
            return ()
        return tuple(n for c, n in self.order[s] if c == computation and n != name)


def scope_kind(index: ModuleIndex, ins: Instruction) -> StreamKind | None:
    """The execution scope ``ins`` starts (``IsExecutionScopeStart``), or None."""
    op = ins.opcode
    if op == "async-start":
        wrapped = ins.wrapped_opcode
        if not wrapped:
            root = index.wrapped_root(ins)
            wrapped = root.opcode if root is not None else ""
        return StreamKind.COMMUNICATION if wrapped in _WRAPPED_COLLECTIVES else StreamKind.COMPUTE
    if op in _COLLECTIVE_STARTS:
        return StreamKind.COMMUNICATION
    if op == "copy-start":
        return StreamKind.COMPUTE
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
                             communication_streams: int = DEFAULT_COMMUNICATION_STREAMS) -> StreamAssignment:
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
            kind = scope_kind(index, ins)
            if kind is not None and (comp.name, ins.name) not in streams:
                annotated = ins.frontend_attributes.get(STREAM_ANNOTATION, "")
                if annotated.strip().lstrip("-").isdigit():
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
        compute_streams, communication_streams)
