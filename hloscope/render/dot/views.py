"""The four diagram views, built from a :class:`Report` as ``graphviz.Digraph`` objects.

Contract: each builder reads the report's module, index and verdicts and adds
nodes and edges in a fixed order (schedule order, then name), so the same input
gives the same DOT text. No view derives analysis: windows, pairs, hints, trip
counts and executions are the report's. A view with more nodes than
``max_nodes`` keeps the most relevant ones and says in its title, and in
``Diagram.notes``, what was cut and how to see more. Unknown names are
unknown-name errors (exit 3) listing the valid ones.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

import graphviz

from hloscope.analysis.report import Report
from hloscope.analysis.simulate.slack import Slack
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.analysis.structure.callgraph import CONTROL_KINDS, CallKind
from hloscope.analysis.structure.opclass import Resource, is_done, is_free, is_start, resource_of
from hloscope.errors import EXIT_UNKNOWN_NAME, HloscopeError
from hloscope.hlo.model import Instruction
from hloscope.render.dot.quote import label, line, node_id, shorten, wrapped
from hloscope.render.dot.style import (
    EDGE_STYLE,
    FIRST_USE_COLOR,
    INPUT_READY_COLOR,
    SLACK_COLOR,
    VERDICT_COLOR,
    add_legend,
    checkpoint_name,
    instruction_attrs,
    new_graph,
    transfer_lines,
)
from hloscope.render.table import human_bytes
from hloscope.render.verdict_words import input_hint, slack_clause, use_hint
from hloscope.units import human_us

DEFAULT_MAX_NODES = 150
#: Nodes of a transfer view when no --max-nodes is given: the pair, its hints and a window of up
#: to three columns of WINDOW_ROWS. At 150 a 32-compute window of the llama step drew 5119 x 2022
#: pt of crossing edges; at 48 it is a few columns a screen shows whole.
DEFAULT_TRANSFER_NODES = 48
#: A transfer view's largest drawing, inches (Graphviz ``size``: scaled down to fit, never up):
#: 1728 x 1152 pt, a screen or two; the SVG stays sharp when zoomed.
TRANSFER_SIZE_IN = "24,16"
#: Rows of a schedule drawn when no --max-nodes is given (one op per row: about a screen's height).
DEFAULT_SCHEDULE_ROWS = 25
DEFAULT_RADIUS = 1


@dataclass
class Diagram:
    """graph: the DOT graph. notes: what was cut or left out, one sentence each."""

    graph: graphviz.Digraph
    notes: list[str] = field(default_factory=list)


Key = tuple[str, str]  # (computation, instruction name)


def _key(ins: Instruction) -> Key:
    return (ins.computation, ins.name)


def _nid(k: Key) -> str:
    return node_id(*k)


def _names_hint(names: Iterable[str], limit: int = 12, width: int = 50) -> str:
    names = list(names)
    shown = ", ".join(shorten(n, width) for n in names[:limit])
    return shown + (f", … ({len(names) - limit} more)" if len(names) > limit else "")


class _Context:
    """Shared look-ups for one report: transfers by instruction, trip counts."""

    def __init__(self, report: Report, prefix: str = "") -> None:
        self.report = report
        self.prefix = prefix  # a panel's own node ids when one diagram draws several transfers
        self.module = report.module
        self.index = report.index
        self.host = report.host_space
        self.verdict_of: dict[Key, Verdict] = {}
        for v in report.verdicts:
            self.verdict_of[_key(v.transfer.instruction)] = v
            if v.done is not None:
                self.verdict_of.setdefault(_key(v.done), v)

    def nid(self, k: Key) -> str:
        return node_id(self.prefix, *k) if self.prefix else node_id(*k)

    def ins(self, k: Key) -> Instruction:
        return self.module.computations[k[0]].by_name[k[1]]

    def attrs(self, ins: Instruction, extra: list[str] | None = None, compact: bool = False) -> dict[str, str]:
        """A node's label and colours; ``compact`` (one schedule row): no fused-computation line,
        bytes beside the op, the transfer's first line only."""
        v = self.verdict_of.get(_key(ins))
        lines = list(extra or [])
        if v is not None:
            lines = transfer_lines(v)[:1 if compact else None] + lines
        trip = self.index.trip_count(ins) if ins.opcode == "while" else None
        if ins.opcode == "while":
            body = self.index.while_body(ins)
            if body is not None:
                lines.insert(0, line(f"body: {body.name}"))
        elif ins.opcode == "fusion" and ins.called_computations and not compact:
            lines.insert(0, line(f"calls: {ins.called_computations[0]}"))
        return instruction_attrs(ins, self.host, lines, v, trip, compact)

    def add_edges(self, g: graphviz.Digraph, keys: list[Key], skip: set[tuple[Key, Key]] | None = None,
                  free: set[Key] | None = None) -> None:
        """Data and control edges among ``keys``, and async edges of their pairs. Edges between two
        keys of ``free`` do not constrain the layout (a wrapped window keeps its grid)."""
        present = set(keys)
        skip = skip or set()
        free = free or set()
        for k in keys:
            ins = self.ins(k)
            comp = self.module.computations[k[0]]
            for op in dict.fromkeys(ins.operands):
                src = (k[0], op)
                if src in present and (src, k) not in skip:
                    src_ins = comp.by_name[op]
                    kind = "async" if (is_done(ins) or ins.opcode == "async-update") and \
                        (is_start(src_ins) or src_ins.opcode == "async-update") else "data"
                    extra = {"constraint": "false"} if src in free and k in free else {}
                    g.edge(self.nid(src), self.nid(k), **self.edge_style(kind, k), **extra)
            for pred in ins.control_predecessors if "control-predecessors" in ins.attr_text else ():
                if (k[0], pred) in present:
                    g.edge(self.nid((k[0], pred)), self.nid(k), **EDGE_STYLE["control"])
        for p in self.report.pairs:
            s, d = _key(p.start), _key(p.done)
            direct = s[0] == d[0] and p.done.operands[:1] == (p.start.name,)  # drawn as an operand edge
            if s in present and d in present and not direct:
                g.edge(self.nid(s), self.nid(d), **self.edge_style("async", s), constraint="false")

    def edge_style(self, kind: str, key: Key) -> dict[str, str]:
        style = dict(EDGE_STYLE[kind])
        v = self.verdict_of.get(key)
        if kind == "async" and v is not None:
            style.update(color=VERDICT_COLOR[v.verdict], penwidth="2.5")
        return style


