"""Messages the TUI's widgets and workers post; screens and the app handle them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:  # kept off the import path of the first screen
    from hloscope.analysis.simulate.verdict import Verdict
    from hloscope.hlo.model import Instruction
    from hloscope.tui.load import Loaded
    from hloscope.tui.preview import PreviewRows


@dataclass
class ReportReady(Message):
    """The worker finished loading and analyzing."""

    loaded: Loaded


@dataclass
class PreviewReady(Message):
    """The first pass in a child process sent the transfer table's rows (``tui.preview``), before the report
    (None: it failed, or was stopped, and sent none)."""

    rows: PreviewRows | None


@dataclass
class MarginsReady(Message):
    """The background worker measured the loaded report's margins and marginal costs
    (``report.margins``, cached on the report): the views that show them redraw."""


@dataclass
class LoadFailed(Message):
    """The worker could not load the input; ``message`` is one line.

    second: it was the second schedule of a compare (``--compare`` or ``c``): the
    first stays open and the failure is a toast, not the error screen and exit code.
    """

    message: str
    exit_code: int
    second: bool = False


@dataclass
class TransferHighlighted(Message):
    """The cursor of a transfer list is on ``verdict``."""

    verdict: Verdict


@dataclass
class TransferChosen(Message):
    """The user chose a transfer (Enter): show its window in the schedule."""

    verdict: Verdict


@dataclass
class InstructionHighlighted(Message):
    """The schedule's cursor is on ``instruction``."""

    instruction: Instruction


@dataclass
class GoTo(Message):
    """Show instruction ``name`` of ``computation`` (navigation; recorded in history)."""

    computation: str
    name: str | None = None
