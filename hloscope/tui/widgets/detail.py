"""DetailPane: one instruction (or one transfer's verdict) in full, with links to navigate.

Shows shape, layout, memory space and bytes; metadata with the user's source
line (and that line's text when the file is readable here); the backend config
pretty-printed; the instruction's HLO line. Operands (each once, with a count
when it is passed several times), users, the async partner and called
computations are listed as links: Enter or a click goes there.

Everything from the module (metadata, file and function names, the HLO line) and
from the user's files is appended as plain text through ``shown``: never markup.
"""

from __future__ import annotations

import json
import linecache
from collections import Counter
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from hloscope.analysis.simulate.timeline import TransferTiming
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.hlo.model import Instruction
from hloscope.tui.format import VERDICT_STYLE, arrow, source_words
from hloscope.tui.load import Loaded
from hloscope.tui.messages import GoTo
from hloscope.tui.text import hlo_string, plain, shown
from hloscope.units import human_bytes, human_us

if TYPE_CHECKING:  # hloscope.render is imported on the first detail drawn (instruction_text)
    from hloscope.render.platforms import PlatformWords

#: Most users/operands listed as links (a broadcast constant can have thousands; a long
#: list costs the pane a slow layout on every cursor stop).
_MAX_LINKS = 40


def instruction_text(loaded: Loaded, ins: Instruction, margins: bool = True) -> Text:
    """``ins`` in full (``margins``: as for :func:`verdict_text`, when ``ins`` starts a transfer)."""
    # hloscope.render is imported on the first detail drawn, after the first frame: the package
    # imports every renderer (~40 ms), which the transfer table does not need
    from hloscope.render.measured_text import measured_clause  # lazy: render/, after the first frame

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
    if report.measured is not None and (clause := measured_clause(report.measured, ins.name)):
        t.append(clause + "\n", style="#ebcb8b")  # plain text: op names are data
    at = loaded.times.at(ins.computation, ins.name) if loaded.times is not None else None
    if at is not None:
        what = "issued" if at.issued else "ran"
        t.append(f"simulated: {what} at {at.start_us:,.1f} µs" + (
            f" to {at.end_us:,.1f} µs" if at.end_us > at.start_us else "") + " from the step start", style="#81a1c1")
        if at.wait_us > 0:
            t.append(f", waiting {human_us(at.wait_us)}", style="bold #bf616a")
        t.append("\n")
    v = report.verdict_for(ins.name)
    if v is not None and v.transfer.computation == ins.computation:
        t.append("transfer: ", style="bold")
        t.append_text(verdict_text(loaded, v, margins))
    md = ins.metadata
    if md:
        t.append("metadata\n", style="bold")
        for k, val in md.items():
            t.append(shown(f"  {k}: {hlo_string(val)}") + "\n")
    loc = report.module.source_location(ins)
    if loc is not None:
        t.append("source  ", style="bold")
        t.append(shown(source_words(loc)) + "\n")
        line = linecache.getline(loc.file, loc.line).rstrip()
        if line:
            t.append(shown(f"  {loc.line} | {line.strip().expandtabs(4)}") + "\n", style="italic #88c0d0")
    bc = ins.backend_config
    if bc:
        t.append("backend config\n", style="bold")
        t.append(json.dumps(bc, indent=2)[:4000] + "\n", style="#b48ead")
    hlo = loaded.hlo_line(ins.line)
    if hlo:
        t.append("HLO\n", style="bold")
        t.append(shown(hlo.strip()[:2000]) + "\n", style="dim")
    return t


