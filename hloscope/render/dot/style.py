"""The visual language of the DOT views: colours, line styles, node labels, the legend.

Contract: one table of colours and styles shared by every view, so a diagram
reads the same whichever view drew it. Fill colour says where a value lives
(device or host memory) or what kind of op it is (collective, free); a border
in a verdict's colour marks a host transfer; async spans are dashed, control
dependencies dotted, the input-ready and first-use hints are thick coloured
edges. Labels carry name, op, shape and bytes (and a transfer's checkpoint
name or op_name). Every string goes through :mod:`hloscope.render.dot.quote`.
"""

from __future__ import annotations

import graphviz

from hloscope.analysis.kinds import Direction, VerdictKind
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.analysis.structure.opclass import collective_kind, is_free, value_shape
from hloscope.hlo.model import Instruction
from hloscope.hlo.shape import Shape
from hloscope.render.dot.quote import label, line, shorten
from hloscope.render.table import human_bytes

#: The font the layout is measured with: DejaVu Sans, wide (like Verdana), so the text fits its
#: box in any narrower font of :data:`SVG_FONT_STACK`; Graphviz and graphviz-pure both have its
#: metrics (graphviz-pure has none for a list of families and falls back to narrow Times).
FONT = "DejaVu Sans"
#: What an SVG asks the viewer for: the measured font first, then fonts a plain machine has.
SVG_FONT_STACK = "DejaVu Sans, Verdana, Helvetica, Arial, sans-serif"
DEVICE_FILL = "#dbe9f6"
HOST_FILL = "#fde3c4"
COLLECTIVE_FILL = "#e8daef"
FREE_FILL = "#f4f4f4"
VERDICT_COLOR = {
    VerdictKind.SYNC: "#b03a2e",
    VerdictKind.EXPOSED: "#e74c3c",
    VerdictKind.PARTIAL: "#e67e22",
    VerdictKind.HIDDEN: "#27ae60",
    VerdictKind.UNSCHEDULED: "#7f8c8d",
}
INPUT_READY_COLOR = "#8e44ad"
FIRST_USE_COLOR = "#2471a3"
#: The window a transfer could have had (``hloscope.analysis.simulate.slack``): its note node and edges.
SLACK_COLOR = "#16a085"
EDGE_STYLE = {
    "data": {"color": "#555555"},
    "control": {"style": "dotted", "color": "#555555"},
    "async": {"style": "dashed", "color": "#1a5276", "penwidth": "1.5"},
    "call": {"color": "#555555"},
}


#: Inches of blank around every diagram (Graphviz ``pad``): a title line of ``quote.TITLE_WIDTH``
#: characters drawn 10% wider than measured (a viewer without DejaVu Sans) stays on the image.
TITLE_PAD_IN = "0.5"


def new_graph(name: str, title: list[str], rankdir: str = "TB") -> graphviz.Digraph:
    """An empty diagram with the shared defaults and ``title`` lines on top."""
    g = graphviz.Digraph(name=name)
    # pad: room around the drawing for a title drawn in a font wider than the one measured
    g.attr(rankdir=rankdir, fontname=FONT, fontsize="12", labelloc="t", labeljust="l",
           label=label(*title), newrank="true", nodesep="0.25", ranksep="0.3", pad=TITLE_PAD_IN)
    g.attr("node", shape="box", style="rounded,filled", fontname=FONT, fontsize="10",
           fillcolor=DEVICE_FILL, color="#34495e", penwidth="1")
    g.attr("edge", fontname=FONT, fontsize="9", arrowsize="0.7")
    return g


def shape_text(shape: Shape, host_space: int) -> str:
    """``bf16[8,1024]`` with ``@host`` where it lives in host memory; tuples shortened."""
    def one(s: Shape) -> str:
        dims = ",".join(str(d) for d in s.dims)
        return f"{s.element_type}[{dims}]" + ("@host" if s.memory_space == host_space else "")
    if not shape.is_tuple:
        return one(shape)
    leaves = shape.leaves()
    shown = ", ".join(one(s) for s in leaves[:2])
    return f"({shown}{', …' if len(leaves) > 2 else ''})"


def opcode_text(ins: Instruction) -> str:
    """The op as the text wrote it (``fusion-start``), with the wrapped op for async wrappers."""
    if ins.wrapped_opcode and ins.wrapped_opcode not in ins.text_opcode:
        return f"{ins.text_opcode} ({ins.wrapped_opcode})"
    return ins.text_opcode


def checkpoint_name(v: Verdict) -> str | None:
    """The transfer's JAX checkpoint name, when the analysis recorded one."""
    name = getattr(v.transfer, "checkpoint_name", None)
    return name if isinstance(name, str) and name else None


