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

#: Seconds between two frames of the loading animation (Textual's LoadingIndicator draws 16 a
#: second). Each frame takes the GIL from the load worker: at 16 a second the 32-layer benchmark
#: module's load took ~80 ms more process CPU (best of 5, tmux) than at 4.
FRAME_S = 0.25


class _Indicator(LoadingIndicator):
    """Textual's loading indicator, drawn FRAME_S apart."""

    def on_mount(self) -> None:
        # after LoadingIndicator's own mount handler (which sets 1/16 s) has run
        self.call_later(self._slow_down)

    def _slow_down(self) -> None:
        self.auto_refresh = FRAME_S


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
                yield _Indicator(id="loading")
            with Vertical(id="loading-detail") as detail:
                detail.border_title = "detail"
        yield Static("", id="status")
        yield Footer()