# -- transfer -----------------------------------------------------------------

#: Most transfers one name may draw in one diagram (panels side by side).
MAX_PANELS = 8


def find_transfers(report: Report, name: str) -> list[Verdict]:
    """Every transfer called ``name``, in report order.

    Tried in order, the first kind that matches wins: the transfer's checkpoint
    name (when the analysis records one: the to-host write and the to-device
    read of one tensor, in each loop that moves it, share it), the start's or
    done's instruction name, then the ``op_name`` metadata (all of it). A
    ``/``-separated part of an ``op_name`` (where JAX puts a checkpoint name in
    some forms) must name one transfer: several is an error listing them, since
    a part such as ``dynamic_slice`` says nothing about which tensor. None is an
    unknown-name error listing the valid names.
    """
    verdicts = list(report.verdicts)
    tests = (
        lambda v: checkpoint_name(v) == name,
        lambda v: v.transfer.instruction.name == name or (v.done is not None and v.done.name == name),
        lambda v: v.transfer.instruction.metadata.get("op_name", "") == name,
    )
    for test in tests:
        found = [v for v in verdicts if test(v)]
        if found:
            return found
    found = [v for v in verdicts if name in v.transfer.instruction.metadata.get("op_name", "").split("/")]
    if len(found) == 1:
        return found
    if found:
        raise HloscopeError(f"'{shorten(name, 80)}' is part of the op_name of {len(found)} transfers: "
                            f"{_names_hint(v.transfer.instruction.name for v in found)}; "
                            "give a checkpoint or instruction name", EXIT_UNKNOWN_NAME)
    raise HloscopeError(f"no transfer called '{shorten(name, 80)}'; {transfers_hint(report)}",
                        EXIT_UNKNOWN_NAME)


def transfers_hint(report: Report) -> str:
    """``transfers: key_proj (3), dynamic-slice-start.2.0, ...``: the names --transfer takes."""
    counts: dict[str, int] = {}
    for v in report.verdicts:
        n = checkpoint_name(v) or v.transfer.instruction.name
        counts[n] = counts.get(n, 0) + 1
    if not counts:
        return "no host transfer in this module"
    return "transfers: " + _names_hint(f"{n} ({k})" if k > 1 else n for n, k in counts.items())


