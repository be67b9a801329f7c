"""Read HLO from a file, an XLA dump directory, or stdin (``-``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hloscope.errors import EXIT_BAD_INPUT, HloParseError, HloscopeError
from hloscope.hlo.model import Module
from hloscope.hlo.parser import parse_hlo


def pick_dump_file(directory: Path) -> Path:
    """The scheduled module in an ``--xla_dump_to`` folder (largest if several),
    or ``optimized.hlo.txt`` in an ``hloscope compile`` artifact folder."""
    artifact = directory / "optimized.hlo.txt"
    if artifact.is_file():
        return artifact
    cands = [p for p in directory.iterdir() if p.name.endswith("after_optimizations.txt")]
    if not cands:
        cands = [p for p in directory.iterdir() if p.name.endswith("before_optimizations.txt")]
    if not cands:
        raise HloscopeError(f"{directory}: no '*after_optimizations.txt' (XLA dump) or 'optimized.hlo.txt' "
                            "(hloscope artifact) in this folder", EXIT_BAD_INPUT)
    chosen = max(cands, key=lambda p: (p.stat().st_size, p.name))
    if len(cands) > 1:
        print(f"hloscope: note: {len(cands)} modules in {directory}; reading the largest, {chosen.name} "
              "(pass a file to choose another)", file=sys.stderr)
    return chosen


def read_hlo_text(path: str) -> tuple[str, str]:
    """(text, display name) for a path, a dump folder, or ``-`` for stdin."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    p = Path(path)
    if p.is_dir():
        p = pick_dump_file(p)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise HloscopeError(f"{path}: no such file or directory", EXIT_BAD_INPUT) from None
    except OSError as e:
        raise HloscopeError(f"{path}: cannot read: {e.strerror or e}", EXIT_BAD_INPUT) from None
    try:
        return data.decode("utf-8"), str(p)
    except UnicodeDecodeError as e:
        raise HloscopeError(f"{p}: not UTF-8 text (byte {e.start}); is this an HLO text file?",
                            EXIT_BAD_INPUT) from None


def load_module(path: str) -> Module:
    text, name = read_hlo_text(path)
    try:
        module = parse_hlo(text, name)
    except HloParseError:
        raise
    module.source_path = None if name == "<stdin>" else os.fspath(name)
    return module