def verdict_text(loaded: Loaded, v: Verdict, margins: bool = True) -> Text:
    """``v`` in full; ``margins``: the report's margins are measured (else their line says they are coming:
    reading ``report.margins`` would measure them here, on the UI thread)."""
    # lazy: render/, after the first frame
    from hloscope.render.margin_text import margin_line
    from hloscope.render.measured_text import transfer_clause
    from hloscope.render.name_words import name_words, unrequested_words
    from hloscope.render.platforms import platform_words  # see instruction_text
    from hloscope.render.unread_text import unread_clause
    from hloscope.render.verdict_words import explain, slack_clause  # see instruction_text
    from hloscope.render.xla_words import xla_clause

    t_ = v.transfer
    t = Text()
    t.append(v.verdict.value, style=VERDICT_STYLE[v.verdict])
    name = name_words(t_) or "-"
    role = f" ({t_.role})" if t_.role else ""
    other = unrequested_words(t_)
    t.append(shown(f"  {arrow(t_.direction)} {t_.op} {human_bytes(t_.bytes)} x{t_.executions}/step "
                   f"checkpoint {name}{role}" + (f"; it {other}" if other else "")) + "\n")
    simulated = v.timing is not None and v.timing.matched
    t.append(f"  ~transfer {human_us(v.est_transfer_us)}, hidden {human_us(v.est_hidden_us)}, "
             f"exposed {human_us(v.est_exposed_us)} per execution, {human_us(v.est_exposed_us * t_.executions)} "
             f"per step ({'simulated wait' if simulated else 'estimates'})\n")
    if clause := xla_clause(loaded.report, v):  # XLA's own figure, beside ours
        t.append(f"  xla: {clause}\n")
    measured = loaded.report.measured
    if measured is not None and (seen := transfer_clause(measured, t_.instruction.name)):
        t.append(f"  {seen}\n", style="#ebcb8b")  # plain text: names are data
    t.append(shown(f"  why: {explain(v, platform_words(loaded.report.platform))}") + "\n", style="italic")
    if not margins and v.timing is not None:
        t.append("  margin: …\n", style="dim")
    elif margin := margin_line(loaded.report, v):
        t.append(shown(f"  margin: {margin}") + "\n")
    if (unread := loaded.report.unread.of(t_)) is not None:
        t.append(shown(f"  never read back: it {unread_clause(unread)}") + "\n", style="bold #d08770")
    stream = loaded.report.streams.stream_of(t_.computation, t_.instruction.name) if loaded.report.streams else None
    if stream is not None:
        t.append(f"  xla stream: {stream.label} (XLA runs what is issued on it in order)\n")
    room = loaded.report.slack_for(v)
    if room is not None:
        t.append(shown(f"  slack: {slack_clause(room)}") + "\n")
    if v.timing is not None:
        t.append_text(timing_text(v.timing, platform_words(loaded.report.platform)))
    if v.window:
        segs = ", ".join(f"{s.computation}[{s.first}:{s.end}] {s.kind.value}" for s in v.window)
        t.append(f"  window: {segs}; {len(v.compute)} compute, {len(v.collectives)} collective(s), "
                 f"{len(v.other_transfers)} other transfer(s)\n")
    loc = loaded.report.source(v)
    if loc is not None:
        t.append(shown(f"  source: {source_words(loc)}") + "\n")
    return t


