"""Export what the TUI shows: the report as JSON, the timeline as a trace, a transfer's window as DOT/SVG.

Each export writes exactly one file, at the path the user typed. ``available``
offers what this report and installation can write: the trace only when the step
was simulated (``report.timeline``), DOT/SVG only with ``hloscope.render.dot.draw``.
The trace is the simulated step in Trace Event JSON
(``hloscope.render.trace.TraceRenderer``, as ``hloscope analyze --trace``), with
the report's verdicts on the transfer slices.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from hloscope.analysis.simulate.verdict import Verdict
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.render import get_renderer, render_to_string
from hloscope.render.options import RenderOptions
from hloscope.tui.load import Loaded


@dataclass(frozen=True)
class ExportKind:
    key: str
    title: str
    extension: str
    needs_transfer: bool = False


KINDS = (
    ExportKind("json", "report as JSON", ".json"),
    ExportKind("trace", "timeline as a trace file (Perfetto)", ".trace.json"),
    ExportKind("svg", "selected transfer's window as SVG", ".svg", needs_transfer=True),
    ExportKind("dot", "selected transfer's window as DOT", ".dot", needs_transfer=True),
)


def available(loaded: Loaded) -> list[ExportKind]:
    """The kinds that can be written for ``loaded`` here."""
    have_dot = importlib.util.find_spec("hloscope.render.dot.draw") is not None
    can = {"json": True, "trace": loaded.report.timeline is not None, "svg": have_dot, "dot": have_dot}
    return [k for k in KINDS if can[k.key]]


def default_path(loaded: Loaded, kind: ExportKind, verdict: Verdict | None) -> str:
    stem = loaded.report.module.name.replace("/", "_") or "module"
    if kind.needs_transfer and verdict is not None:
        stem += "." + verdict.transfer.instruction.name
    return f"hloscope-{stem}{kind.extension}"


def export(loaded: Loaded, kind: ExportKind, path: str, verdict: Verdict | None) -> Path:
    """Write ``kind`` to ``path``; returns the path. One-line :class:`HloscopeError` on failure."""
    out = Path(path).expanduser()
    if not path.strip():
        raise HloscopeError("no path given", EXIT_BAD_INPUT)
    if out.is_dir():
        raise HloscopeError(f"{out}: is a folder; give a file name", EXIT_BAD_INPUT)
    if kind.needs_transfer:
        if verdict is None:
            raise HloscopeError("select a transfer first (Transfers tab)", EXIT_BAD_INPUT)
        from hloscope.render.dot.draw import render_view  # lazy: graphviz, only for a diagram

        render_view(loaded.report, "transfer", out, verdict.transfer.instruction.name, fmt=kind.key)
        return out
    try:
        with open(out, "w", encoding="utf-8") as f:
            if kind.key == "trace":
                f.write(trace_text(loaded))
            else:
                get_renderer(kind.key).render(loaded.report, f, RenderOptions())
    except OSError as e:
        raise HloscopeError(f"{out}: cannot write: {e.strerror or e}", EXIT_BAD_INPUT) from None
    return out


def trace_text(loaded: Loaded) -> str:
    """The simulated step as Trace Event JSON, transfer slices labelled with the report's verdicts."""
    report = loaded.report
    if report.timeline is None:
        raise HloscopeError("no simulated step to export (the module is not scheduled)", EXIT_BAD_INPUT)
    return render_to_string("trace", report)
