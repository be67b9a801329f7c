"""Read HLO from a file, an XLA dump directory, stdin (``-``), or a string that is either.

Contract: every failure is one :class:`HloscopeError` (a :class:`HloParseError`
for malformed text); no ``OSError`` escapes, whatever the path looks like.
Empty and binary input are worded by :func:`sniff_bytes`, the one wording every
reader uses (analyze, check, dot, tui). A parse error at the end of text that
does not end its last computation says the file looks truncated. Reading ``-``
from a terminal first says so on standard error (nothing is printed otherwise).
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from hloscope.errors import EXIT_BAD_INPUT, HloParseError, HloscopeError
from hloscope.hlo.archive import PROTO_DUMPS, ZIP_MAGIC, known_archive, nsys_archive
from hloscope.hlo.dump_folder import BEFORE_SUFFIX, OPTIMIZED_SUFFIXES, DumpFolder, Rank, list_modules, select
from hloscope.hlo.folders import OPTIMIZED_FILE
from hloscope.hlo.hloproto import hlo_proto_to_text, looks_like_hlo_proto, parse_hlo_proto, read_maybe_xz
from hloscope.hlo.model import Module
from hloscope.hlo.parser import parse_hlo


def pick_dump_file(directory: Path, module: str | None = None) -> Path:
    """The step's module in an ``--xla_dump_to`` folder (``hloscope.hlo.dump_folder``; ``module``: the
    one of that name or id), or ``optimized.hlo.txt`` in an ``hloscope compile`` artifact folder."""
    return _pick(directory, module)[0]


def pick_module_file(path: str, module: str) -> Path:
    """The file of the module ``module`` names in the XLA dump folder ``path`` (``--module``)."""
    _need_folder(path, module)
    return _pick(Path(path), module)[0]


def _need_folder(path: str, module: str) -> None:
    if path == "-" or not Path(path).is_dir():
        raise HloscopeError(f"--module {module}: {path} is not a folder; --module chooses among the modules of an "
                            "XLA dump folder", EXIT_BAD_INPUT)


_RANK_WORDS = {Rank.HOST: "it moves data to or from host memory",
               Rank.TRAINING: "no module moves data to or from host memory; it holds a gradient",
               Rank.USER: "no module moves data to or from host memory or holds a gradient",
               Rank.OTHER: "no module moves data to or from host memory or holds a gradient"}


def _pick(directory: Path, module: str | None = None) -> tuple[Path, str, DumpFolder | None]:
    """(the file to read, a note saying which of several was chosen and why or "", the dump folder
    listed once, None for an artifact folder)."""
    artifact = directory / OPTIMIZED_FILE
    if artifact.is_file():
        if module:
            raise HloscopeError(f"{directory}: an hloscope artifact folder holds one module; --module chooses "
                                "among the modules of an XLA dump folder", EXIT_BAD_INPUT)
        return artifact, "", None
    try:
        folder = DumpFolder.list(directory)
    except OSError as e:
        raise HloscopeError(f"{directory}: cannot list: {e.strerror or e}", EXIT_BAD_INPUT) from None
    names = folder.files
    cands = [p for p in names if p.name.endswith(OPTIMIZED_SUFFIXES)]
    if not cands:
        cands = [p for p in names if p.name.endswith(_PROTO_DUMPS)]
    if not cands:
        cands = [p for p in names if p.name.endswith(BEFORE_SUFFIX)]
    if not cands:
        raise HloscopeError(f"{directory}: no '*after_optimizations.txt' (XLA dump) or 'optimized.hlo.txt' "
                            "(hloscope artifact) in this folder", EXIT_BAD_INPUT)
    modules = list_modules(folder, cands)
    chosen, alike = select(directory, modules, module)
    if module or len(modules) == 1:
        return chosen.path, "", folder
    note = f"{len(modules)} modules in {directory}; reading {chosen.label}: {_RANK_WORDS[chosen.rank]}"
    if alike:
        note += f" (so {'does' if len(alike) == 1 else 'do'} {', '.join(m.label for m in alike)}; the largest is read)"
    return chosen.path, note + "; --module NAME reads another", folder


_PROTO_DUMPS = PROTO_DUMPS


def read_archive_module(path: Path) -> tuple[bytes, str, tuple[str, ...]]:
    """(HloProto bytes, display name, notes) of the optimized module in an nsys-jax archive
    (``dump/*after_optimizations.hlo.pb.xz``): the largest, as in a dump folder."""
    archive = nsys_archive(path)
    if archive is None:
        raise HloscopeError(f"{path}: not a .zip archive", EXIT_BAD_INPUT)
    return archive.require_module(), archive.module_name, archive.module_notes()


def archive_device(path: str | Path) -> str:
    """The GPU an nsys-jax archive's step ran on: ``device_description_str`` of the largest
    module's ``gpu_target_config.pbtxt(.xz)`` ("" when the archive has none, or ``path`` is not one)."""
    try:
        archive = nsys_archive(path)
    except HloscopeError:
        return ""
    return archive.device if archive is not None else ""


STDIN_PROMPT = "hloscope: reading HLO from standard input (Ctrl+D to end)"
#: How the note on an artifact folder's provenance starts (``hloscope.artifact`` writes it:
#: target, devices, XLA options). Views print it once, not on every run's stderr.
ARTIFACT_NOTE = "artifact folder:"


def sniff_bytes(data: bytes, name: str) -> None:
    """Raise the one-line error for input that cannot be HLO text: empty (or only blanks) or binary.

    ``data`` may be the whole input or its first bytes; the words are the same for every reader."""
    if not data.strip():
        what = "empty input" if name == "<stdin>" else "empty file"
        raise HloscopeError(f"{name}: {what}; expected HLO text (a module starting 'HloModule ...')",
                            EXIT_BAD_INPUT)
    if data.lstrip()[:1] == b"{":  # HLO text never opens with a brace; JSON does
        raise HloscopeError(_json_words(data, name), EXIT_BAD_INPUT)
    nul = data.find(b"\0")
    bad = nul if nul >= 0 else _undecodable_at(data)
    if bad is not None:
        raise HloscopeError(f"{name}: binary data ({'a NUL byte' if nul >= 0 else 'not UTF-8'} at byte {bad}), "
                            "not HLO text; expected a module starting 'HloModule ...' (compiled.as_text() or an "
                            "XLA dump's *.txt)", EXIT_BAD_INPUT)


_REPORT_SCHEMA_RE = re.compile(rb'"schema"\s*:\s*"hloscope\.report/')
_REPORT_SOURCE_RE = re.compile(rb'"source_path"\s*:\s*("(?:[^"\\]|\\.)*")')


def _json_words(data: bytes, name: str) -> str:
    """What to say for JSON given where HLO is read: a report (``analyze --json``, a baseline, an
    artifact's report.json) names the module it was made from; other JSON is just not HLO."""
    head = data[:4096]
    if _REPORT_SCHEMA_RE.search(head) is None:
        return f"{name}: JSON, not HLO text; expected a module starting 'HloModule ...'"

    m = _REPORT_SOURCE_RE.search(head)
    try:
        source = json.loads(m.group(1)) if m else None
    except ValueError:
        source = None
    made_from = f" ({source})" if isinstance(source, str) and source else ""
    return (f"{name}: an hloscope JSON report, not HLO; give the module it was made from{made_from}, its dump or "
            "artifact folder (diff and check --baseline read reports)")


def _undecodable_at(data: bytes) -> int | None:
    """Offset of the first byte that is not UTF-8 (a character cut at the end of a prefix is fine)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start if e.start < len(data) - 3 or e.reason != "unexpected end of data" else None
    return None


def _decode(data: bytes, name: str) -> str:
    sniff_bytes(data, name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:  # a character cut at the very end
        raise HloscopeError(f"{name}: binary data (not UTF-8 at byte {e.start}), not HLO text; expected a module "
                            "starting 'HloModule ...' (compiled.as_text() or an XLA dump's *.txt)",
                            EXIT_BAD_INPUT) from None


def _read_stdin() -> bytes:
    if sys.stdin.isatty():  # a person at a terminal would otherwise see a silent wait
        print(STDIN_PROMPT, file=sys.stderr, flush=True)
    try:
        return sys.stdin.buffer.read()
    except AttributeError:  # a replaced sys.stdin without a buffer (tests, notebooks)
        return sys.stdin.read().encode("utf-8")


def parse_text(text: str, name: str | None = None) -> Module:
    """Parse ``text``; a parse error at the end of text that stops mid-module says it looks truncated."""
    try:
        return parse_hlo(text, name)
    except HloParseError as e:
        start = _LEAD_RE.match(text)
        if _HLO_START_RE.match(text, start.end() if start else 0) is None:  # nothing of a module: not cut, not HLO
            first = text.strip().splitlines()[0] if text.strip() else ""
            shown = first if len(first) <= 60 else first[:57] + "..."
            raise HloParseError(f"not HLO text: it starts {shown!r}, where a module starts 'HloModule <name>' "
                                "(compiled.as_text() or an XLA dump's *.txt)", e.line, e.column, e.path) from None
        lines = text.count("\n") + (0 if text.endswith("\n") else 1)
        if not e.truncated and not text.rstrip().endswith("}") and e.line >= lines - 1:
            raise HloParseError(f"{e.reason}; the text ends here, in the middle of a computation: is the file "
                                "truncated (cut off while being written or copied)?", e.line, e.column,
                                e.path) from None
        raise


@dataclass(frozen=True)
class _Found:
    """The input found and read once: its bytes (HloProto bytes, maybe xz-compressed, when
    ``binary``; else text to decode), its display name, the notes on how it was found, and the
    dump folder it was picked from (listed once; None for any other input)."""

    data: bytes
    name: str
    notes: tuple[str, ...]
    binary: bool
    folder: DumpFolder | None = None


def _find(path: str, module: str | None = None) -> _Found:
    """Find the module ``path`` names (a file, a dump or artifact folder, an nsys-jax archive,
    ``-``) and read it: one listing of a folder, one open of the file. ``module``: which module of
    an XLA dump folder (``--module``)."""
    if module:
        _need_folder(path, module)
    if path == "-":
        return _Found(_read_stdin(), "<stdin>", (), False)
    if not path:
        raise HloscopeError("empty path: give an HLO text file, a dump folder or '-'", EXIT_BAD_INPUT)
    p = Path(path)
    archive = known_archive(p)  # read already (the CLI asked whether it is an nsys-jax archive)
    if archive is not None:
        return _Found(archive.require_module(), archive.module_name, archive.module_notes(), True)
    notes: tuple[str, ...] = ()
    folder: DumpFolder | None = None
    try:
        if p.is_dir():  # raises for a name too long to look up
            p, note, folder = _pick(p, module)
            notes = (note,) if note else ()
        data = folder.read(p) if folder is not None else p.read_bytes()
    except FileNotFoundError:
        raise HloscopeError(f"{path}: no such file or directory", EXIT_BAD_INPUT) from None
    except OSError as e:
        shown = path if len(path) <= 80 else path[:77] + "..."
        raise HloscopeError(f"{shown}: cannot read: {e.strerror or e}", EXIT_BAD_INPUT) from None
    if data.startswith(ZIP_MAGIC):
        archive = nsys_archive(p, io.BytesIO(data))
        assert archive is not None  # a zip by its first bytes
        return _Found(archive.require_module(), archive.module_name, notes + archive.module_notes(), True)
    return _Found(data, str(p), notes, is_binary_module(data[:4096], p.name), folder)


def read_hlo_text(path: str) -> tuple[str, str]:
    """(text, display name) for a path, a dump folder, or ``-`` for stdin. An HloProto (or an
    nsys-jax archive's) gives the text it is parsed from (``hloscope.hlo.hloproto``), so line
    numbers agree with the module :func:`load_module` reads."""
    found = _find(path)
    if found.binary:
        return hlo_proto_to_text(read_maybe_xz(found.data, found.name), found.name).text, found.name
    return _decode(found.data, found.name), found.name


@dataclass(frozen=True)
class Source:
    """A path read once into a module. module: the parsed module. text: the HLO text it was parsed
    from (None for HloProto bytes and archives). notes: how it was found (which file of a folder).
    folder: the dump folder it was picked from, listed once, its files read at most once (None for
    any other input): the platform read, XLA's memory texts and the module before optimizations
    are taken from it."""

    module: Module
    text: str | None
    notes: tuple[str, ...]
    folder: DumpFolder | None = None


def read_source(path: str, module: str | None = None) -> Source:
    """Find and read ``path`` (a file, a dump or artifact folder, an nsys-jax archive, ``-``) once.
    ``module``: which module of an XLA dump folder."""
    found = _find(path, module)
    if found.binary:
        parsed = parse_hlo_proto(found.data, found.name)
        parsed.source_path = found.name
        return Source(parsed, None, found.notes, found.folder)
    text = _decode(found.data, found.name)
    parsed = parse_text(text, found.name)
    parsed.source_path = None if found.name == "<stdin>" else os.fspath(found.name)
    return Source(parsed, text, found.notes, found.folder)


def read_module(path: str, module: str | None = None) -> tuple[Module, str | None, tuple[str, ...]]:
    """:func:`load_module_with_notes` with the HLO text the module was parsed from (None for
    HloProto bytes and archives), the input found and read once (the TUI's line lookups keep the text).
    ``module``: which module of an XLA dump folder."""
    source = read_source(path, module)
    return source.module, source.text, source.notes


def load_module(path: str) -> Module:
    """Parse the HLO at ``path`` (a file, a dump or artifact folder, or ``-``)."""
    return load_module_with_notes(path)[0]


def load_module_with_notes(path: str, module: str | None = None) -> tuple[Module, tuple[str, ...]]:
    """The module and the notes on how it was read (which file of a folder), for the views to show.
    Library code never prints; the CLI shows the notes. HloProto bytes (``*.hlo.pb``, ``.xz``) and
    nsys-jax archives (``.zip``) are read by content, text otherwise."""
    found, _, notes = read_module(path, module)
    return found, notes


def is_binary_module(head: bytes, name: str) -> bool:
    """Whether a file whose first bytes are ``head`` is read by content as HloProto bytes or an
    nsys-jax archive (not as text): what the loader decides before decoding anything."""
    if head.startswith(ZIP_MAGIC):
        return True
    # Text may start with a blank line (0x0A too): a proto is named so, or is not text.
    binary = b"\0" in head or _undecodable_at(head) is not None or name.endswith((".pb", ".pb.xz", ".xz"))
    return looks_like_hlo_proto(head) and binary


# What HLO text starts with once blanks and comments are skipped.
_LEAD_RE = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S)
_HLO_START_RE = re.compile(r"(?:HloModule|ENTRY)\b|%?[\w.\-]+\s*(?:\([^)]*\)\s*->[^{]*)?\{")


_MODULE_START_RE = re.compile(rb"(?:\s+|//[^\n]*|/\*.*?\*/)*(?:HloModule|ENTRY)\b", re.S)


def starts_like_hlo_module(head: bytes) -> bool:
    """Whether a file's first bytes open an HLO module (``HloModule`` or ``ENTRY`` after blanks and
    comments): how a reader of something else (a profile) tells that it was given HLO instead."""
    return _MODULE_START_RE.match(head) is not None


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
        return parse_text(x)
    return load_module(x)
