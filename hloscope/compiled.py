"""Which build of hloscope runs: the compiled modules an install built (mypyc), or their sources.

An install (``pip install .``, ``pip install -e .``; build_tools/hloscope_build.py) leaves a
manifest in the package, ``_compiled.<cache tag>.txt`` (``_compiled.cpython-311.txt``: one per
Python, as the compiled files are): ``compiled mypy <version>`` and one line per compiled
module with the SHA-256 of the source it was compiled from, or ``pure <why>`` when it installed
pure Python. ``import hloscope`` calls :func:`choose` once, and the sources run instead of every
compiled module when

- ``HLOSCOPE_PURE=1`` is set (on purpose: the pure-Python build, for tests and comparisons), or
- any compiled module's source differs from what was compiled (an edit since the install: the
  compiled modules call one another directly, so one stale module means all run from source;
  one RuntimeWarning says so and how to rebuild).

Cheap: one ``open`` when nothing was compiled (a checkout run from its folder), one ``stat`` per
compiled module's source otherwise; a source is hashed only when its file is newer than the
manifest. Standard library only; imports nothing of hloscope.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

__all__ = ["MANIFEST", "PURE_ENV", "Build", "choose", "current", "describe", "read_build"]

#: The manifest's file name in the package (build_tools/hloscope_build.py writes it), this Python's.
MANIFEST = f"_compiled.{sys.implementation.cache_tag}.txt"
#: ``HLOSCOPE_PURE=1``: run the pure-Python sources even where an install compiled them.
PURE_ENV = "HLOSCOPE_PURE"
#: The build's shared library (mypyc's group ``hloscope._compiled``), this Python's.
GROUP_LIBRARY = "_compiled__mypyc" + importlib.machinery.EXTENSION_SUFFIXES[0]
#: ``Build.stale`` when compiled files are there but no manifest (an older build's: every module
#: that has a source runs from it).
UNLISTED = "(compiled files with no manifest)"


@dataclass(frozen=True)
class Build:
    """What the install built and what runs.

    compiled: the modules the install compiled (empty: it installed pure Python, or nothing was
    built). stale: those of them whose source changed since (``(UNLISTED,)``: compiled files that no
    manifest lists, an older build's). pure_why: why the install is pure
    ("" when it compiled; "not built" when there is no manifest). sources_run: the compiled modules
    run from their sources (HLOSCOPE_PURE=1, or a stale module)."""

    compiled: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    pure_why: str = "not built"
    sources_run: bool = False

    @property
    def runs_compiled(self) -> bool:
        return bool(self.compiled) and not self.sources_run


def _source(package: str, module: str) -> str:
    return os.path.join(package, *module.split(".")[1:]) + ".py"


def _sha256(path: str) -> str:
    import hashlib  # lazy: only a source newer than the manifest is hashed

    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def read_build(package: str | os.PathLike[str]) -> Build:
    """The build found in ``package`` (a ``hloscope`` folder), by its manifest; nothing is imported."""
    package = os.fspath(package)
    manifest = os.path.join(package, MANIFEST)
    try:
        with open(manifest, encoding="utf-8") as f:
            lines = f.read().splitlines()
        built = os.stat(manifest).st_mtime
    except OSError:
        if os.path.exists(os.path.join(package, GROUP_LIBRARY)):  # compiled files no manifest describes
            return Build(pure_why="", stale=(UNLISTED,))
        return Build()
    if not lines or not lines[0].startswith("compiled"):
        return Build(pure_why=lines[0].partition(" ")[2] if lines else "an empty manifest")
    compiled: list[str] = []
    stale: list[str] = []
    for line in lines[1:]:
        module, _, digest = line.partition(" ")
        if not module:
            continue
        compiled.append(module)
        src = _source(package, module)
        try:
            newer = os.stat(src).st_mtime > built
        except OSError:
            stale.append(module)  # a source gone since the build: its compiled file is all that is left
            continue
        if newer and _sha256(src) != digest:
            stale.append(module)
    return Build(tuple(compiled), tuple(stale), "")


class _Sources(importlib.abc.MetaPathFinder):
    """Finds the listed modules' ``.py`` files (``modules`` None: every module of the package that has
    one) before the import system finds their compiled files."""

    def __init__(self, package: str, modules: Sequence[str] | None) -> None:
        self.package = package
        self.modules = None if modules is None else frozenset(modules)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("hloscope.") or (self.modules is not None and fullname not in self.modules):
            return None
        src = _source(self.package, fullname)
        if self.modules is None and not os.path.isfile(src):  # a package, or no source: the usual import
            return None
        return importlib.util.spec_from_file_location(fullname, src)


_CURRENT = Build()


def choose(package: str) -> Build:
    """Decide, once per process, whether the compiled modules or their sources run (see the module's
    docstring); called by ``import hloscope`` before any of them is imported."""
    global _CURRENT
    build = read_build(package)
    if build.stale or (build.compiled and os.environ.get(PURE_ENV) == "1"):
        unlisted = build.stale == (UNLISTED,)
        sys.meta_path.insert(0, _Sources(package, None if unlisted else build.compiled))
        build = Build(build.compiled, build.stale, build.pure_why, sources_run=True)
        if build.stale:
            import warnings  # lazy: only a stale build warns

            shown = ", ".join(build.stale[:3]) + (" ..." if len(build.stale) > 3 else "")
            what = ("compiled files that no manifest describes (an older build) are in the package" if unlisted else
                    f"{len(build.stale)} compiled module(s) were edited since the install compiled them ({shown})")
            warnings.warn(f"hloscope: {what}: running the pure-Python sources; pip install -e . "
                          "(or python build_tools/hloscope_build.py build) compiles them again",
                          RuntimeWarning, stacklevel=3)
    _CURRENT = build
    return build


def current() -> Build:
    """The build this process runs (as :func:`choose` found it)."""
    return _CURRENT


def describe(build: Build) -> str:
    """One line: which build runs (benchmarks print it beside their figures)."""
    if build.stale == (UNLISTED,):
        return "build: pure Python: compiled files with no manifest (an older build) are in the package"
    if not build.compiled:
        return f"build: pure Python ({build.pure_why})"
    if build.stale:
        return (f"build: pure Python: {len(build.stale)} of {len(build.compiled)} compiled modules edited since "
                f"the install ({', '.join(build.stale[:3])}{' ...' if len(build.stale) > 3 else ''})")
    if build.sources_run:
        return f"build: pure Python ({PURE_ENV}=1; the install compiled {len(build.compiled)} modules)"
    return f"build: compiled by mypyc, {len(build.compiled)} modules"
