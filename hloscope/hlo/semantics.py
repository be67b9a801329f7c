"""The checks XLA's parser itself makes beyond syntax, so that hloscope rejects what it rejects.

XLA's HLO parser (xla/hlo/parser/hlo_parser.cc of the supported jaxlibs, 0.10.2 and 0.12)
refuses, while parsing, a few attribute combinations and malformed async chains that are
not syntax errors. These are those checks, over a module both parser paths have built;
where the two XLAs differ, what either reads is read: an async-update may carry late-bound
inputs after its first operand and change its shape as they bind, two async-starts may
call one computation, and an async-update or async-done may take its context from any
value, not only from an async-start or async-update (a while loop's tuple carries it from
one iteration to the next; XLA 0.12; 0.10.2 wanted one operand and its operand's shape,
one async-start per computation, and an async op as the operand). Such a chain's start is
found by tracing the context (``analysis.structure.pairs``); the checks against its start
below apply where the operand is an async op. One chain jaxlib 0.12's parser lets through
stays refused: an async-done with more than one operand (0.12 drops the others). Everything else XLA's verifier would
say stays unchecked (docs/parser.md lists the deliberate differences). Contract: returns
None, or raises one :class:`HloParseError` at the instruction's line (and the attribute's
column where one is to blame), and nothing else. One pass over the instructions.
"""

from __future__ import annotations

from collections.abc import Callable

from hloscope.errors import HloParseError
from hloscope.hlo.model import Instruction, Module

#: Collectives whose group mode XLA's parser derives from channel_id and use_global_device_ids.
_GROUP_MODE_OPCODES = frozenset({"all-reduce", "all-reduce-start", "reduce-scatter"})
_ASYNC = frozenset({"async-start", "async-update", "async-done"})


def check_parser_semantics(module: Module, text: str) -> None:
    """Raise :class:`HloParseError` for the first instruction XLA's parser would refuse."""
    lines: list[str] | None = None

    def column(ins: Instruction, needle: str) -> int:
        nonlocal lines
        if lines is None:
            lines = text.split("\n")
        line = lines[ins.line - 1] if 0 < ins.line <= len(lines) else ""
        at = line.find(needle)
        return at + 1 if at >= 0 else 1

    def fail(ins: Instruction, message: str, needle: str) -> HloParseError:
        return HloParseError(message, ins.line, column(ins, needle), ins.path)

    for comp in module.computations.values():
        for ins in comp.instructions:
            op = ins.opcode
            if op in _GROUP_MODE_OPCODES:
                if ins.attr("use_global_device_ids") == "true" and not ins.attr("channel_id"):
                    raise fail(ins, f"'{ins.name}' has use_global_device_ids=true without channel_id "
                                    "(XLA's parser refuses it: no group mode fits)", "use_global_device_ids")
            elif op in _ASYNC:
                _check_async(module, comp.by_name, ins, fail)


def _check_async(module: Module, by_name: dict[str, Instruction], ins: Instruction,
                 fail: Callable[[Instruction, str, str], HloParseError]) -> None:
    name = ins.name
    if ins.opcode != "async-done":
        shape = ins.shape
        if not (shape.is_tuple and len(shape.tuple_shapes) >= 2 and shape.tuple_shapes[0].is_tuple):
            raise fail(ins, f"'{name}': an {ins.opcode}'s shape must be ((operands), outputs, state...)", name)
    if ins.opcode == "async-start":
        return
    if not ins.operands:
        raise fail(ins, f"'{name}': an {ins.opcode} takes the async context as its first operand", name)
    if ins.opcode == "async-done" and len(ins.operands) > 1:
        raise fail(ins, f"'{name}': an async-done takes one operand, an async-start or async-update "
                        f"(late-bound inputs go to an async-update)", name)
    previous = by_name.get(ins.operands[0])
    if previous is None or previous.opcode not in ("async-start", "async-update"):
        # The context came another way (a loop's tuple carries it across iterations, jaxlib 0.12 reads
        # that): the start is found by tracing (analysis.structure.pairs), not checked here.
        return
    start = previous
    seen = 0
    while start.opcode == "async-update" and seen < 10_000:
        nxt = by_name.get(start.operands[0]) if start.operands else None
        if nxt is None:
            return  # reported at that update
        start, seen = nxt, seen + 1
    if start.opcode != "async-start":
        return
    wrapped = start.wrapped_opcode or _root_opcode(module, start)
    if ins.wrapped_opcode and wrapped and ins.wrapped_opcode != wrapped:
        raise fail(ins, f"'{name}' is written {ins.text_opcode}, but its async-start '{start.name}' wraps "
                        f"{wrapped}", ins.text_opcode)
    calls = ins.called_computations
    if calls and calls != start.called_computations:
        want = ", ".join(start.called_computations) or "its own wrapped computation"
        raise fail(ins, f"'{name}' calls {', '.join(calls)}, but its async-start '{start.name}' calls {want}",
                   "calls=")
    thread = ins.attr("async_execution_thread").strip('"')
    start_thread = start.attr("async_execution_thread").strip('"') or "main"
    if thread and thread != start_thread:
        raise fail(ins, f"'{name}' runs on thread '{thread}', but its async-start '{start.name}' on "
                        f"'{start_thread}'", "async_execution_thread")


def _root_opcode(module: Module, start: Instruction) -> str:
    for callee in start.called_computations:
        comp = module.computations.get(callee)
        if comp is not None and comp.root is not None:
            return comp.root.opcode
    return ""
