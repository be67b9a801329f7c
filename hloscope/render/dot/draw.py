"""Diagrams of transfers, dependencies, schedules and calls: DOT, SVG and PNG.

The Python API of ``hloscope dot`` (docs/diagrams.md). Four views of a
:class:`Report`, each a ``graphviz.Digraph`` with a legend:

- ``transfer_graph(report, name, radius=1)``: a transfer's start and done, its
  window in schedule order, ``radius`` hops of producers and consumers, and the
  input-ready / first-use hints as highlighted edges;
- ``computation_graph(report, name)``: the dependency graph of one computation
  (fusions and loops as single nodes, loops with trip counts);
- ``schedule_graph(report, name)``: one computation's schedule on lanes
  (compute, host link each way, collectives), async spans as dashed edges;
- ``calls_graph(report)``: the call graph with trip counts and offloaded bytes.

``render_view(report, view, out)`` is the one call for a whole export (the CLI
and the TUI use it): ``out`` is a path whose extension picks the format, or a
bare format name (``dot``, ``svg``, ``png``) to get the bytes back. The DOT text
is deterministic; SVG and PNG come from :mod:`hloscope.render.dot.run`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import graphviz

from hloscope.analysis.report import Report
from hloscope.errors import EXIT_BAD_INPUT, EXIT_UNKNOWN_NAME, HloscopeError
from hloscope.render.dot.run import DEFAULT_TIMEOUT_S, Rendered, available_renderers, render_source
from hloscope.render.dot.views import (
    DEFAULT_MAX_NODES,
    DEFAULT_RADIUS,
    DEFAULT_SCHEDULE_ROWS,
    DEFAULT_TRANSFER_NODES,
    Diagram,
    calls_view,
    computation_view,
    computations_hint,
    find_transfer,
    find_transfers,
    schedule_view,
    transfer_view,
    transfers_hint,
)

VIEWS = ("transfer", "computation", "schedule", "calls")
FORMATS = ("dot", "svg", "png")
EXTENSIONS = {".dot": "dot", ".gv": "dot", ".svg": "svg", ".png": "png"}


def transfer_graph(report: Report, name: str, radius: int = DEFAULT_RADIUS,
                   max_nodes: int = DEFAULT_MAX_NODES) -> graphviz.Digraph:
    """The window of the transfer(s) called ``name`` (checkpoint, instruction or op_name);
    a checkpoint name of several transfers draws one panel each."""
    return transfer_view(report, name, radius, max_nodes).graph


def computation_graph(report: Report, name: str, max_nodes: int = DEFAULT_MAX_NODES) -> graphviz.Digraph:
    """The dependency graph of computation ``name``."""
    return computation_view(report, name, max_nodes).graph


def schedule_graph(report: Report, name: str, max_nodes: int | None = None,
                   first: int = 0) -> graphviz.Digraph:
    """The schedule of computation ``name`` on lanes, from position ``first``
    (at most ``max_nodes`` ops, default :data:`DEFAULT_SCHEDULE_ROWS`)."""
    return schedule_view(report, name, max_nodes, first).graph


def calls_graph(report: Report, max_nodes: int = DEFAULT_MAX_NODES) -> graphviz.Digraph:
    """The call graph with executions, trip counts and offloaded bytes."""
    return calls_view(report, max_nodes).graph


def build_view(report: Report, view: str, name: str | None = None, *, radius: int = DEFAULT_RADIUS,
               max_nodes: int | None = None, first: int = 0) -> Diagram:
    """The diagram of ``view`` (one of :data:`VIEWS`), with the notes on what was cut.

    ``max_nodes`` None: :data:`DEFAULT_SCHEDULE_ROWS` for a schedule, :data:`DEFAULT_TRANSFER_NODES` for a
    transfer, :data:`DEFAULT_MAX_NODES` otherwise."""
    if max_nodes is not None and max_nodes < 1:
        raise HloscopeError(f"--max-nodes must be at least 1, not {max_nodes}", EXIT_BAD_INPUT)
    if radius < 0:
        raise HloscopeError(f"--radius must be 0 or more, not {radius}", EXIT_BAD_INPUT)
    if view not in VIEWS:
        raise HloscopeError(f"unknown view '{view}'; choose one of: {', '.join(VIEWS)}", EXIT_UNKNOWN_NAME)
    if view == "schedule":
        if name is None:
            raise HloscopeError(f"--schedule needs a computation name; {computations_hint(report)}",
                                EXIT_BAD_INPUT)
        return schedule_view(report, name, max_nodes, first)
    limit = DEFAULT_MAX_NODES if max_nodes is None else max_nodes
    if view == "calls":
        return calls_view(report, limit)
    if view == "computation":
        if name is None:
            raise HloscopeError(f"--computation needs a name; {computations_hint(report)}", EXIT_BAD_INPUT)
        return computation_view(report, name, limit)
    if name is None:
        raise HloscopeError(f"--transfer needs a name; {transfers_hint(report)}", EXIT_BAD_INPUT)
    return transfer_view(report, name, radius, DEFAULT_TRANSFER_NODES if max_nodes is None else max_nodes)


def format_for(out: str | Path | None, fmt: str | None = None) -> str:
    """The output format: ``fmt`` if given, else from the path's extension, else ``dot``."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise HloscopeError(f"unknown format '{fmt}'; choose one of: {', '.join(FORMATS)}",
                                EXIT_UNKNOWN_NAME)
        return fmt
    if out is None or str(out) == "-":
        return "dot"
    if str(out) in FORMATS:
        return str(out)
    ext = Path(out).suffix.lower()
    if ext not in EXTENSIONS:
        raise HloscopeError(f"cannot tell the format of '{out}' from its extension; name it "
                            f"{', '.join(EXTENSIONS)} or pass --format {'|'.join(FORMATS)}", EXIT_BAD_INPUT)
    return EXTENSIONS[ext]