def _names(names: tuple[str, ...], most: int = 3) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def timing_text(timing: TransferTiming, words: PlatformWords | None = None) -> Text:
    """The simulated timing of a transfer's last execution: issue, finish, done, the wait, what ran beside it."""
    t = Text()
    t.append("  simulated", style="bold")
    t.append(" (its last simulated execution, µs from the step start):\n")
    t.append(f"    issued {timing.issue_us:,.1f} · finished {timing.finish_us:,.1f} (took "
             f"{human_us(timing.duration_us)}; alone on the link {human_us(timing.transfer_us)})\n")
    if not timing.matched:
        t.append("    no done reached in the simulated step\n", style="dim")
    elif timing.done is not None:
        t.append(f"    done {timing.done} reached {timing.done_us:,.1f} · ")
        t.append(f"waited {human_us(timing.wait_us)}" if timing.wait_us > 0 else "no wait",
                 style="bold #bf616a" if timing.wait_us > 0 else "#a3be8c")
        t.append(f" (mean {human_us(timing.mean_wait_us)} over {timing.executions} execution(s), "
                 f"{human_us(timing.wait_us_per_step)} per step)\n")
    else:
        core = words.core if words else "compute stream"
        t.append(f"    synchronous: the {core} waited {human_us(timing.wait_us)}\n")
    t.append(f"    beside it: {len(timing.beside_compute)} compute op(s) ~{human_us(timing.compute_beside_us)}")
    if timing.beside_compute:
        t.append(shown(f" ({_names(timing.beside_compute)})"))
    t.append(f"; {len(timing.beside_collectives)} collective(s)")
    if timing.beside_collectives:
        t.append(shown(f" ({_names(timing.beside_collectives)})"))
    t.append(f"; {len(timing.beside_transfers)} other transfer(s) on the link")
    if timing.beside_transfers:
        t.append(shown(f" ({_names(timing.beside_transfers)})"))
    t.append("\n")
    return t


def links(loaded: Loaded, ins: Instruction) -> list[tuple[str, str, str | None]]:
    """(label, computation, instruction) to navigate to from ``ins``."""
    report = loaded.report
    comp = report.module.computations[ins.computation]
    out: list[tuple[str, str, str | None]] = []
    times = Counter(ins.operands)  # a constant index can be passed four times: one link, with the count
    operands = list(times)
    for o in operands[:_MAX_LINKS]:
        op = comp.by_name.get(o)
        out.append((f"operand  {o}  {op.opcode if op else ''}" + (f"  x{times[o]}" if times[o] > 1 else ""),
                    ins.computation, o))
    if len(operands) > _MAX_LINKS:
        out.append((f"... {len(operands) - _MAX_LINKS} more operands", ins.computation, ins.name))
    users = report.index.users(ins)
    for u in users[:_MAX_LINKS]:
        out.append((f"user     {u.name}  {u.opcode}", ins.computation, u.name))
    if len(users) > _MAX_LINKS:
        out.append((f"... {len(users) - _MAX_LINKS} more users", ins.computation, ins.name))
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
        self.margins = False  # the report's margins are measured (margins_arrived)
        self._shown: Verdict | Instruction | None = None
        self._targets: list[tuple[str, str | None]] = []

    def compose(self) -> ComposeResult:
        yield Static(id="detail-text")
        yield OptionList(id="detail-links")

    def show_instruction(self, ins: Instruction) -> None:
        if self.loaded is None:
            return
        self._shown = ins
        self._draw_text()
        self._set_links(links(self.loaded, ins))

    def show_verdict(self, v: Verdict) -> None:
        if self.loaded is None:
            return
        self._shown = v
        self._draw_text()
        self._set_links(links(self.loaded, v.transfer.instruction))

    def _draw_text(self) -> None:
        what, loaded = self._shown, self.loaded
        if what is None or loaded is None:
            return
        if isinstance(what, Verdict):
            t = plain(what.transfer.instruction.name, style="bold")
            t.append("\n")
            t.append_text(verdict_text(loaded, what, self.margins))
        else:
            t = instruction_text(loaded, what, self.margins)
        self.query_one("#detail-text", Static).update(t)

    def margins_arrived(self) -> None:
        """The report's margins are measured: the transfer shown gets its margin line (its links
        and the cursor on them stay)."""
        self.margins = True
        self._draw_text()

    def _set_links(self, items: list[tuple[str, str, str | None]]) -> None:
        ol = self.query_one("#detail-links", OptionList)
        ol.clear_options()
        self._targets = [(c, n) for _, c, n in items]
        ol.add_options([Option(plain(label)) for label, _, _ in items])
        ol.display = bool(items)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        comp, name = self._targets[event.option_index]
        self.post_message(GoTo(comp, name))

    @property
    def targets(self) -> list[Any]:
        return list(self._targets)
