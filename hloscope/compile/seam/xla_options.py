"""The XLA options of a deviceless compile: ``--xla-flag`` text, files they name, the dump folder.

:func:`parse_flag` reads one ``name=value``; :func:`refuse_missing_files` stops an option that
names a missing file; :func:`dump_folder` is where XLA dumps (the user's ``xla_dump_to``, kept,
or a scratch folder) and :func:`dumped` lists what this compile wrote there.
"""

from __future__ import annotations

import glob
import os
import re
import tempfile
from typing import Any

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError

#: XLA options for the scheduling knobs the sweep varies (the scheduler's: hloscope.compile.cuda.scheduler).
PIPELINED_OFFLOAD_FLAG = "xla_gpu_enable_pipelined_host_offloading"

#: XLA options whose value names a file (or folder) the compile reads: the compile cache's key
#: holds its contents, since the same path with a new profile is a different compile.
FILE_OPTIONS = ("xla_gpu_pgle_profile_file_or_directory_path",)


def parse_flag(text: str) -> tuple[str, Any]:
    """``--xla_foo=true`` / ``xla_foo=3`` -> ("xla_foo", True / 3)."""
    name, eq, value = text.lstrip("-").partition("=")
    if not name or not re.fullmatch(r"[a-z0-9_]+", name):
        raise HloscopeError(f"bad XLA flag '{text}': expected name=value", EXIT_BAD_INPUT)
    if not eq:
        return name, True
    low = value.lower()
    if low in ("true", "false"):
        return name, low == "true"
    if re.fullmatch(r"-?\d+", value):
        return name, int(value)
    if re.fullmatch(r"-?\d+\.\d*", value):
        return name, float(value)
    return name, value


def refuse_missing_files(options: dict[str, Any]) -> None:
    """An XLA option that names a file the compile reads must name one: XLA itself ignores a
    missing profile without a word, and the compile would look scheduled with it."""
    for name in FILE_OPTIONS:
        value = options.get(name)
        if value is not None and not os.path.exists(str(value)):
            raise HloscopeError(f"--xla-flag {name}={value}: no such file or folder", EXIT_BAD_INPUT)


def dump_folder(options: dict[str, Any]) -> str:
    """Where XLA dumps: the folder ``--xla-flag xla_dump_to=DIR`` names (created, and kept), else a
    scratch folder removed after the compile. A DIR that is a file, or cannot be made, is one line (exit 2)."""
    given = options.get("xla_dump_to")
    if given is None:
        return tempfile.mkdtemp(prefix="hloscope-dump-")
    if not isinstance(given, str) or not given:
        raise HloscopeError("--xla-flag xla_dump_to=DIR: DIR must be a folder name", EXIT_BAD_INPUT)
    if os.path.exists(given) and not os.path.isdir(given):
        raise HloscopeError(f"--xla-flag xla_dump_to={given}: names a file, not a folder", EXIT_BAD_INPUT)
    try:
        os.makedirs(given, exist_ok=True)
    except OSError as e:
        raise HloscopeError(f"--xla-flag xla_dump_to={given}: cannot make the folder: {e.strerror or e}",
                            EXIT_BAD_INPUT) from None
    return given


def dumped(dump: str, pattern: str, since: float) -> list[str]:
    """Files of the dump folder matching ``pattern`` written by this compile (modified at or after
    ``since``: a folder the user named may hold earlier dumps), in name order."""
    return sorted(f for f in glob.glob(os.path.join(dump, pattern)) if os.path.getmtime(f) >= since - 1)
