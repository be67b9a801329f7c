"""Small formatting helpers the widgets share (names, colours); facts come from the report."""

from __future__ import annotations

from pathlib import PurePath

from hloscope.analysis.kinds import Direction, VerdictKind
from hloscope.analysis.transfers import HostTransfer
from hloscope.hlo.model import SourceLocation

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


def short_source(loc: SourceLocation) -> str:
    """``llama.py:66``: the file's name and the line, for a table column (the detail pane has the folder)."""
    return f"{PurePath(loc.file).name or loc.file}:{loc.line}"


def source_words(loc: SourceLocation) -> str:
    """``llama.py:66 in apply_layers · /repo/workloads``: file:line first, so a narrow pane wraps
    at a space before the folder rather than inside ``llama.py:66``."""
    path = PurePath(loc.file)
    where = f"{path.name or loc.file}:{loc.line}"
    if loc.function:
        where += f" in {loc.function}"
    folder = str(path.parent) if path.name and str(path.parent) not in ("", ".") else ""
    return where + (f" · {folder}" if folder else "")


def arrow(d: Direction) -> str:
    return "D→H" if d is Direction.TO_HOST else "H→D"
