"""DetailPane: one instruction (or one transfer's verdict) in full, with links to navigate.

Shows shape, layout, memory space and bytes; metadata with the user's source
line (and that line's text when the file is readable here); the backend config
pretty-printed; the instruction's HLO line. Operands, users, the async partner
and called computations are listed as links: Enter or a click goes there.
"""

from __future__ import annotations

import json
import linecache
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from hloscope.analysis.verdict import Verdict
from hloscope.hlo.model import Instruction
from hloscope.render.table import human_bytes, human_us
from hloscope.render.why import explain
from hloscope.tui.format import VERDICT_STYLE, arrow, checkpoint_name
from hloscope.tui.load import Loaded
from hloscope.tui.messages import GoTo

#: Most users/operands listed as links (a broadcast constant can have thousands).
_MAX_LINKS = 200


def instruction_text(loaded: Loaded, ins: Instruction) -> Text:
    report = loaded.report
    shape = ins.shape
    t = Text()
    t.append(ins.name, style="bold")
    t.append(f"  {ins.text_opcode}" + (f" ({ins.wrapped_opcode})" if ins.wrapped_opcode else ""), style="#a3be8c")
    t.append(f"\n{ins.computation} · position {ins.position} · line {ins.line}\n", style="dim")
    t.append("shape  ", style="bold")
    t.append(f"{shape.element_type}[{','.join(map(str, shape.dims))}]" if not shape.is_tuple else
             f"tuple of {len(shape.tuple_shapes)}")
    t.append(f"  {human_bytes(shape.byte_size)}\n")
    for i, leaf in enumerate(shape.leaves()[:16]):
        space = "host S(5)" if leaf.memory_space == report.host_space else (
            f"S({leaf.memory_space})" if leaf.memory_space else "device")
        prefix = f"  [{i}] " if shape.is_tuple else "  "
        t.append(f"{prefix}{leaf.element_type}[{','.join(map(str, leaf.dims))}] layout {{{leaf.layout or '-'}}} "
                 f"{space} {human_bytes(leaf.byte_size)}\n")
    us = report.cost.instruction_us(ins)
    if us:
        t.append(f"estimated ~{human_us(us)}\n", style="#d08770")
    v = report.verdict_for(ins.name)
    if v is not None and v.transfer.computation == ins.computation:
        t.append("transfer: ", style="bold")
        t.append_text(verdict_text(loaded, v))
    md = ins.metadata
    if md:
        t.append("metadata\n", style="bold")
        for k, val in md.items():
            t.append(f"  {k}: {val}\n")
    loc = report.module.source_location(ins)
    if loc is not None:
        t.append("source  ", style="bold")
        t.append(f"{loc}" + (f" in {loc.function}" if loc.function else "") + "\n")
        line = linecache.getline(loc.file, loc.line).rstrip()
        if line:
            t.append(f"  {loc.line} | {line.strip()}\n", style="italic #88c0d0")
    bc = ins.backend_config
    if bc:
        t.append("backend config\n", style="bold")
        t.append(json.dumps(bc, indent=2)[:4000] + "\n", style="#b48ead")
    hlo = loaded.hlo_line(ins.line)
    if hlo:
        t.append("HLO\n", style="bold")
        t.append(hlo.strip()[:2000] + "\n", style="dim")
    return t


def verdict_text(loaded: Loaded, v: Verdict) -> Text:
    t_ = v.transfer
    t = Text()
    t.append(v.verdict.value, style=VERDICT_STYLE[v.verdict])
    t.append(f"  {arrow(t_.direction)} {t_.op} {human_bytes(t_.bytes)} x{t_.executions}/step "
             f"checkpoint {checkpoint_name(t_)}\n")
    t.append(f"  ~transfer {human_us(v.est_transfer_us)}, hidden {human_us(v.est_hidden_us)}, "
             f"exposed {human_us(v.est_exposed_us)} per execution (estimates)\n")
    t.append(f"  why: {explain(v)}\n", style="italic")
    if v.window:
        segs = ", ".join(f"{s.computation}[{s.first}:{s.end}] {s.kind.value}" for s in v.window)
        t.append(f"  window: {segs}; {len(v.compute)} compute, {len(v.collectives)} collective(s), "
                 f"{len(v.other_transfers)} other transfer(s)\n")
    loc = loaded.report.source(v)
    if loc is not None:
        t.append(f"  source: {loc}\n")
    return t


def links(loaded: Loaded, ins: Instruction) -> list[tuple[str, str, str | None]]:
    """(label, computation, instruction) to navigate to from ``ins``."""
    report = loaded.report
    comp = report.module.computations[ins.computation]
    out: list[tuple[str, str, str | None]] = []
    for o in ins.operands[:_MAX_LINKS]:
        op = comp.by_name.get(o)
        out.append((f"operand  {o}  {op.opcode if op else ''}", ins.computation, o))
    for u in report.index.users(ins)[:_MAX_LINKS]:
        out.append((f"user     {u.name}  {u.opcode}", ins.computation, u.name))
    for p in report.pairs:
        if p.start is ins and p.done is not None:
            out.append((f"done     {p.done.name}", p.done.computation, p.done.name))
        elif p.done is ins:
            out.append((f"start    {p.start.name}", p.start.computation, p.start.name))
    for c in ins.called_computations:
        out.append((f"calls    {c}", c, None))
    return out


class DetailPane(VerticalScroll):
    """The highlighted instruction or transfer."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.loaded: Loaded | None = None
        self._targets: list[tuple[str, str | None]] = []

    def compose(self) -> ComposeResult:
        yield Static(id="detail-text")
        yield OptionList(id="detail-links")

    def show_instruction(self, ins: Instruction) -> None:
        if self.loaded is None:
            return
        self.query_one("#detail-text", Static).update(instruction_text(self.loaded, ins))
        self._set_links(links(self.loaded, ins))

    def show_verdict(self, v: Verdict) -> None:
        if self.loaded is None:
            return
        t = Text(v.transfer.instruction.name + "\n", style="bold")
        t.append_text(verdict_text(self.loaded, v))
        self.query_one("#detail-text", Static).update(t)
        self._set_links(links(self.loaded, v.transfer.instruction))

    def _set_links(self, items: list[tuple[str, str, str | None]]) -> None:
        ol = self.query_one("#detail-links", OptionList)
        ol.clear_options()
        self._targets = [(c, n) for _, c, n in items]
        ol.add_options([Option(label) for label, _, _ in items])
        ol.display = bool(items)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        comp, name = self._targets[event.option_index]
        self.post_message(GoTo(comp, name))

    @property
    def targets(self) -> list[Any]:
        return list(self._targets)
