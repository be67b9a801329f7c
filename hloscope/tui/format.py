"""Small formatting helpers the widgets share (names, colours); facts come from the report."""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING

from hloscope.analysis.kinds import Direction, VerdictKind
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.hlo.model import SourceLocation
from hloscope.units import human_bytes, human_us

if TYPE_CHECKING:
    from hloscope.analysis.report import Report
    from hloscope.analysis.simulate.verdict import Verdict

VERDICT_STYLE = {
    VerdictKind.SYNC: "bold white on #bf616a",
    VerdictKind.EXPOSED: "bold #bf616a",
    VerdictKind.PARTIAL: "bold #ebcb8b",
    VerdictKind.HIDDEN: "bold #a3be8c",
    VerdictKind.UNSCHEDULED: "#81a1c1",
}


#: The mark of a name decided by bytes only (a guess): ``hloscope.render.name_words.GUESS_MARK``, kept
#: here so that the transfer table's first frame does not import every renderer.
GUESS_MARK = "?"


def checkpoint_name(t: HostTransfer) -> str:
    """The ``checkpoint_name`` of the request the moved tensor belongs to (``query_proj``; ``query_proj?``
    when only its bytes decided it, a guess), else "-" (a bare HLO file)."""
    if not t.checkpoint_name:
        return "-"
    return t.checkpoint_name + (GUESS_MARK if t.name_guessed else "")


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


def row_words(report: Report, v: Verdict) -> tuple[str, str, str, str, str, str, str, str]:
    """``v``'s row of the transfer table in its default columns (``tui.preview.COLUMNS``): transfer,
    verdict, ~exposed/step, checkpoint, dir, bytes, x/step, source."""
    t = v.transfer
    exposed = v.est_exposed_us * t.executions
    loc = report.source(v)
    return (t.instruction.name, v.verdict.value, human_us(exposed) if exposed > 0 else "-", checkpoint_name(t),
            arrow(t.direction), human_bytes(t.bytes), str(t.executions), short_source(loc) if loc else "-")
