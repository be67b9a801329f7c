"""What both parser paths share: opcode canonicalisation, the debug sections,
and the checks that close a module.

Contract: these functions see a module as the parser has built it (text
positions known) and raise :class:`HloParseError` with a 1-based line and
column, never anything else.
"""

from __future__ import annotations

import re
from functools import lru_cache

from hloscope.hlo.model import Module

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
