"""How wide the text report is and whether it is in colour, decided from where it is written.

Width: ``COLUMNS`` when set to a number, else the terminal's width when the report goes to
one, else None (a pipe or a file: whole lines, one per transfer and one per reason, for grep
and diff). Colour (``--color``): ``always``, ``never``, or ``auto``: only on a terminal, and
not when ``NO_COLOR`` is set to anything (no-color.org) or ``TERM`` is ``dumb``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TextIO

COLOR_CHOICES = ("auto", "always", "never")


def _is_terminal(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError, OSError):  # a closed or fileless stream
        return False


def report_width(out: TextIO, environ: Mapping[str, str]) -> int | None:
    """Columns to fit the text report in (None: whole lines)."""
    columns = environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if _is_terminal(out):
        try:
            return os.get_terminal_size(out.fileno()).columns
        except (OSError, ValueError):
            return None
    return None


def report_color(out: TextIO, choice: str, environ: Mapping[str, str]) -> bool:
    """Whether the text report's verdict words are coloured."""
    if choice != "auto":
        return choice == "always"
    return _is_terminal(out) and not environ.get("NO_COLOR") and environ.get("TERM") != "dumb"
