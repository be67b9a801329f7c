"""Renderers: one interface, chosen from a registry by format name."""

from __future__ import annotations

from typing import Protocol

from hloscope.analysis.report import Report
from hloscope.errors import EXIT_UNKNOWN_NAME, HloscopeError
from hloscope.render.json_report import JsonRenderer
from hloscope.render.table import TableRenderer


class Renderer(Protocol):
    extension: str

    def render(self, report: Report) -> str: ...


RENDERERS: dict[str, Renderer] = {"table": TableRenderer(), "json": JsonRenderer()}


def get_renderer(name: str) -> Renderer:
    try:
        return RENDERERS[name]
    except KeyError:
        raise HloscopeError(f"unknown format '{name}'; choose one of: {', '.join(RENDERERS)}",
                            EXIT_UNKNOWN_NAME) from None
