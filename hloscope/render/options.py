"""Options every renderer accepts (each uses the ones that apply to it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RenderOptions:
    """label: the name a report without a file of its own is shown under (a step compiled in a
    test is shown under the test's name; the report itself is not made again)."""

    label: str | None = None
