"""Which module of an ``--xla_dump_to`` folder is the step, and the files XLA wrote beside it.

A dump folder holds every module the program compiled: the training step, and the
small ones JAX compiles on the way (``jit__normal`` for ``jax.random.normal``,
``jit_convert_element_type``...), some of them larger than the step. The step is
found by what it is, never by file size:

1. a module that moves data to or from host memory (``S(5)`` in its optimized text)
   or whose module before optimizations holds placement annotations
   (``annotate_device_placement``, ``MoveToHost``, ``MoveToDevice``);
2. else a training step: a module holding a gradient (JAX's ``transpose(jvp(...))``
   op names);
3. else a module of the user's (JAX names its own helpers ``jit__name``).

Among the modules of the first rank found, the largest is read, and the others are
named in a note with how to choose one (``--module``). ``module_id`` and
``sibling`` find the other files XLA wrote for a module (``module_0044.*``).

A folder is read through one :class:`DumpFolder`: listed once, each file opened at
most once, whoever asks (the step pick, the platform read, XLA's memory texts, the
module before optimizations).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

from hloscope.errors import EXIT_BAD_INPUT, EXIT_UNKNOWN_NAME, HloscopeError

#: XLA's memory texts beside a module's ``*after_optimizations.txt`` (``hloscope.hlo.xla_dumps`` parses them).
MEMORY_REPORT_SUFFIX = "after_optimizations-memory-usage-report.txt"
LIVE_RANGE_SUFFIX = "after_optimizations-live-range.txt"
BUFFER_ASSIGNMENT_SUFFIX = "after_optimizations-buffer-assignment.txt"
#: Suffixes of an optimized module in a dump folder, most readable first.
OPTIMIZED_SUFFIXES = ("after_optimizations.txt",)
BEFORE_SUFFIX = "before_optimizations.txt"
TARGET_ARGUMENTS_SUFFIX = ".target_arguments.txt"
HOST_MARKERS = (b"S(5)",)
PLACEMENT_MARKERS = (b"annotate_device_placement", b'"MoveToHost"', b'"MoveToDevice"')
GRADIENT_MARKER = b"transpose(jvp("


class Rank(IntEnum):
    """Why a module was taken for the step; a lower value wins."""

    HOST = 0  # host transfers or placement annotations
    TRAINING = 1  # a gradient
    USER = 2  # a function of the user's
    OTHER = 3  # JAX's own helper


@dataclass(frozen=True)
class DumpModule:
    """One module of a dump folder. path: the file read. module_id: ``module_0044``. name: the
    module's name (``jit_step``). size: bytes of ``path``. rank: why it would be the step."""

    path: Path
    module_id: str
    name: str
    size: int
    rank: Rank

    @property
    def label(self) -> str:
        return f"{self.name} ({self.module_id})" if self.name else self.module_id


def module_id(path: Path) -> str:
    """``module_0044`` of ``module_0044.jit_step.cl_933746096.after_optimizations.txt``."""
    return path.name.split(".", 1)[0]


def _module_name(path: Path) -> str:
    parts = path.name.split(".")
    return parts[1] if len(parts) > 2 and parts[0].startswith("module_") else ""


def sibling(path: Path, suffix: str, names: list[Path] | None = None) -> Path | None:
    """The file XLA wrote for the same module as ``path`` whose name ends with ``suffix`` (None: none).
    ``names``: the folder's listing, when the caller has it (else the folder is listed)."""
    prefix = module_id(path) + "."
    try:
        found = names if names is not None else list(path.parent.iterdir())
    except OSError:
        return None
    return next((q for q in sorted(found) if q.name.startswith(prefix) and q.name.endswith(suffix)
                 and q != path), None)


