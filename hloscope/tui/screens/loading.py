"""LoadingScreen: the first screen, drawn before anything is read or parsed.

It uses only Textual's cheapest widgets and imports nothing of the analysis, so
it appears as soon as Textual has started; the app replaces it with the
MainScreen once the worker has loaded the report (or with the ErrorScreen).
Before that, the rows of a first pass in a child process (``tui.preview``) may replace its indicator:
the transfer table with its verdicts, read-only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import widgets
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, LoadingIndicator, Static

from hloscope.tui.preview import COLUMNS, PreviewRows
from hloscope.tui.text import lines, plain

if TYPE_CHECKING:
    from textual.widgets import DataTable

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

    def show_preview(self, preview: PreviewRows) -> None:
        """The transfer table's rows with their verdicts, in place of the indicator, until the main screen."""
        # widgets.DataTable: textual loads it on first access, not before the first frame (tests/tui/test_app.py)
        table: DataTable[Text] = widgets.DataTable(id="preview", cursor_type="row", zebra_stripes=True)
        lists = self.query_one("#loading-lists")
        lists.border_title = f"transfers {len(preview.rows)}"
        self.query_one("#summary", Static).update(lines(
            f"hloscope · {self.label}", f"{preview.verdicts} · the schedule, memory and details follow"))
        self.query_one(_Indicator).remove()
        lists.mount(table)
        table.add_columns(*COLUMNS)
        for (name, verdict, *rest), style in zip(preview.rows, preview.styles, strict=True):
            table.add_row(plain(name), Text(verdict, style=style), *(plain(c) for c in rest))
