"""Options every renderer accepts (each uses the ones that apply to it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RenderOptions:
    """verbose: add per-transfer detail (window contents) where a format has room for it.
    color: allow terminal colour (only where the output is a terminal)."""

    verbose: bool = False
    color: bool = False
