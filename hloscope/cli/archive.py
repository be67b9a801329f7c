"""Whether a path is an nsys-jax archive: light to import (zipfile only), so ``hloscope tui``
asks it before its first screen without importing the analysis ``cli/analyze.py`` needs. The
archive is read here once (:mod:`hloscope.hlo.archive`); every later reader takes it from there."""

from __future__ import annotations

from hloscope.errors import HloscopeError
from hloscope.hlo.archive import nsys_archive


def is_nsys_archive(path: str) -> bool:
    """An nsys-jax archive: a .zip with the projected GPU trace inside (an unreadable zip is not;
    reading it as HLO then says why)."""
    try:
        archive = nsys_archive(path)
    except HloscopeError:
        return False
    return archive is not None and archive.is_nsys