def render_dot(graph: graphviz.Digraph | str, fmt: str = "svg", renderer: str = "auto",
               timeout_s: float = DEFAULT_TIMEOUT_S) -> Rendered:
    """Render a graph (or DOT text) to ``svg`` or ``png`` bytes with ``dot`` or ``graphviz-pure``."""
    source = graph if isinstance(graph, str) else graph.source
    return render_source(source, fmt, renderer, timeout_s)


@dataclass
class ViewResult:
    """What :func:`render_view` produced.

    data: the DOT text (UTF-8) or image bytes. format: ``dot``, ``svg`` or ``png``.
    path: where it was written (None when ``out`` was a format name). renderer /
    seconds: who rendered an image and how long it took (None / 0 for DOT).
    notes: what the view cut or left out.
    """

    data: bytes
    format: str
    path: Path | None
    renderer: str | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


def render_view(report: Report, view: str, out: str | Path, name: str | None = None, *,
                fmt: str | None = None, radius: int = DEFAULT_RADIUS, max_nodes: int | None = None,
                first: int = 0, renderer: str = "auto", timeout_s: float = DEFAULT_TIMEOUT_S) -> ViewResult:
    """Build ``view`` and render it: to the file ``out`` (format from ``fmt`` or its
    extension), or, when ``out`` is ``dot``/``svg``/``png``, to bytes only."""
    to_file = str(out) not in FORMATS
    fmt = format_for(out, fmt) if to_file else str(out)
    diagram = build_view(report, view, name, radius=radius, max_nodes=max_nodes, first=first)
    if fmt == "dot":
        result = ViewResult(diagram.graph.source.encode("utf-8"), fmt, None, notes=diagram.notes)
    else:
        r = render_dot(diagram.graph, fmt, renderer, timeout_s)
        result = ViewResult(r.data, fmt, None, r.renderer, r.seconds, diagram.notes)
    if to_file:
        path = Path(out)
        try:
            path.write_bytes(result.data)
        except OSError as e:
            raise HloscopeError(f"{out}: cannot write: {e.strerror or e}", EXIT_BAD_INPUT) from None
        result.path = path
    return result


__all__ = ["DEFAULT_SCHEDULE_ROWS", "EXTENSIONS", "FORMATS", "VIEWS", "Diagram", "ViewResult",
           "available_renderers", "build_view", "calls_graph", "computation_graph", "find_transfer",
           "find_transfers", "format_for", "render_dot", "render_view",
           "schedule_graph", "transfer_graph"]
