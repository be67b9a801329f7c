"""What both parser paths share: opcode canonicalisation, the debug sections,
and the checks that close a module.

Contract: these functions see a module as the parser has built it (text
positions known) and raise :class:`HloParseError` with a 1-based line and
column, never anything else; :func:`tuple_element`, called while an instruction is
read, raises :class:`TupleElementError` for its caller to place.
"""

from __future__ import annotations

import re
from functools import lru_cache

from hloscope.hlo.model import Computation, Instruction, Module
from hloscope.hlo.shape import Shape

#: Opcodes XLA has as real start/done instructions (not async-start sugar).
NATIVE_ASYNC = frozenset({
    "all-gather-start", "all-gather-done", "all-reduce-start", "all-reduce-done",
    "collective-permute-start", "collective-permute-done", "copy-start", "copy-done",
    "async-start", "async-update", "async-done", "send", "send-done", "recv", "recv-done",
})
#: Opcodes whose parenthesised text is a literal, not operands.
LITERAL_OPCODES = frozenset({"parameter", "constant"})
#: The debug sections XLA prints between the header and the computations.
SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
#: Deepest bracket nesting read (shapes, literals, attribute values). XLA's own
#: output nests a handful of levels; the limit keeps hostile input from
#: exhausting the stack in code that reads shapes recursively.
MAX_NESTING = 64

_LOC_RE = re.compile(r"(\w+)=(\d+)")
#: An operand as XLA 0.12's printer writes a tuple element (``--xla_dump_compact_gte``, on by
#: default in dumps): ``name#i`` or, nested, ``name#i#j`` (no blanks: the printer writes none).
COMPACT_OPERAND_RE = re.compile(r"%?([A-Za-z0-9_][A-Za-z0-9_.\-]*)((?:#[0-9]+)+)")


class TupleElementError(ValueError):
    """A compact tuple-element operand that names no tuple element (the message says why)."""


def tuple_element(comp: Computation, ref: str, line: int, path: str | None,
                  unknown: Shape | None = None) -> tuple[str, list[Instruction]]:
    """The get-tuple-element a compact operand ``ref`` (``name#i``, ``name#i#j``) stands for.

    XLA 0.12 prints a tuple element as ``%name#i`` in place of a ``get-tuple-element``
    instruction, and its parser reads the operand back as one: a get-tuple-element of ``name``
    (which must be defined earlier in the computation) with ``index=i``, added just before the
    instruction being read, once per computation for each ``name#i`` (later uses share it);
    ``name#i#j`` adds ``name#i`` then ``name#i#j``. hloscope builds the same instructions and
    names each after the text that denotes it (``name#i``, indices without leading zeros): no
    instruction name in HLO text holds ``#``, so these names cannot clash with any, and no
    operand written by name can refer to one. Returns (the name of the element, the
    instructions added for it, in order). The new instructions take ``line`` and the next
    positions in ``comp``; their shape is the element's (``unknown`` stays ``unknown`` while the
    tuple's own shape is still to be inferred, and is then added to the caller's list).
    Raises :class:`TupleElementError`."""
    base, *indices = ref.split("#")
    by_name = comp.by_name
    prev = by_name.get(base)
    if prev is None:
        raise TupleElementError(f"'{ref}': '{base}' is not defined before this instruction")
    name = base
    made: list[Instruction] = []
    for text in indices:
        if not (text.isascii() and text.isdigit()):
            raise TupleElementError(f"expected a tuple index after '#' in '{ref}'")
        index = int(text)
        name = f"{name}#{index}"
        known = by_name.get(name)
        if known is not None:
            prev = known
            continue
        shape = prev.shape
        element: Shape | None = shape if unknown is not None and shape is unknown else shape.tuple_element(index)
        if element is None:
            what = f"tuple index {index} is out of range for" if shape.is_tuple else "'#' needs a tuple, not"
            raise TupleElementError(f"'{ref}': {what} '{prev.name}' of shape {shape}")
        ins = Instruction(name, "get-tuple-element", "get-tuple-element", "", element, (prev.name,), "",
                          f"index={index}", False, line, len(comp.instructions), comp.name)
        ins.path = path
        comp.instructions.append(ins)
        by_name[name] = ins
        made.append(ins)
        prev = ins
    return name, made


@lru_cache(maxsize=4096)
def canonical_opcode(text_opcode: str) -> tuple[str, str]:
    """(canonical opcode, wrapped opcode) for an opcode as written."""
    if text_opcode in NATIVE_ASYNC:
        return text_opcode, ""
    for suffix in ("-start", "-update", "-done"):
        if text_opcode.endswith(suffix) and len(text_opcode) > len(suffix):
            return "async" + suffix, text_opcode[: -len(suffix)]
    return text_opcode, ""


def store_section_item(module: Module, section: str, key: int, value: str) -> None:
    """One ``N "text"`` or ``N {field=value ...}`` entry of a debug section."""
    if section in ("FileNames", "FunctionNames"):
        s = value.strip()
        if s.startswith('"') and s.endswith('"') and len(s) >= 2:
            s = s[1:-1]
        (module.file_names if section == "FileNames" else module.function_names)[key] = s
        return
    fields = {k: int(v) for k, v in _LOC_RE.findall(value)}
    if section == "FileLocations":
        module.file_locations[key] = (
            fields.get("file_name_id", 0), fields.get("function_name_id", 0),
            fields.get("line", 0), fields.get("column", 0),
        )
    else:
        # XLA's text printer writes a frame's parent one above the proto's 1-based id (a root
        # frame, proto parent 0, prints as its own id 1 or as 1): the proto's id is one less.
        module.stack_frames[key] = (fields.get("file_location_id", 0), max(fields.get("parent_frame_id", 0) - 1, 0))


def nesting_depth(text: str) -> int:
    """Deepest ``(``/``[``/``{`` nesting in ``text`` (strings not excluded: an upper bound)."""
    depth = deepest = 0
    for c in text:
        if c in "([{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif c in ")]}":
            depth -= 1
    return deepest
