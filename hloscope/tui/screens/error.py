"""ErrorScreen: the input could not be loaded; the message is one line, q leaves."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from hloscope.tui.text import plain


class ErrorScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("q,escape,enter", "app.quit", "Quit")]

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def compose(self) -> ComposeResult:
        with Vertical(id="error-box"):
            yield Static("hloscope could not open this input", id="error-title")
            yield Static(plain(self.message), id="error-message")  # holds a path and the parser's text
            yield Static("press q to quit", id="error-hint")
        yield Footer()