class DumpFolder:
    """A dump folder as one source: listed once (:attr:`files`), each file read at most once
    (:meth:`read` keeps the bytes), so the step pick, the platform read, XLA's memory texts
    and the module before optimizations share one listing and one read of each file.

    path: the folder. files: its entries, in the listing's order.
    """

    __slots__ = ("_by_id", "_read", "files", "path")

    def __init__(self, path: Path, files: tuple[Path, ...]) -> None:
        self.path = path
        self.files = files
        self._read: dict[Path, bytes] = {}
        self._by_id: dict[str, list[Path]] | None = None

    @classmethod
    def list(cls, path: Path) -> DumpFolder:
        """List ``path`` (raises ``OSError`` when it cannot be listed)."""
        with os.scandir(path) as entries:
            return cls(path, tuple(path / e.name for e in entries))

    def read(self, file: Path) -> bytes:
        """The bytes of ``file`` (one of :attr:`files`), read on first asking (raises ``OSError``)."""
        data = self._read.get(file)
        if data is None:
            data = self._read[file] = file.read_bytes()
        return data

    def text(self, file: Path | None) -> str | None:
        """``file`` as text (undecodable bytes replaced); None for no file or one that cannot be read."""
        if file is None:
            return None
        try:
            return self.read(file).decode("utf-8", errors="replace")
        except OSError:
            return None

    def sibling(self, file: Path, suffix: str) -> Path | None:
        """The file XLA wrote for the same module as ``file`` whose name ends with ``suffix``."""
        if self._by_id is None:
            self._by_id = {}
            for q in self.files:
                self._by_id.setdefault(module_id(q), []).append(q)
        return sibling(file, suffix, self._by_id.get(module_id(file), []))


def _contains(folder: DumpFolder, path: Path, markers: tuple[bytes, ...]) -> bool:
    try:
        data = folder.read(path)
    except OSError:
        return False
    return any(m in data for m in markers)


def _rank(folder: DumpFolder, path: Path) -> Rank:
    if _contains(folder, path, HOST_MARKERS + PLACEMENT_MARKERS):
        return Rank.HOST
    before = folder.sibling(path, BEFORE_SUFFIX)
    if before is not None and _contains(folder, before, PLACEMENT_MARKERS):
        return Rank.HOST
    if _contains(folder, path, (GRADIENT_MARKER,)):
        return Rank.TRAINING
    return Rank.OTHER if _module_name(path).startswith("jit__") else Rank.USER


def list_modules(folder: DumpFolder, cands: list[Path]) -> list[DumpModule]:
    """The candidate files of a dump folder as modules, each ranked by what it is."""
    out = []
    for p in cands:
        try:
            size = p.stat().st_size
        except OSError as e:
            raise HloscopeError(f"{p}: cannot read: {e.strerror or e}", EXIT_BAD_INPUT) from None
        out.append(DumpModule(p, module_id(p), _module_name(p), size, _rank(folder, p)))
    return out


def select(directory: Path, modules: list[DumpModule], wanted: str | None) -> tuple[DumpModule, list[DumpModule]]:
    """(the module to read, the other candidates of its rank). ``wanted``: a module name (``jit_step``),
    id (``module_0044``) or file name; one that names none is an error listing the modules."""
    if wanted:
        hits = [m for m in modules if wanted in (m.name, m.module_id, m.path.name)]
        if not hits:
            listed = ", ".join(m.label for m in sorted(modules, key=lambda m: m.module_id))
            raise HloscopeError(f"{directory}: no module {wanted!r} in this dump folder; its modules: {listed}",
                                EXIT_UNKNOWN_NAME)
        if len(hits) > 1:
            ids = ", ".join(m.module_id for m in hits)
            raise HloscopeError(f"{directory}: {len(hits)} modules named {wanted!r} ({ids}); pass one id with "
                                "--module", EXIT_UNKNOWN_NAME)
        return hits[0], []
    best = min(m.rank for m in modules)
    tied = sorted((m for m in modules if m.rank == best), key=lambda m: (-m.size, m.path.name))
    return tied[0], tied[1:]
