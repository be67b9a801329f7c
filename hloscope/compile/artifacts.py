"""Write a compile's artifact folder atomically: all files or none.

Files are written into a hidden sibling folder, then renamed into place, so an
interrupted or failed run never leaves a folder that looks complete. An existing
folder is replaced only if it is an earlier hloscope artifact (has
``manifest.json`` with our schema) or empty.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError

MANIFEST_SCHEMA = "hloscope.artifact/1"


def _is_ours(path: Path) -> bool:
    try:
        return bool(json.loads((path / "manifest.json").read_text()).get("schema") == MANIFEST_SCHEMA)
    except (OSError, ValueError, AttributeError):
        return False


def write_artifacts(out_dir: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (name -> text) as the folder ``out_dir``; returns it."""
    out_dir = out_dir.resolve()
    if out_dir.exists() and not out_dir.is_dir():
        raise HloscopeError(f"{out_dir}: exists and is not a folder", EXIT_BAD_INPUT)
    if out_dir.is_dir() and any(out_dir.iterdir()) and not _is_ours(out_dir):
        raise HloscopeError(f"{out_dir}: folder exists and is not an hloscope artifact; choose another --out",
                            EXIT_BAD_INPUT)
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    except OSError as e:
        raise HloscopeError(f"{out_dir}: cannot create: {e.strerror or e}", EXIT_BAD_INPUT) from None
    try:
        for name, text in files.items():
            (tmp / name).write_text(text)
        if out_dir.exists():
            old = out_dir.with_name(f".{out_dir.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            out_dir.rename(old)
            tmp.rename(out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out_dir)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise HloscopeError(f"{out_dir}: cannot write artifacts: {e.strerror or e}", EXIT_BAD_INPUT) from None
    return out_dir


def manifest(result: Any, extra: dict[str, Any]) -> str:
    return json.dumps({
        "schema": MANIFEST_SCHEMA,
        "target": result.target,
        "devices": result.devices,
        "mesh": result.mesh_shape,
        "xla_options": result.options,
        "versions": result.versions,
        "compile_seconds": round(result.compile_seconds, 3),
        "memory": result.memory,
        "tensor_names": getattr(result, "tensor_names", []),
        **extra,
    }, indent=2, default=str) + "\n"
