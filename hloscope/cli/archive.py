"""Whether a path is an nsys-jax archive: light to import (nothing but the errors), so ``hloscope tui``
asks it before its first screen without importing the analysis ``cli/analyze.py`` needs. A file that
does not open as a zip is answered from its first four bytes; a zip is read here once
(:mod:`hloscope.hlo.archive`), and every later reader takes it from there."""

from __future__ import annotations

import os

from hloscope.errors import HloscopeError

#: A zip file's first bytes (``hloscope.hlo.archive.ZIP_MAGIC``, kept here so the check imports nothing).
_ZIP_MAGIC = b"PK\x03\x04"


def is_nsys_archive(path: str) -> bool:
    """An nsys-jax archive: a .zip with the projected GPU trace inside (an unreadable zip is not;
    reading it as HLO then says why). The file is opened once: its first bytes, then, for a zip,
    the archive read from the same handle (every later reader takes it from ``hlo.archive``)."""
    if os.path.isdir(path):  # a folder is never opened as a file (it is listed once, by the loader)
        return False
    try:
        with open(path, "rb") as f:
            if f.read(4) != _ZIP_MAGIC:
                return False
            from hloscope.hlo.archive import nsys_archive  # lazy: zipfile, lzma (20 ms): for a zip only

            archive = nsys_archive(path, file=f)
    except OSError:  # a folder, a missing path: not an archive (the reader says why, if anything)
        return False
    except HloscopeError:  # a zip that cannot be read: not an archive (reading it as HLO says why)
        return False
    return archive is not None and archive.is_nsys
