"""The checks XLA's parser itself makes beyond syntax, so that hloscope rejects what it rejects.

XLA's HLO parser (xla/hlo/parser/hlo_parser.cc at the jaxlib pin) refuses, while
parsing, a few attribute combinations and malformed async chains that are not
syntax errors. These are those checks, over a module both parser paths have built;
everything else XLA's verifier would say stays unchecked (docs/parser.md lists
the deliberate differences). Contract: returns None, or raises one
:class:`HloParseError` at the instruction's line (and the attribute's column
where one is to blame), and nothing else. One pass over the instructions.
"""

from __future__ import annotations

from collections.abc import Callable

from hloscope.errors import HloParseError
from hloscope.hlo.model import Instruction, Module
from hloscope.hlo.shape import Shape

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

    async_callers: dict[str, Instruction] = {}
    for comp in module.computations.values():
        for ins in comp.instructions:
            op = ins.opcode
            if op in _GROUP_MODE_OPCODES:
                if ins.attr("use_global_device_ids") == "true" and not ins.attr("channel_id"):
                    raise fail(ins, f"'{ins.name}' has use_global_device_ids=true without channel_id "
                                    "(XLA's parser refuses it: no group mode fits)", "use_global_device_ids")
            elif op in _ASYNC:
                _check_async(module, comp.by_name, ins, async_callers, fail)


def _same_shape(a: Shape, b: Shape) -> bool:
    """Equal up to layout, as XLA compares an async-update with its operand."""
    if a.is_tuple or b.is_tuple:
        return (a.is_tuple and b.is_tuple and len(a.tuple_shapes) == len(b.tuple_shapes)
                and all(_same_shape(x, y) for x, y in zip(a.tuple_shapes, b.tuple_shapes, strict=True)))
    return a.element_type == b.element_type and a.dims == b.dims


def _check_async(module: Module, by_name: dict[str, Instruction], ins: Instruction,
                 callers: dict[str, Instruction], fail: Callable[[Instruction, str, str], HloParseError]) -> None:
    name = ins.name
    if ins.opcode == "async-start":
        shape = ins.shape
        if not (shape.is_tuple and len(shape.tuple_shapes) >= 2 and shape.tuple_shapes[0].is_tuple):
            raise fail(ins, f"'{name}': an async-start's shape must be ((operands), outputs, state...)", name)
        # XLA wraps a sugared start's computation in one of its own (call-start may share it).
        for callee in ins.called_computations if not ins.wrapped_opcode else ():
            other = callers.get(callee)
            if other is not None:
                raise fail(ins, f"computation '{callee}' is called by two async ops ('{other.name}' and "
                                f"'{name}'); XLA's parser wants one each", callee)
            callers[callee] = ins
        return
    if len(ins.operands) != 1 or by_name.get(ins.operands[0]) is None \
            or by_name[ins.operands[0]].opcode not in ("async-start", "async-update"):
        raise fail(ins, f"'{name}': an {ins.opcode} takes one operand, an async-start or async-update", name)
    previous = by_name[ins.operands[0]]
    if ins.opcode == "async-update" and not _same_shape(ins.shape, previous.shape):
        raise fail(ins, f"'{name}': an async-update's shape must be its operand '{previous.name}''s", name)
    start = previous
    seen = 0
    while start.opcode == "async-update" and seen < 10_000:
        nxt = by_name.get(start.operands[0]) if len(start.operands) == 1 else None
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
