"""Options every renderer accepts (each uses the ones that apply to it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RenderOptions:
    """label: the name a report without a file of its own is shown under (a step compiled in a
    test is shown under the test's name; the report itself is not made again). width: the
    columns the text report fits in (None: whole lines, as for a file or a pipe). color: the
    text report's verdict words in colour (ANSI; for a terminal)."""

    label: str | None = None
    width: int | None = None
    color: bool = False
