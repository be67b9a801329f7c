"""Renderers: one interface, chosen from a registry by format name.

A renderer has a ``name``, a file ``extension`` and one method,
``render(report, out, options)``, which writes to the text stream ``out``:
``table``, ``json``, ``trace`` (the simulated step as Trace Event JSON) and ``pgle``
(the cost model's per-op figures as an XLA profile) and ``html`` (a fragment with an inline
SVG timeline: what a notebook shows).
Library code never prints; the CLI chooses the stream.

Which module is which (docs/passes.md, "Where the words live"):

- a *format* writes one whole output: ``table``, ``json_report``, ``trace``, ``pgle``, ``html``,
  ``explorer``; the rooms ``check/``, ``dot/`` and ``search/`` hold the check formats, the
  diagrams and the sweep/tune results;
- ``<facts>_text.py`` is one section of the report for one family of facts: the lines the text
  report prints for it (``*_lines``) and, where the JSON has it, its value (``*_dict``);
- ``<facts>_words.py`` holds words only: the sentences, clauses and cells for one family of
  facts, with no section of its own, read by several views (the table, the JSON ``why``, check
  messages, the TUI, diagrams): ``verdict_words`` (a verdict's why), ``intent_words``,
  ``name_words``, ``xla_words``, ``backend_words``;
- ``registry`` (``pick``: a name from any registry of formats), ``options`` (``RenderOptions``)
  and ``fit`` (the text report fitted to a terminal) serve them all and import no renderer.
"""

from __future__ import annotations

import io
from typing import Protocol, TextIO

from hloscope.analysis.report import Report
from hloscope.render.html import HtmlRenderer
from hloscope.render.json_report import JsonRenderer
from hloscope.render.options import RenderOptions
from hloscope.render.pgle import PgleRenderer
from hloscope.render.registry import pick
from hloscope.render.table import TableRenderer
from hloscope.render.trace import TraceRenderer


class Renderer(Protocol):
    name: str
    extension: str

    def render(self, report: Report, out: TextIO, options: RenderOptions) -> None: ...


RENDERERS: dict[str, Renderer] = {r.name: r for r in (TableRenderer(), JsonRenderer(), TraceRenderer(),
                                                     PgleRenderer(), HtmlRenderer())}


def get_renderer(name: str) -> Renderer:
    """The report renderer called ``name``; an unknown name is an unknown-name error (exit 3)."""
    return pick(name, RENDERERS)


def render_to_string(name: str, report: Report, options: RenderOptions | None = None) -> str:
    buf = io.StringIO()
    get_renderer(name).render(report, buf, options or RenderOptions())
    return buf.getvalue()


__all__ = ["RENDERERS", "RenderOptions", "Renderer", "get_renderer", "render_to_string"]
