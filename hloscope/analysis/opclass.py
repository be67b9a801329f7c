"""Which opcodes are free, compute, collectives, control flow or async halves."""

from __future__ import annotations

from hloscope.hlo.model import Instruction

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
#: Buffer-allocation custom calls that do no work.
FREE_CUSTOM_CALLS = frozenset({"AllocateBuffer", "annotate_device_placement", "MoveToHost", "MoveToDevice"})


def custom_call_target(ins: Instruction) -> str:
    return ins.attr("custom_call_target").strip('"')


def is_start(ins: Instruction) -> bool:
    return ins.opcode in START_OPCODES


def is_done(ins: Instruction) -> bool:
    return ins.opcode in DONE_OPCODES


def collective_kind(ins: Instruction) -> str:
    """The collective an instruction performs ("" if none); start and done both say it."""
    op = ins.opcode
    if op in COLLECTIVE_OPCODES:
        return op
    for suffix in ("-start", "-done"):
        if op.endswith(suffix) and op[: -len(suffix)] in COLLECTIVE_OPCODES:
            return op[: -len(suffix)]
    if op in ("send-done", "recv-done"):
        return op[:-5]
    if op.startswith("async-") and ins.wrapped_opcode in COLLECTIVE_OPCODES:
        return ins.wrapped_opcode
    return ""


def is_work(ins: Instruction) -> bool:
    """Whether an instruction occupies the compute stream (not bookkeeping, not an async half)."""
    return not (is_free(ins) or is_start(ins) or is_done(ins) or ins.opcode == "async-update")


def is_free(ins: Instruction) -> bool:
    if ins.opcode in FREE_OPCODES:
        return True
    return ins.opcode == "custom-call" and custom_call_target(ins) in FREE_CUSTOM_CALLS