def find_transfer(report: Report, name: str) -> Verdict:
    """The one transfer called ``name`` (see :func:`find_transfers`); several is an error listing them."""
    found = find_transfers(report, name)
    if len(found) > 1:
        raise HloscopeError(f"'{shorten(name, 80)}' names {len(found)} transfers: "
                            f"{_names_hint(v.transfer.instruction.name for v in found)}; "
                            "give an instruction name", EXIT_UNKNOWN_NAME)
    return found[0]


#: Window ops per column in a transfer view before the window wraps into another column.
WINDOW_ROWS = 16


def _columns(keys: list[Key]) -> list[list[Key]]:
    """``keys`` in schedule order cut into columns of equal height, at most WINDOW_ROWS each."""
    if len(keys) <= WINDOW_ROWS:
        return [keys] if keys else []
    n = -(-len(keys) // WINDOW_ROWS)
    rows = -(-len(keys) // n)
    return [keys[j:j + rows] for j in range(0, len(keys), rows)]


def _neighbourhood(ctx: _Context, seeds: list[Instruction], radius: int) -> list[Key]:
    """Producers and consumers within ``radius`` data hops of ``seeds``, nearest first."""
    out: list[Key] = []
    seen = {_key(s) for s in seeds}
    frontier = list(seeds)
    for _ in range(radius):
        nxt: list[Instruction] = []
        for ins in frontier:
            comp = ctx.module.computations[ins.computation]
            for n in [comp.by_name[o] for o in dict.fromkeys(ins.operands)] + ctx.index.users(ins):
                if _key(n) not in seen:
                    seen.add(_key(n))
                    out.append(_key(n))
                    nxt.append(n)
        frontier = nxt
    return out


def transfer_summary(v: Verdict) -> str:
    """``dynamic-slice-start.1.0 (H->D 64.0 KiB, HIDDEN, region_13.23_spmd)``: one transfer in a list."""
    return f"{v.transfer.instruction.name} ({transfer_lines(v)[0].split('  [')[0]}, {v.verdict.value.upper()}, " \
           f"{v.transfer.computation})"


def transfer_view(report: Report, name: str, radius: int = DEFAULT_RADIUS,
                  max_nodes: int = DEFAULT_MAX_NODES) -> Diagram:
    """The transfer(s) called ``name``: start, done, window in schedule order, neighbours, hints.

    A name that covers several transfers (a checkpoint name: the write to host
    and each read back) draws each in its own panel, side by side, and says so
    in the title and the notes; ``max_nodes`` applies to each panel.
    """
    found = find_transfers(report, name)
    if len(found) == 1:
        ctx = _Context(report)
        title, notes, _ = _transfer_panel(ctx, None, found[0], radius, max_nodes)
        g = new_graph("transfer", title + [w for n in notes for w in wrapped(n)])
        g.attr(size=TRANSFER_SIZE_IN)
        add_legend(g, below=_transfer_panel(ctx, g, found[0], radius, max_nodes)[2])
        return Diagram(g, notes)
    shown = found[:MAX_PANELS]
    notes = [f"'{shorten(name, 60)}' names {len(found)} transfers; drawing "
             + (f"each in its own panel: {', '.join(transfer_summary(v) for v in shown)}" if len(shown) == len(found)
                else f"the first {len(shown)} in their own panels: {', '.join(transfer_summary(v) for v in shown)};"
                     f" name one by its instruction to see another")]
    g = new_graph("transfer", [line(f"transfers named {name}", 100),
                               f"{len(found)} transfers, one panel each (left to right in report order)"]
                  + (wrapped(notes[0]) if len(shown) < len(found) else []))
    g.attr(size=TRANSFER_SIZE_IN)
    drawn: list[str] = []
    for i, v in enumerate(shown):
        ctx = _Context(report, prefix=f"t{i}")
        title, panel_notes, _ = _transfer_panel(ctx, None, v, radius, max_nodes)
        with g.subgraph(name=f"cluster_t{i}") as c:
            # centred: a viewer's font wider than the one the layout measured spreads both ways
            c.attr(label=label(*title, *[w for n in panel_notes for w in wrapped(n)]), style="rounded",
                   color="#34495e", labeljust="c")
            drawn += _transfer_panel(ctx, c, v, radius, max_nodes)[2]
        notes += [f"{v.transfer.instruction.name}: {n}" for n in panel_notes]
    add_legend(g, below=drawn)
    return Diagram(g, notes)


def _transfer_panel(ctx: _Context, g: graphviz.Digraph | None, v: Verdict, radius: int,
                    max_nodes: int) -> tuple[list[str], list[str], list[str]]:
    """Draw one transfer into ``g`` (nothing when None): (title lines, notes, node ids drawn)."""
    start, done = v.transfer.instruction, v.done
    window = v.window_instructions(ctx.module)
    hint_edges: list[tuple[Key, Key, dict[str, str]]] = []
    if v.input_ready is not None and v.pair is not None:
        hint_edges.append((_key(v.input_ready.producer), _key(start),
                           {"color": INPUT_READY_COLOR, "penwidth": "2.5",
                            "xlabel": label(f"input ready: {v.input_ready.ops_before_start} op(s) before")}))
    if v.first_use is not None and done is not None:
        what = "loop state" if v.first_use.is_loop_state else "first use"
        hint_edges.append((_key(done), _key(v.first_use.user),
                           {"color": FIRST_USE_COLOR, "penwidth": "2.5",
                            "xlabel": label(f"{what}: {v.first_use.ops_after_done} op(s) later")}))
    slack = ctx.report.slack_for(v) if v.pair is not None else None
    slack_ends = _slack_ends(ctx, v, slack)
    # Priority: the pair, the hint ends, the possible window's ends, the window (schedule order),
    # then neighbours by distance.
    core = [_key(start)] + ([_key(done)] if done is not None else [])
    hint_ends = [k for a, b, _ in hint_edges for k in (a, b)] + [k for k in slack_ends if k is not None]
    seeds = [start] + ([done] if done is not None else [])
    # The window from both ends inwards: a cut keeps the ops after the start and before the done.
    ends = [_key(i) for pair in itertools.zip_longest(window[: (len(window) + 1) // 2],
                                                      reversed(window[(len(window) + 1) // 2:]))
            for i in pair if i is not None]
    ordered = list(dict.fromkeys(core + hint_ends + ends + _neighbourhood(ctx, seeds, radius)))
    keep = ordered[:max(max_nodes, len(core))]
    kept = set(keep)
    cut = len(ordered) - len(keep)
    window_keys = [_key(i) for i in window if _key(i) in kept]

    title = [line(f"transfer {start.name}", 100),
             *[line(x, 100) for x in transfer_lines(v)[:1]]]
    if v.input_ready is not None and v.pair is not None:
        title += wrapped(line(input_hint(v.input_ready), 300))
    if v.first_use is not None and v.pair is not None:
        title += wrapped(line(use_hint(v.first_use), 300))
    title += wrapped(f"window: {v.window_size} instruction(s), {len(v.compute)} compute, "
                     f"{len(v.collectives)} collective(s); radius {radius}")
    if slack is not None:
        title += wrapped(line(slack_clause(slack), 400))
    notes: list[str] = []
    if cut:
        left_out = [i.position for i in window if _key(i) not in kept]
        where = f" #{left_out[0]}..#{left_out[-1]}" if left_out else ""
        notes.append(f"showing {len(keep)} of {len(ordered)} nodes ({cut} cut: "
                     f"{len(left_out)} window op(s){where}, the rest neighbours); "
                     f"widen with --max-nodes {len(ordered)}")
    if g is None:
        return title, notes, []

    # Window segments as clusters, their ops chained in schedule order; a long window wraps into
    # columns of at most WINDOW_ROWS (read down, then right), so it fits a screen's height.
    in_window = set(window_keys)
    gridded: set[Key] = set()
    for i, seg in enumerate(v.window):
        seg_keys = [k for k in window_keys if k[0] == seg.computation
                    and seg.first <= ctx.ins(k).position < seg.end]
        columns = _columns(seg_keys)
        with g.subgraph(name=f"cluster_{ctx.prefix}window{i}") as c:
            c.attr(label=label(line(f"window: {seg.computation} [{seg.first}, {seg.end}) {seg.kind.value}")),
                   style="dashed", color="#7f8c8d", fontsize="10")
            for k in seg_keys:
                c.node(ctx.nid(k), **ctx.attrs(ctx.ins(k), [f"#{ctx.ins(k).position}"]))
            if len(columns) > 1:  # rows across the columns; edges inside the grid leave it alone
                gridded.update(seg_keys)
                for row in itertools.zip_longest(*columns):
                    with c.subgraph() as r:
                        r.attr(rank="same")
                        for k in row:
                            if k is not None:
                                r.node(ctx.nid(k))
        head = [_key(start)] if i == 0 else []
        tail = [_key(done)] if done is not None and i == len(v.window) - 1 else []
        for col in columns or [[]]:  # every column hangs from the start and ends above the done
            chain = head + col + tail
            for a, b in itertools.pairwise(chain):
                g.edge(ctx.nid(a), ctx.nid(b), style="invis", weight="10")
    for k in keep:
        if k not in in_window:
            ins = ctx.ins(k)
            g.node(ctx.nid(k), **ctx.attrs(ins, [f"#{ins.position}" + ("" if k[0] == start.computation
                                                                        else f" in {shorten(k[0], 40)}")]))
    hint_pairs = {(a, b) for a, b, _ in hint_edges}
    ctx.add_edges(g, keep, skip=hint_pairs, free=gridded)
    for a, b, attrs in hint_edges:
        if a in kept and b in kept:
            g.edge(ctx.nid(a), ctx.nid(b), **attrs)
    drawn = [ctx.nid(k) for k in keep]
    if slack is not None:
        drawn.append(_possible_window(ctx, g, v, slack, slack_ends, kept))
    return title, notes, drawn


def _slack_ends(ctx: _Context, v: Verdict, slack: Slack | None) -> tuple[Key | None, Key | None]:
    """The instructions that bound the possible window: the start's latest input, the result's first
    real use (None where it is the top / the end of the computation)."""
    if slack is None or v.pair is None:
        return None, None
    start, done = v.pair.start, v.pair.done
    ready = (start.computation, slack.ready_after) if slack.ready_after else None
    needed = (done.computation, slack.needed_by) if slack.needed_by else None
    comps = ctx.module.computations
    return (ready if ready is not None and ready[1] in comps[ready[0]].by_name else None,
            needed if needed is not None and needed[1] in comps[needed[0]].by_name else None)


def _possible_window(ctx: _Context, g: graphviz.Digraph, v: Verdict, slack: Slack,
                     ends: tuple[Key | None, Key | None], kept: set[Key]) -> str:
    """The window the transfer could have had, as one note beside the one it got: its schedule
    ranges, the compute in them against the compute in the window it got, and whether it would
    hide the transfer; dotted edges from the start's latest input and to the first real use."""
    parts = ("possible-window", v.transfer.computation, v.transfer.instruction.name)
    nid = node_id(ctx.prefix, *parts) if ctx.prefix else node_id(*parts)
    verdict = ("enough to hide it" if slack.could_hide else "not enough: no placement hides it")
    rows = [line("possible window (dependency graph)", 80),
            *[line(f"{seg.computation} [{seg.first}, {seg.end}) {seg.kind.value}", 80) for seg in slack.segments],
            f"{slack.possible_ops} compute op(s) ~{human_us(slack.possible_compute_us)}",
            f"window it got: {slack.got_ops} op(s) ~{human_us(slack.got_compute_us)}",
            f"transfer ~{human_us(slack.transfer_us)}: {verdict}"]
    g.node(nid, label=label(*rows), shape="note", style="dashed", color=SLACK_COLOR, fontcolor=SLACK_COLOR,
           fontsize="10")
    ready, needed = ends
    if ready is not None and ready in kept:
        g.edge(ctx.nid(ready), nid, color=SLACK_COLOR, style="dotted", xlabel=label("possible from here"))
    if needed is not None and needed in kept:
        g.edge(nid, ctx.nid(needed), color=SLACK_COLOR, style="dotted", xlabel=label("possible until here"))
    return nid


# -- computation ----------------------------------------------------------------

def _computation(report: Report, name: str) -> str:
    comps = report.module.computations
    if name in comps:
        return name
    raise HloscopeError(f"no computation called '{shorten(name, 80)}'; {computations_hint(report)}",
                        EXIT_UNKNOWN_NAME)


def computations_hint(report: Report) -> str:
    """``scheduled computations: a (3 transfers), b, ...``: the names a --computation/--schedule takes,
    those that move host data first."""
    comps = [c for c in report.module.computations if report.index.is_scheduled_computation(c)]
    moving: dict[str, int] = {}
    for v in report.verdicts:
        moving[v.transfer.computation] = moving.get(v.transfer.computation, 0) + 1
    comps.sort(key=lambda c: -moving.get(c, 0))
    kind = "scheduled computations" if report.module.is_scheduled else "computations (module NOT scheduled)"
    return f"{kind}: " + _names_hint((f"{shorten(c, 50)} ({moving[c]} transfer(s))" if c in moving else c
                                      for c in comps), width=70)


def computation_view(report: Report, name: str, max_nodes: int = DEFAULT_MAX_NODES) -> Diagram:
    """The dependency graph of one computation: fusions and loops as single nodes."""
    ctx = _Context(report)
    comp = report.module.computations[_computation(report, name)]
    shown = [i for i in comp.instructions if i.opcode != "constant"]
    hidden_constants = len(comp.instructions) - len(shown)
    keep = shown[:max_nodes]
    execs = report.index.executions(comp.name)
    title = [line(f"computation {comp.name}", 100),
             f"{len(comp.instructions)} instruction(s), runs {execs}x per step; "
             f"{hidden_constants} constant(s) not drawn"]
    notes = []
    if len(keep) < len(shown):
        # the positions count the constants too, which are not drawn: say so, or 150 read as 0..151
        among = sum(1 for i in comp.instructions
                    if i.opcode == "constant" and keep[0].position < i.position < keep[-1].position)
        notes.append(f"showing the first {len(keep)} of {len(shown)} instructions in schedule order "
                     f"(positions {keep[0].position}..{keep[-1].position}"
                     + (f", with {among} constant(s) among them not drawn" if among else "")
                     + f"); widen with --max-nodes {len(shown)}")
    g = new_graph("computation", title + notes)
    for ins in keep:
        g.node(_nid(_key(ins)), **ctx.attrs(ins, [f"#{ins.position}"]))
    ctx.add_edges(g, [_key(i) for i in keep])
    add_legend(g, below=[_nid(_key(i)) for i in keep])
    return Diagram(g, notes)


# -- schedule -------------------------------------------------------------------

LANES = (("compute", "compute"), ("to_device", "host link H->D"), ("to_host", "host link D->H"),
         ("collectives", "collectives"))


_LANE_OF_RESOURCE: dict[Resource | None, str] = {
    Resource.LINK_TO_HOST: "to_host", Resource.LINK_TO_DEVICE: "to_device", Resource.COLLECTIVE: "collectives"}


def _lane(ctx: _Context, ins: Instruction) -> str:
    """The lane of ``ins`` from the shared vocabulary (``opclass.resource_of``); async ops and
    anything else share the compute lane."""
    v = ctx.verdict_of.get(_key(ins))
    return _LANE_OF_RESOURCE.get(resource_of(ins, v.transfer.direction if v is not None else None), "compute")


def schedule_view(report: Report, name: str, max_nodes: int | None = None,
                  first: int = 0) -> Diagram:
    """One computation's schedule, time downwards, on lanes; async spans as dashed edges.

    Free ops (bitcasts, tuples, constants ...) are left out; ``first`` is the
    schedule position to start from. One op is one row, so at most ``max_nodes``
    (default :data:`DEFAULT_SCHEDULE_ROWS`, a screen's height) are drawn, and the
    notes say how to see the rest. A lane with nothing on it is not drawn.
    """
    ctx = _Context(report)
    comp = report.module.computations[_computation(report, name)]
    work = [i for i in comp.instructions if not is_free(i) and i.position >= first]
    limit = DEFAULT_SCHEDULE_ROWS if max_nodes is None else max_nodes
    keep = work[:limit]
    lanes: dict[str, list[Instruction]] = {lane: [] for lane, _ in LANES}
    for ins in keep:
        lanes[_lane(ctx, ins)].append(ins)
    empty = [text for lane, text in LANES if not lanes[lane]]
    title = [line(f"schedule of {comp.name}", 100),
             f"{len(comp.instructions)} instruction(s); {len(work)} that do work from position {first} "
             "(free ops not drawn); time runs downwards"
             + (f"; nothing on: {', '.join(empty)}" if empty and keep else "")]
    notes = []
    if len(keep) < len(work):
        notes.append(f"showing {len(keep)} of {len(work)} ops (positions {keep[0].position}.."
                     f"{keep[-1].position}); continue with --from {keep[-1].position + 1}, "
                     f"or draw all with --max-nodes {len(work)}")
    g = new_graph("schedule", title + notes)
    drawn = [(lane, text) for lane, text in LANES if lanes[lane]]
    for lane, text in drawn:
        with g.subgraph(name=f"cluster_{lane}") as c:
            c.attr(label=text, style="rounded", color="#aaaaaa", fontsize="11")
            # An invisible head keeps the lanes in this order.
            c.node(f"lane/{lane}", label="", shape="point", style="invis")
            for ins in lanes[lane]:
                c.node(_nid(_key(ins)), **ctx.attrs(ins, [f"#{ins.position}"], compact=True))
    for (a, _), (b, _) in itertools.pairwise(drawn):
        g.edge(f"lane/{a}", f"lane/{b}", style="invis")
    chain = [_nid(_key(i)) for i in keep]
    if chain:
        g.edge(f"lane/{drawn[0][0]}", chain[0], style="invis")
    for a, b in itertools.pairwise(chain):
        g.edge(a, b, style="invis")
    kept = {_key(i) for i in keep}
    for p in report.pairs:
        s, d = _key(p.start), _key(p.done)
        if s in kept and d in kept:
            g.edge(_nid(s), _nid(d), **ctx.edge_style("async", s), constraint="false")
    add_legend(g, below=chain[-1:])
    return Diagram(g, notes)


# -- calls ----------------------------------------------------------------------

def calls_view(report: Report, max_nodes: int = DEFAULT_MAX_NODES) -> Diagram:
    """The call graph of scheduled computations: executions, trip counts, offloaded bytes."""
    ctx = _Context(report)
    cg = report.index.callgraph
    comps = [c for c in report.module.computations if c in cg.scheduled]
    keep = comps[:max_nodes]
    kept = set(keep)
    per_comp = {lb.computation: lb for lb in report.summary.loops}
    worst: dict[str, Verdict] = {}
    for v in report.verdicts:  # VERDICT_COLOR lists the kinds worst first
        w = worst.get(v.transfer.computation)
        if w is None or list(VERDICT_COLOR).index(v.verdict) < list(VERDICT_COLOR).index(w.verdict):
            worst[v.transfer.computation] = v
    title = [line(f"call graph of {report.module.name}", 100),
             (f"{len(comps)} scheduled computation(s)" if report.module.is_scheduled else
              f"{len(comps)} computation(s) (module NOT scheduled: before optimizations)")
             + "; bytes are per execution"]
    notes = []
    if len(keep) < len(comps):
        notes.append(f"showing {len(keep)} of {len(comps)} computations; widen with --max-nodes {len(comps)}")
    g = new_graph("calls", title + notes)
    for c in keep:
        lines = [line(c), f"x{report.index.executions(c)} per step, "
                 f"{len(report.module.computations[c].instructions)} instruction(s)"]
        attrs: dict[str, str] = {}
        lb = per_comp.get(c)
        if lb is not None:
            lines.append(f"{lb.transfers} transfer(s): D->H {human_bytes(lb.to_host_bytes)}, "
                         f"H->D {human_bytes(lb.to_device_bytes)}")
            w = worst[c]
            attrs.update(fillcolor="#fde3c4", color=VERDICT_COLOR[w.verdict], penwidth="2.5")
            lines.append(f"worst verdict: {w.verdict.value}")
        g.node(node_id(c), label=label(*lines), **attrs)
    for a, b, d in sorted(cg.graph.edges(data=True), key=lambda e: (comps.index(e[0]) if e[0] in kept else 0,
                                                                       e[2]["via"], e[1])):
        if d["kind"] not in CONTROL_KINDS or a not in kept or b not in kept:
            continue
        text = d["kind"].replace("_", " ")
        if d["kind"] is CallKind.WHILE_BODY:
            loop = ctx.module.computations[a].by_name[d["via"]]
            trip = report.index.trip_count(loop)
            text += f" x{trip if trip is not None else '?'}"
        g.edge(node_id(a), node_id(b), label=label(line(text), line(f"via {d['via']}")),
               style="dotted" if d["kind"] is CallKind.WHILE_CONDITION else "solid")
    add_legend(g, items=("verdicts",), below=[node_id(c) for c in keep])
    return Diagram(g, notes)
