"""Renderers: one interface, chosen from a registry by format name.

A renderer has a ``name``, a file ``extension`` and one method,
``render(report, out, options)``, which writes to the text stream ``out``:
``table``, ``json``, ``trace`` (the simulated step as Trace Event JSON) and ``pgle``
(the cost model's per-op figures as an XLA profile) and ``html`` (a fragment with an inline
SVG timeline: what a notebook shows).
Library code never prints; the CLI chooses the stream.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Protocol, TextIO, TypeVar

from hloscope.analysis.report import Report
from hloscope.errors import EXIT_UNKNOWN_NAME, HloscopeError
from hloscope.render.html import HtmlRenderer
from hloscope.render.json_report import JsonRenderer
from hloscope.render.options import RenderOptions
from hloscope.render.pgle import PgleRenderer
from hloscope.render.table import TableRenderer
from hloscope.render.trace import TraceRenderer


class Renderer(Protocol):
    name: str
    extension: str

    def render(self, report: Report, out: TextIO, options: RenderOptions) -> None: ...


T = TypeVar("T")

RENDERERS: dict[str, Renderer] = {r.name: r for r in (TableRenderer(), JsonRenderer(), TraceRenderer(),
                                                     PgleRenderer(), HtmlRenderer())}


def get_renderer(name: str) -> Renderer:
    """The report renderer called ``name``; an unknown name is an unknown-name error (exit 3)."""
    return pick(name, RENDERERS)


def pick(name: str, reg: Mapping[str, T]) -> T:
    """``reg[name]``, or an unknown-name error listing the valid names."""
    try:
        return reg[name]
    except KeyError:
        raise HloscopeError(f"unknown format '{name}'; choose one of: {', '.join(reg)}",
                            EXIT_UNKNOWN_NAME) from None


def render_to_string(name: str, report: Report, options: RenderOptions | None = None) -> str:
    buf = io.StringIO()
    get_renderer(name).render(report, buf, options or RenderOptions())
    return buf.getvalue()


__all__ = ["RENDERERS", "RenderOptions", "Renderer", "get_renderer", "pick", "render_to_string"]
