"""Search over every instruction by name, opcode, checkpoint name or op_name (pure; no Textual)."""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.report import Report
from hloscope.tui.text import hlo_string


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
                op_name = hlo_string(ins.metadata.get("op_name", "")) if "metadata" in ins.attr_text else ""
                ck = checkpoint.get((comp.name, ins.name), "")
                hay = f"{ins.name}\0{ins.opcode}\0{ins.text_opcode}\0{ck}\0{op_name}".lower()
                label = f"{ins.name}  {ins.text_opcode}  [{comp.name}]" + (f"  {ck}" if ck else "") + (
                    f"  {op_name}" if op_name else "")
                self._items.append((hay, Hit(comp.name, ins.name, label)))

    def __len__(self) -> int:
        return len(self._items)

    def find(self, query: str, limit: int = 300) -> tuple[list[Hit], int]:
        """(first ``limit`` hits in module order, total number of hits)."""
        q = query.strip().lower()
        if not q:
            return [], 0
        hits = [h for hay, h in self._items if q in hay]
        return hits[:limit], len(hits)
