"""HelpScreen (``?``): every key binding, in one table."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

#: (keys, what they do), in the order a newcomer needs them.
KEYS = (
    ("1 / 2 / 3 / 4", "Transfers, Schedule, Computations, Offloads asked (what the step asked for) tabs"),
    ("Tab", "move between the list and the detail pane"),
    ("up/down, PgUp/PgDn, Home/End", "move the cursor (also j / k)"),
    ("Enter", "on a transfer: open its window in the schedule; on a loop: expand its body; "
              "in the detail pane: go to the operand, user or partner"),
    ("right / left", "expand / collapse a while loop's body in the schedule"),
    ("n / N", "next / previous op inside the selected transfer's window"),
    ("s", "Transfers: cycle the sort (schedule, exposed time, bytes, verdict, name, marginal cost, margin)"),
    ("v", "Transfers: cycle the verdict filter"),
    ("d", "Transfers: cycle the direction filter"),
    ("m", "Transfers: exposed time and source, or blame, marginal cost and margin"),
    ("/", "search instructions by name, opcode, checkpoint name or op_name"),
    ("[ or Backspace / ]", "back / forward in the places visited"),
    ("c", "compare with another schedule (a file or folder)"),
    ("e", "export: report JSON, transfer window DOT/SVG, timeline trace"),
    ("Ctrl+P", "command palette"),
    ("?", "this help"),
    ("q, Ctrl+C", "quit"),
)


def keys_table() -> Table:
    t = Table(title="hloscope tui: keys", show_header=False, box=None, padding=(0, 2))
    t.add_column(style="bold #88c0d0", no_wrap=True)
    t.add_column()
    for k, what in KEYS:
        t.add_row(k, what)
    return t


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "dismiss(None)", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(keys_table())
            yield Static("\nThe mouse works too: click a row, a tab or a link. Estimates (~) come from the cost "
                         "model (docs/cost-model.md). Escape closes this.", id="help-foot")
