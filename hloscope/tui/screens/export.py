"""ExportScreen (``e``): choose what to export and the one file to write."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from hloscope.analysis.simulate.verdict import Verdict
from hloscope.tui.export import KINDS, ExportKind, available, default_path
from hloscope.tui.load import Loaded
from hloscope.tui.text import plain

_WHY_MISSING = {"trace": "no simulated step: the module is not scheduled", "svg": "no DOT renderer",
                "dot": "no DOT renderer", "json": ""}


class ExportScreen(ModalScreen[tuple[ExportKind, str] | None]):
    """Pick a kind (the path follows it), edit the path, Enter writes."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, loaded: Loaded, verdict: Verdict | None) -> None:
        super().__init__()
        self.loaded = loaded
        self.verdict = verdict
        self.kinds = available(loaded)
        self.kind = self.kinds[0]

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box"):
            yield Label("export: choose what, then Enter in the path to write one file")
            yield OptionList(*[Option(plain(k.title)) for k in self.kinds], id="export-kinds")
            yield Input(value=default_path(self.loaded, self.kind, self.verdict), id="export-path")
            yield Label(plain(f"a relative path is written in {Path.cwd()}"), id="export-folder")
            missing = [f"{k.key} ({_WHY_MISSING[k.key]})" for k in KINDS if k not in self.kinds]
            if missing:
                yield Label(plain(f"not offered here: {', '.join(missing)}"), id="export-missing")

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self.kind = self.kinds[event.option_index]
        self.query_one(Input).value = default_path(self.loaded, self.kind, self.verdict)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss((self.kind, event.value.strip()))
