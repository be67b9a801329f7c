"""SearchScreen (``/``): find an instruction by name, opcode, checkpoint name or op_name."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from hloscope.tui.search import Hit, SearchIndex
from hloscope.tui.text import plain


class SearchScreen(ModalScreen[Hit | None]):
    """Type to filter; Enter (or a click) jumps to the instruction; Escape closes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Close"),
        Binding("down", "focus_results", "Results", show=False),
    ]

    def __init__(self, index: SearchIndex, query: str = "") -> None:
        super().__init__()
        self.index = index
        self.query_text = query
        self.hits: list[Hit] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="search-box"):
            yield Input(value=self.query_text, placeholder="name, opcode, checkpoint name or op_name",
                        id="search-input")
            yield Label("", id="search-count")
            yield OptionList(id="search-results")

    def on_mount(self) -> None:
        self.query_one(Input).focus()
        if self.query_text:
            self._update(self.query_text)

    def on_input_changed(self, event: Input.Changed) -> None:
        self._update(event.value)

    def _update(self, text: str) -> None:
        hits, total = self.index.find(text)
        self.hits = hits
        ol = self.query_one(OptionList)
        ol.clear_options()
        ol.add_options([Option(plain(h.label)) for h in hits])  # op_name metadata is data, not markup
        shown = f" (first {len(hits)})" if total > len(hits) else ""
        self.query_one("#search-count", Label).update(f"{total} match(es){shown} in {len(self.index)} instructions"
                                                      if text.strip() else "")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if self.hits:
            self.dismiss(self.hits[0])

    def action_focus_results(self) -> None:
        """Down from the box: the first result is highlighted, so Enter opens it (one press, not two)."""
        ol = self.query_one(OptionList)
        if ol.option_count and ol.highlighted is None:
            ol.highlighted = 0
        ol.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.hits[event.option_index])
