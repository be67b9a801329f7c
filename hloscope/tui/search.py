"""Search over every instruction by name, opcode, checkpoint name or op_name (pure; no Textual)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hloscope.analysis.report import Report
from hloscope.hlo.attributes import parse_braced_map
from hloscope.hlo.model import Instruction
from hloscope.tui.text import hlo_string

#: ``metadata={...}``: one braced value whose strings may hold any character, no nested braces
#: (possessive: a value that does not close fails in linear time).
_METADATA_RE = re.compile(r'metadata=(\{(?:"[^"\\]*+(?:\\.[^"\\]*+)*+"|[^{}"\']++)*+\})[ \t]*(?:,|$)')
#: The map's first item when it is ``op_name="..."`` (how XLA prints most metadata).
_FIRST_OP_NAME_RE = re.compile(r'\{\s*op_name\s*=\s*"([^"\\]*(?:\\.[^"\\]*)*)"')


def op_name(ins: Instruction) -> str:
    """``ins.metadata["op_name"]`` (or ""), without splitting every attribute of the instruction.

    ``Instruction.metadata`` splits the whole attribute list first (the backend config
    included), then every item of the map: over the 33,370 instructions of the 32-layer
    benchmark module that was 0.5 s of the search index (now 0.1 s). Here the
    ``metadata={...}`` value is found directly, when that is unambiguous: it occurs once, as an
    attribute of its own (at the start or after a comma, every bracket before it closed) with
    no quote before it (so not inside another attribute's string) and a comma or the end after
    it. Its op_name is read there when it is the map's first item and the only ``op_name`` in
    it; a map without the word has none; any other map is read by the model's map parser, and
    anything else takes the model's own path. ``tests/tui/test_pure.py`` checks that this
    agrees with ``Instruction.metadata`` on every instruction of the fixtures.
    """
    text = ins.attr_text
    i = text.find("metadata={")
    if i < 0:
        return ins.metadata.get("op_name", "") if "metadata" in text else ""
    before = text[:i]
    m = _METADATA_RE.match(text, i)
    if (m is None or '"' in before or "'" in before or text.find("metadata={", i + 1) >= 0
            or before.rstrip(" \t")[-1:] not in ("", ",")
            or (("{" in before or "(" in before or "[" in before)
                and any(before.count(a) != before.count(b) for a, b in ("{}", "()", "[]")))):
        return ins.metadata.get("op_name", "")
    braced = m.group(1)
    if "op_name" not in braced:
        return ""
    first = _FIRST_OP_NAME_RE.match(braced)
    if first is not None and braced.find("op_name", first.end()) < 0:
        return first.group(1).replace('\\"', '"').replace("\\\\", "\\")  # as parse_braced_map unescapes
    return parse_braced_map(braced).get("op_name", "")


@dataclass(frozen=True, slots=True)
class Hit:
    computation: str
    name: str
    label: str


class SearchIndex:
    """Built once per report; ``find`` is a case-insensitive substring match over each instruction's keys."""

    def __init__(self, report: Report) -> None:
        checkpoint = {(t.computation, t.instruction.name): str(getattr(t, "checkpoint_name", None) or "")
                      for t in report.transfers}
        self._items: list[tuple[str, Hit]] = []
        for comp in report.module.computations.values():
            for ins in comp.instructions:
                name = hlo_string(op_name(ins)) if "metadata" in ins.attr_text else ""
                ck = checkpoint.get((comp.name, ins.name), "")
                hay = f"{ins.name}\0{ins.opcode}\0{ins.text_opcode}\0{ck}\0{name}".lower()
                label = f"{ins.name}  {ins.text_opcode}  [{comp.name}]" + (f"  {ck}" if ck else "") + (
                    f"  {name}" if name else "")
                self._items.append((hay, Hit(comp.name, ins.name, label)))

    def __len__(self) -> int:
        return len(self._items)

    def find(self, query: str, limit: int = 300) -> tuple[list[Hit], int]:
        """(first ``limit`` hits, total number of hits): the instructions named ``query`` exactly first,
        then the rest in module order (a name is also a part of others': ``param.35`` of ``async_param.35``)."""
        q = query.strip().lower()
        if not q:
            return [], 0
        hits = [h for hay, h in self._items if q in hay]
        exact = [h for h in hits if h.name.lower() == q]
        if exact:
            hits = exact + [h for h in hits if h.name.lower() != q]
        return hits[:limit], len(hits)