def instruction_attrs(ins: Instruction, host_space: int, extra: list[str] | None = None,
                      verdict: Verdict | None = None, trip: int | None = None,
                      compact: bool = False) -> dict[str, str]:
    """Label and colours of one instruction node (``compact``: bytes on the op's line)."""
    shape = value_shape(ins)
    if compact:
        lines = [line(ins.name), line(f"{opcode_text(ins)}  {shape_text(shape, host_space)}  "
                                      f"{human_bytes(shape.byte_size)}", 80)]
    else:
        lines = [line(ins.name), line(f"{opcode_text(ins)}  {shape_text(shape, host_space)}"),
                 human_bytes(shape.byte_size)]
    if ins.opcode == "while":
        lines[0] = line(f"{ins.name}  x{trip if trip is not None else '?'}")
    if extra:
        lines.extend(extra)
    attrs = {"label": label(*lines), "fillcolor": fill_for(ins, host_space)}
    if is_free(ins):
        attrs["fontcolor"] = "#666666"
    if verdict is not None:
        attrs.update(color=VERDICT_COLOR[verdict.verdict], penwidth="2.5")
    return attrs


def fill_for(ins: Instruction, host_space: int) -> str:
    if value_shape(ins).in_memory_space(host_space):
        return HOST_FILL
    if collective_kind(ins):
        return COLLECTIVE_FILL
    if is_free(ins):
        return FREE_FILL
    return DEVICE_FILL


def transfer_lines(v: Verdict) -> list[str]:
    """Direction, bytes, verdict and the checkpoint name (or op_name) of a transfer."""
    t = v.transfer
    arrow = "D->H" if t.direction is Direction.TO_HOST else "H->D"
    out = [f"{arrow} {human_bytes(t.bytes)} {t.op}  [{v.verdict.value.upper()}]"]
    ckpt = checkpoint_name(v)
    if ckpt:
        guess = " (a guess: by bytes only)" if getattr(t, "name_guessed", False) else ""
        out.append(line(f"checkpoint: {ckpt}{guess}"))
    else:
        op_name = t.instruction.metadata.get("op_name", "")
        if op_name:
            out.append(line(shorten(op_name, 60)))
    return out


def _cell(text: str, fill: str = "white", border: str = "#aaaaaa", width: int = 1,
          font: str | None = None, bold: bool = False) -> str:
    inner = f"<B>{text}</B>" if bold else text
    if font is not None:
        inner = f'<FONT COLOR="{font}">{inner}</FONT>'
    return f'<TD BGCOLOR="{fill}" COLOR="{border}" BORDER="{width}">{inner}</TD>'


def _edge_cell(glyph: str, color: str, text: str, bold: bool = False) -> str:
    mark = f"<B>{glyph}</B>" if bold else glyph
    return f'<TD BORDER="0"><FONT COLOR="{color}">{mark}</FONT> {text}</TD>'


def legend_label(items: tuple[str, ...] = ("memory", "verdicts", "edges")) -> str:
    """The legend as one HTML-like table (constant text only: no user string ever goes here),
    a row per kind of mark, so it stays a few lines high whatever the view."""
    rows: list[list[str]] = []
    if "memory" in items:
        rows.append([_cell("device memory", DEVICE_FILL), _cell("host memory", HOST_FILL),
                     _cell("collective", COLLECTIVE_FILL), _cell("free op (no work)", FREE_FILL, font="#666666")])
    if "verdicts" in items:
        rows.append([_cell(f"transfer: {k.value}", HOST_FILL, VERDICT_COLOR[k], 2) for k in VerdictKind])
    if "edges" in items:
        rows.append([_edge_cell("---&gt;", EDGE_STYLE["data"]["color"], "data"),
                     _edge_cell("- - &gt;", EDGE_STYLE["async"]["color"], "async start -&gt; done"),
                     _edge_cell(". . &gt;", EDGE_STYLE["control"]["color"], "control dependency"),
                     _edge_cell("===&gt;", INPUT_READY_COLOR, "input ready", bold=True),
                     _edge_cell("===&gt;", FIRST_USE_COLOR, "first use", bold=True)])
    width = max(len(r) for r in rows)
    body = "".join("<TR>" + "".join(r) + ("<TD BORDER=\"0\"></TD>" * (width - len(r))) + "</TR>" for r in rows)
    return (f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="3" CELLPADDING="3">'
            f'<TR><TD COLSPAN="{width}" BORDER="0" ALIGN="LEFT"><B>legend</B></TD></TR>{body}</TABLE>>')


def add_legend(g: graphviz.Digraph, items: tuple[str, ...] = ("memory", "verdicts", "edges"),
               below: list[str] | tuple[str, ...] = ()) -> None:
    """The legend: one compact table node, kept under every node in ``below`` (invisible edges)."""
    g.node("legend", label=legend_label(items), shape="plaintext", style="", fontsize="9")
    for node in below:
        g.edge(node, "legend", style="invis")
