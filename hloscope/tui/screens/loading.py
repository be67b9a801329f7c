"""LoadingScreen: the first screen, drawn before anything is read or parsed.

It uses only Textual's cheapest widgets and imports nothing of the analysis, so
it appears as soon as Textual has started; the app replaces it with the
MainScreen once the worker has loaded the report (or with the ErrorScreen).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, LoadingIndicator, Static

from hloscope.tui.text import lines


class LoadingScreen(Screen[None]):
    """The header line, two empty panes (the lists, the detail) and a loading indicator."""

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label

    def compose(self) -> ComposeResult:
        yield Static(lines(f"hloscope · loading {self.label} ...", "reading, parsing and analysing in the background"),
                     id="summary")
        with Horizontal(id="loading-body"):
            with Vertical(id="loading-lists") as lists:
                lists.border_title = "transfers"
                yield LoadingIndicator(id="loading")
            with Vertical(id="loading-detail") as detail:
                detail.border_title = "detail"
        yield Static("", id="status")
        yield Footer()
