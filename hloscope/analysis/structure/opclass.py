"""The opcode vocabulary: which ops are free, compute, collectives, control flow or async halves.

Contract: every pass, view and renderer classifies instructions through this
module (opcode sets, :func:`value_shape`, :class:`Resource` and
:func:`resource_of`), so the timeline, the TUI lanes, DOT and the trace agree.
Opcode names are spelled as XLA prints them (``opt-barrier``, not
``optimization-barrier``).
"""

from __future__ import annotations

from enum import IntEnum, StrEnum

from hloscope.analysis.kinds import Direction
from hloscope.hlo.model import Instruction
from hloscope.hlo.shape import Shape

#: Ops that cost nothing on the GPU timeline (aliasing, bookkeeping).
FREE_OPCODES = frozenset({
    "bitcast", "get-tuple-element", "tuple", "parameter", "constant", "opt-barrier", "after-all",
    "partition-id", "replica-id", "add-dependency", "domain", "iota", "get-dimension-size",
})
COLLECTIVE_OPCODES = frozenset({
    "all-gather", "all-reduce", "reduce-scatter", "all-to-all", "ragged-all-to-all",
    "collective-permute", "collective-broadcast", "send", "recv",
})
CONTROL_FLOW = frozenset({"while", "call", "conditional"})
START_OPCODES = frozenset({
    "async-start", "copy-start", "all-gather-start", "all-reduce-start", "collective-permute-start",
    "send", "recv",
})
DONE_OPCODES = frozenset({
    "async-done", "copy-done", "all-gather-done", "all-reduce-done", "collective-permute-done",
    "send-done", "recv-done",
})
#: Async starts whose result is tuple element 0: copy-start is ``(destination, source, u32[] context)``
#: (copy-done returns element 0), send/recv are ``(data, u32[] context, token[])``.
_RESULT_AT_0 = frozenset({"copy-start", "send", "recv"})
#: Async starts whose result is tuple element 1: async-start is ``((operands), result, context...)``,
#: all-gather-start ``(operand, result)``, collective-permute-start ``(operand, result, u32[], u32[])``.
#: all-reduce-start is not here: its shape is the result itself (a tuple when it reduces several arrays).
_RESULT_AT_1 = frozenset({"async-start", "all-gather-start", "collective-permute-start"})
#: Ops whose result is their one operand's value, element for element (a copy, moved or re-laid
#: out; a scalar keeps its value): what trip-count and constant reads look through. Data flow
#: (``value_flow.SAME_VALUE``) adds the ops that move a value on (slices, collectives).
SAME_VALUE = frozenset({"copy", "copy-start", "copy-done", "bitcast", "convert", "reshape"})
#: Buffer-allocation custom calls that do no work.
FREE_CUSTOM_CALLS = frozenset({"AllocateBuffer", "annotate_device_placement", "MoveToHost", "MoveToDevice"})


def custom_call_target(ins: Instruction) -> str:
    return ins.attr("custom_call_target").strip('"')


def is_start(ins: Instruction) -> bool:
    return ins.opcode in START_OPCODES


def is_done(ins: Instruction) -> bool:
    return ins.opcode in DONE_OPCODES


#: Opcode -> the collective it performs: the collective itself, its -start and its -done.
_COLLECTIVE_OF = {
    **{op: op for op in COLLECTIVE_OPCODES},
    **{f"{op}-start": op for op in COLLECTIVE_OPCODES},
    **{f"{op}-done": op for op in COLLECTIVE_OPCODES},
}
_ASYNC_WRAPPERS = frozenset({"async-start", "async-update", "async-done"})


def collective_kind(ins: Instruction) -> str:
    """The collective an instruction performs ("" if none); start and done both say it, and so
    does an async wrapper around one."""
    op = ins.opcode
    kind = _COLLECTIVE_OF.get(op)
    if kind is not None:
        return kind
    if op in _ASYNC_WRAPPERS and ins.wrapped_opcode in COLLECTIVE_OPCODES:
        return ins.wrapped_opcode
    return ""


def is_free(ins: Instruction) -> bool:
    if ins.opcode in FREE_OPCODES:
        return True
    return ins.opcode == "custom-call" and custom_call_target(ins) in FREE_CUSTOM_CALLS


class OpClass(IntEnum):
    """What an instruction of a scheduled computation does to the streams (one class each, first match)."""

    FREE = 0  # bookkeeping (is_free): no time
    START = 1  # an async start (is_start)
    DONE = 2  # an async done (is_done)
    UPDATE = 3  # async-update
    CONTROL = 4  # while, call, conditional: runs other computations
    COLLECTIVE = 5  # a synchronous collective
    WORK = 6  # anything else: compute on the compute stream


def op_class(ins: Instruction) -> OpClass:
    """The :class:`OpClass` of ``ins`` (``ModuleIndex.op_classes`` keeps them per computation)."""
    if is_free(ins):
        return OpClass.FREE
    if is_start(ins):
        return OpClass.START
    if is_done(ins):
        return OpClass.DONE
    op = ins.opcode
    if op == "async-update":
        return OpClass.UPDATE
    if op in CONTROL_FLOW:
        return OpClass.CONTROL
    if collective_kind(ins):
        return OpClass.COLLECTIVE
    return OpClass.WORK


def value_shape(ins: Instruction) -> Shape:
    """The shape of the value an instruction makes: for an async start, the result
    element of its tuple (see ``_RESULT_AT_0``/``_RESULT_AT_1``), not the whole tuple."""
    shape = ins.shape
    if not shape.is_tuple:
        return shape
    op = ins.opcode
    index = 0 if op in _RESULT_AT_0 else 1 if op in _RESULT_AT_1 else -1
    element = shape.tuple_element(index) if index >= 0 else None
    return element if element is not None else shape


class Resource(StrEnum):
    """What an instruction occupies while it runs: the lanes of the timeline, the TUI, DOT and the trace."""

    COMPUTE = "compute"  # the compute stream
    COLLECTIVE = "collective"  # the collective stream (NCCL)
    ASYNC = "async"  # other async ops, on their own stream
    LINK_TO_HOST = "host link D->H"
    LINK_TO_DEVICE = "host link H->D"


RESOURCES = tuple(Resource)


def link_of(direction: Direction) -> Resource:
    """The host link a transfer in ``direction`` occupies."""
    return Resource.LINK_TO_HOST if direction is Direction.TO_HOST else Resource.LINK_TO_DEVICE


def resource_of(ins: Instruction, direction: Direction | None = None) -> Resource | None:
    """The resource ``ins`` occupies. ``direction``: set when ``ins`` is a host transfer (its start,
    or the op itself). Collectives (start, done or synchronous) use the collective stream, other
    async halves the async stream, free bookkeeping ops nothing (None), the rest compute."""
    if direction is not None:
        return link_of(direction)
    if collective_kind(ins):
        return Resource.COLLECTIVE
    if is_free(ins):
        return None
    if is_start(ins) or is_done(ins) or ins.opcode == "async-update":
        return Resource.ASYNC
    return Resource.COMPUTE
