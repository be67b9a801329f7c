"""What the optional compiled build (``python -m hloscope.mypyc_build``) compiles, and which of
those modules run compiled now (and which are stale: their source edited after the build).

Standard library only, and cheap: ``import hloscope`` asks :func:`stale_modules` once.
"""

from __future__ import annotations

import importlib.machinery
from dataclasses import dataclass
from pathlib import Path

__all__ = ["COMPILED_MODULES", "GROUP", "GROUP_FILE", "ROOT", "BuildStatus", "all_compiled_files", "build_status",
           "group_library_files", "source_path", "stale_modules"]

#: The modules the build compiles: the parser's fast path and every pass of one whole analysis that
#: benchmarks/bench_passes.py times (not analysis.report: its cached_property needs an instance
#: __dict__, which a compiled class does not have). Not hlo.general either: compiled, its reading of
#: a hostile 100 kB line of commas peaked at 8.0 MB, above the 6.0 MB bound of
#: tests/hlo/test_fuzz_parser.py (pure Python stays within it).
COMPILED_MODULES = (
    "hloscope.hlo.attributes",
    "hloscope.hlo.building",
    "hloscope.hlo.model",
    "hloscope.hlo.parser",
    "hloscope.hlo.semantics",
    "hloscope.hlo.shape",
    "hloscope.analysis.structure.callgraph",
    "hloscope.analysis.cost.roofline",
    "hloscope.analysis.simulate.drain",
    "hloscope.analysis.structure.host_work",
    "hloscope.analysis.structure.index",
    "hloscope.analysis.cost.kernels",
    "hloscope.analysis.structure.merged_dots",
    "hloscope.analysis.structure.name_records",
    "hloscope.analysis.structure.opclass",
    "hloscope.analysis.simulate.overlap",
    "hloscope.analysis.structure.pairs",
    "hloscope.analysis.intent.remat",
    "hloscope.analysis.simulate.slack",
    "hloscope.analysis.structure.streams",
    "hloscope.analysis.simulate.timeline",
    "hloscope.analysis.simulate.engine",
    "hloscope.analysis.simulate.links",
    "hloscope.analysis.simulate.tally",
    "hloscope.analysis.simulate.step",
    "hloscope.analysis.structure.transfer_names",
    "hloscope.analysis.structure.transfers",
    "hloscope.analysis.structure.value_flow",
)
#: mypyc's name for the one shared library of the build: ``hloscope/_compiled__mypyc.*.so``, inside
#: the package, so that it imports wherever the package does (beside it, an editable install
#: run from another folder did not find it).
GROUP = "hloscope._compiled"
#: That library's file name, without its extension suffix.
GROUP_FILE = GROUP.rsplit(".", 1)[-1] + "__mypyc"

ROOT = Path(__file__).resolve().parent.parent  # the folder holding the hloscope package


@dataclass(frozen=True)
class BuildStatus:
    """compiled: the modules with a compiled file beside their source; stale: those of them whose
    source is newer than the compiled file (an edit the compiled file does not have)."""

    compiled: tuple[str, ...]
    stale: tuple[str, ...]


def source_path(module: str, root: Path) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def all_compiled_files(root: Path) -> dict[str, list[Path]]:
    """Every compiled module file under ``root/hloscope``, by module name: the build's, and any
    left by an older build whose list was longer (it would shadow its source all the same)."""
    found: dict[str, list[Path]] = {}
    package = root / "hloscope"
    suffixes = sorted(importlib.machinery.EXTENSION_SUFFIXES, key=len, reverse=True)  # the longest first
    seen: set[Path] = set()
    for tail in {s.rsplit(".", 1)[-1] for s in suffixes}:  # "so", "pyd"
        for f in package.rglob("*." + tail):
            suffix = next((x for x in suffixes if f.name.endswith(x)), None)
            if suffix is None or f in seen or f.name.startswith(GROUP_FILE):  # the library is no module
                continue
            seen.add(f)
            rel = f.relative_to(root)
            found.setdefault(".".join((*rel.parts[:-1], f.name[: -len(suffix)])), []).append(f)
    return found


def build_status(root: Path = ROOT) -> BuildStatus:
    """``stale`` also holds a compiled module the build no longer lists (a leftover)."""
    files = all_compiled_files(root)
    order = {m: i for i, m in enumerate(COMPILED_MODULES)}
    compiled = sorted(files, key=lambda m: (order.get(m, len(order)), m))
    stale: list[str] = []
    for module in compiled:
        src = source_path(module, root)
        if module not in order or (src.exists() and src.stat().st_mtime > min(f.stat().st_mtime
                                                                              for f in files[module])):
            stale.append(module)
    return BuildStatus(tuple(compiled), tuple(stale))


def group_library_files(root: Path = ROOT) -> list[Path]:
    """The build's shared library file(s) (none when nothing was ever compiled)."""
    return [f for f in (root / "hloscope").glob(GROUP_FILE + "*")
            if f.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))]


def stale_modules(root: Path = ROOT) -> tuple[str, ...]:
    """The compiled modules whose source was edited after the build (cheap: a few stat calls,
    and none at all when no module was ever compiled)."""
    if not group_library_files(root):
        return ()
    return build_status(root).stale
