"""One lookup for every registry of formats (the report's renderers, the check formats, the export
formats, the sweep and tune results): a name, or an unknown-name error (exit 3) that lists the names.

It imports no renderer, so a registry anywhere in ``render/`` reads it without loading the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from hloscope.errors import EXIT_UNKNOWN_NAME, HloscopeError

T = TypeVar("T")


def pick(name: str, reg: Mapping[str, T]) -> T:
    """``reg[name]``, or an unknown-name error listing the valid names."""
    try:
        return reg[name]
    except KeyError:
        raise HloscopeError(f"unknown format '{name}'; choose one of: {', '.join(reg)}",
                            EXIT_UNKNOWN_NAME) from None
