"""Fitting the text report to a terminal: its transfer table to a width, long lines wrapped, verdicts in colour.

``fit_table(headers, rows, verdicts, width, color)`` lays the transfer table out: whole
(the verdict last) when it fits in ``width`` or no width is given (a file, a pipe, the
golden files); else the verdict first, then the transfer's name, then as many other
columns as fit, in :data:`KEEP` order; the columns left out are returned per row, for
the transfer's detail lines. ``fit_lines(lines, width)`` wraps every longer line at
spaces, its continuation indented 4 more than the line (names and paths are never
broken). ``paint`` colours a verdict word with ANSI SGR codes (hidden green, partial
yellow, exposed and sync red); the caller decides whether there is a terminal to colour.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from hloscope.analysis.kinds import VerdictKind

#: SGR codes of the verdict words.
_SGR = {VerdictKind.HIDDEN: "32", VerdictKind.PARTIAL: "33", VerdictKind.EXPOSED: "31", VerdictKind.SYNC: "1;31"}
_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
#: The narrowest width laid out for; a narrower one is taken as this.
MIN_WIDTH = 40
#: Columns kept first when the table does not fit (after the verdict and the transfer), the verdict's
#: evidence first; the others go to the transfer's detail lines.
KEEP = ("~hidden us", "~xfer us", "dir", "bytes", "logical bytes", "name", "source", "x/step", "mode", "window",
        "stream", "xla us", "where", "op")
_GAP = "  "
#: A figure and its unit, kept together when a line is wrapped.
_UNIT = re.compile(r"(\d) (us|ms|s|B|KiB|MiB|GiB|TiB|GB/s|op\(s\)|compute|coll)\b")


def paint(text: str, verdict: VerdictKind, color: bool) -> str:
    """``text`` in the verdict's colour when ``color``, else as it is."""
    code = _SGR.get(verdict)
    return f"\x1b[{code}m{text}\x1b[0m" if color and code else text


def visible_len(line: str) -> int:
    """Characters a terminal shows of ``line`` (colour codes take none)."""
    return len(_ESCAPE.sub("", line))


@dataclass(frozen=True)
class FittedTable:
    """lines: the header, the rule and one line per row. moved: per row, the (header, cell) pairs left
    out of the table (empty when it is whole)."""

    lines: list[str]
    moved: list[list[tuple[str, str]]]


def _columns(headers: Sequence[str], rows: Sequence[Sequence[str]], verdicts: Sequence[VerdictKind],
             color: bool) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    at = list(headers).index("verdict")
    out = [_GAP.join(h.ljust(w) for h, w in zip(headers, widths, strict=True)),
           _GAP.join("-" * w for w in widths)]
    for r, v in zip(rows, verdicts, strict=True):
        cells = [c.ljust(w) for c, w in zip(r, widths, strict=True)]
        cells[at] = paint(r[at], v, color) + " " * (widths[at] - len(r[at]))
        out.append(_GAP.join(cells).rstrip())
    return out


def fit_table(headers: Sequence[str], rows: Sequence[Sequence[str]], verdicts: Sequence[VerdictKind],
              width: int | None, color: bool = False) -> FittedTable:
    """The transfer table in ``width`` columns (None: whole); ``headers`` hold "transfer" and "verdict"."""
    widths = {h: max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)}
    whole = sum(widths.values()) + len(_GAP) * (len(headers) - 1)
    if width is None or whole <= width:
        return FittedTable(_columns(headers, rows, verdicts, color), [[] for _ in rows])
    width = max(width, MIN_WIDTH)
    keep = {"verdict", "transfer"}
    used = widths["verdict"] + len(_GAP) + widths["transfer"]
    empty = {h for i, h in enumerate(headers) if all(r[i] == "-" for r in rows)}  # (no checkpoint names): last
    for h in sorted((h for h in KEEP if h in widths), key=lambda h: h in empty):
        if used + len(_GAP) + widths[h] <= width:
            keep.add(h)
            used += len(_GAP) + widths[h]
    order = ["verdict", "transfer", *(h for h in headers if h in keep and h not in ("verdict", "transfer"))]
    index = {h: i for i, h in enumerate(headers)}
    shown = [[r[index[h]] for h in order] for r in rows]
    moved = [[(h, r[index[h]]) for h in headers if h not in keep] for r in rows]
    return FittedTable(_columns(order, shown, verdicts, color), moved)


def moved_line(moved: Sequence[tuple[str, str]]) -> str:
    """The columns a narrow table left out, for the transfer's detail lines: ``op dynamic-slice, x/step 4``
    (an empty cell, ``-``, is left out)."""
    return ", ".join(f"{h} {cell}" for h, cell in moved if cell != "-")


def fit_lines(lines: Sequence[str], width: int | None) -> list[str]:
    """Every line longer than ``width`` wrapped at spaces, the rest indented 4 more than its first line."""
    if width is None:
        return list(lines)
    width = max(width, MIN_WIDTH)
    out: list[str] = []
    for line in lines:
        if visible_len(line) <= width:
            out.append(line)
            continue
        lead = len(line) - len(line.lstrip(" "))
        text = _UNIT.sub("\\1\N{NO-BREAK SPACE}\\2", line[lead:])  # "~0.0 us" stays on one line
        out += [part.replace("\N{NO-BREAK SPACE}", " ") for part in
                textwrap.wrap(text, width, initial_indent=" " * lead, subsequent_indent=" " * (lead + 4),
                              break_long_words=False, break_on_hyphens=False)] or [line]
    return out
