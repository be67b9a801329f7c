"""Whether a path is an nsys-jax archive: light to import (zipfile only), so ``hloscope tui``
asks it before its first screen without importing the analysis ``cli/analyze.py`` needs."""

from __future__ import annotations


def is_nsys_archive(path: str) -> bool:
    """An nsys-jax archive: a .zip with the projected GPU trace inside."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            return "nvtx_gpu_proj_trace/trace.parquet" in z.namelist()
    except (OSError, zipfile.BadZipFile):
        return False
