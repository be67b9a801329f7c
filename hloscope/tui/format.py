"""Small formatting helpers the widgets share (names, colours); facts come from the report."""

from __future__ import annotations

from hloscope.analysis.kinds import Direction, VerdictKind
from hloscope.analysis.transfers import HostTransfer

VERDICT_STYLE = {
    VerdictKind.SYNC: "bold white on #bf616a",
    VerdictKind.EXPOSED: "bold #bf616a",
    VerdictKind.PARTIAL: "bold #ebcb8b",
    VerdictKind.HIDDEN: "bold #a3be8c",
    VerdictKind.UNSCHEDULED: "#81a1c1",
}


def checkpoint_name(t: HostTransfer) -> str:
    """The user's ``checkpoint_name`` of the moved tensor (``query_proj``), else "-" (a bare HLO file)."""
    return t.checkpoint_name or "-"


def checkpoint_label(t: HostTransfer) -> str:
    """The checkpoint name with the tensor's role when known: ``query_proj (Q projection)``."""
    return checkpoint_name(t) + (f" ({t.role})" if t.role else "")


def arrow(d: Direction) -> str:
    return "D→H" if d is Direction.TO_HOST else "H→D"
