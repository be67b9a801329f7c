"""Read HLO from a file, an XLA dump directory, stdin (``-``), or a string that is either.

Contract: every failure is one :class:`HloscopeError` (a :class:`HloParseError`
for malformed text); no ``OSError`` escapes, whatever the path looks like.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.model import Module
from hloscope.hlo.parser import parse_hlo


def pick_dump_file(directory: Path) -> Path:
    """The scheduled module in an ``--xla_dump_to`` folder (largest if several),
    or ``optimized.hlo.txt`` in an ``hloscope compile`` artifact folder."""
    return _pick(directory)[0]


def _pick(directory: Path) -> tuple[Path, str]:
    """(the file to read, a note saying which of several was chosen, or "")."""
    artifact = directory / "optimized.hlo.txt"
    if artifact.is_file():
        return artifact, ""
    try:
        names = list(directory.iterdir())
    except OSError as e:
        raise HloscopeError(f"{directory}: cannot list: {e.strerror or e}", EXIT_BAD_INPUT) from None
    cands = [p for p in names if p.name.endswith("after_optimizations.txt")]
    if not cands:
        cands = [p for p in names if p.name.endswith("before_optimizations.txt")]
    if not cands:
        raise HloscopeError(f"{directory}: no '*after_optimizations.txt' (XLA dump) or 'optimized.hlo.txt' "
                            "(hloscope artifact) in this folder", EXIT_BAD_INPUT)
    chosen = max(cands, key=lambda p: (p.stat().st_size, p.name))
    note = (f"{len(cands)} modules in {directory}; reading the largest, {chosen.name} (pass a file to choose "
            "another)") if len(cands) > 1 else ""
    return chosen, note


def read_hlo_text(path: str) -> tuple[str, str]:
    """(text, display name) for a path, a dump folder, or ``-`` for stdin."""
    text, name, _ = _read(path)
    return text, name


def _read(path: str) -> tuple[str, str, tuple[str, ...]]:
    if path == "-":
        return sys.stdin.read(), "<stdin>", ()
    if not path:
        raise HloscopeError("empty path: give an HLO text file, a dump folder or '-'", EXIT_BAD_INPUT)
    p = Path(path)
    notes: tuple[str, ...] = ()
    try:
        if p.is_dir():  # raises for a name too long to look up
            p, note = _pick(p)
            notes = (note,) if note else ()
        data = p.read_bytes()
    except FileNotFoundError:
        raise HloscopeError(f"{path}: no such file or directory", EXIT_BAD_INPUT) from None
    except OSError as e:
        shown = path if len(path) <= 80 else path[:77] + "..."
        raise HloscopeError(f"{shown}: cannot read: {e.strerror or e}", EXIT_BAD_INPUT) from None
    try:
        return data.decode("utf-8"), str(p), notes
    except UnicodeDecodeError as e:
        raise HloscopeError(f"{p}: not UTF-8 text (byte {e.start}); is this an HLO text file?",
                            EXIT_BAD_INPUT) from None


def load_module(path: str) -> Module:
    """Parse the HLO at ``path`` (a file, a dump or artifact folder, or ``-``)."""
    return load_module_with_notes(path)[0]


def load_module_with_notes(path: str) -> tuple[Module, tuple[str, ...]]:
    """The module and the notes on how it was read (which file of a folder), for the views to show.
    Library code never prints; the CLI shows the notes."""
    text, name, notes = _read(path)
    module = parse_hlo(text, name)
    module.source_path = None if name == "<stdin>" else os.fspath(name)
    return module, notes


# What HLO text starts with once blanks and comments are skipped.
_LEAD_RE = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S)
_HLO_START_RE = re.compile(r"(?:HloModule|ENTRY)\b|%?[\w.\-]+\s*(?:\([^)]*\)\s*->[^{]*)?\{")


def looks_like_hlo_text(s: str) -> bool:
    """True if ``s`` is HLO text rather than a path: after blanks and comments it
    opens a module (``HloModule``, ``ENTRY``, a computation ``name {``), or it spans
    lines (no path does)."""
    start = _LEAD_RE.match(s)
    pos = start.end() if start else 0
    return _HLO_START_RE.match(s, pos) is not None or "\n" in s.strip()


def load_module_or_text(x: str) -> Module:
    """A module from HLO text or from a path (file, dump folder, ``-``), decided by content.

    Raises :class:`HloscopeError` for an empty or blank string (never read as the
    current folder) and for unreadable paths, :class:`HloParseError` for bad text."""
    if not x.strip():
        raise HloscopeError("empty input: expected HLO text or a path to an HLO file or dump folder",
                            EXIT_BAD_INPUT)
    if looks_like_hlo_text(x):
        return parse_hlo(x)
    return load_module(x)
