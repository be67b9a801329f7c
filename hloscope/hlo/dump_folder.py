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
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

from hloscope.errors import EXIT_BAD_INPUT, EXIT_UNKNOWN_NAME, HloscopeError

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
    """The file XLA wrote for the same module as ``path`` whose name ends with ``suffix`` (None: none)."""
    prefix = module_id(path) + "."
    try:
        found = names if names is not None else list(path.parent.iterdir())
    except OSError:
        return None
    return next((q for q in sorted(found) if q.name.startswith(prefix) and q.name.endswith(suffix)
                 and q != path), None)


def _contains(path: Path, markers: tuple[bytes, ...]) -> bool:
    try:
        data = path.read_bytes()
    except OSError:
        return False
    return any(m in data for m in markers)


def _rank(path: Path, same_module: list[Path]) -> Rank:
    if _contains(path, HOST_MARKERS + PLACEMENT_MARKERS):
        return Rank.HOST
    before = sibling(path, BEFORE_SUFFIX, same_module)
    if before is not None and _contains(before, PLACEMENT_MARKERS):
        return Rank.HOST
    if _contains(path, (GRADIENT_MARKER,)):
        return Rank.TRAINING
    return Rank.OTHER if _module_name(path).startswith("jit__") else Rank.USER


def list_modules(directory: Path, cands: list[Path], names: list[Path]) -> list[DumpModule]:
    """The candidate files of a dump folder as modules, each ranked by what it is."""
    by_id: dict[str, list[Path]] = {}
    for q in names:
        by_id.setdefault(module_id(q), []).append(q)
    out = []
    for p in cands:
        try:
            size = p.stat().st_size
        except OSError as e:
            raise HloscopeError(f"{p}: cannot read: {e.strerror or e}", EXIT_BAD_INPUT) from None
        out.append(DumpModule(p, module_id(p), _module_name(p), size, _rank(p, by_id.get(module_id(p), []))))
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
