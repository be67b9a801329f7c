"""The optional compiled build: hloscope's hot modules (the parser and the analysis passes)
compiled by mypyc from the same source, for about 1.5x the speed of the pure-Python modules.

    python -m hloscope.mypyc_build build    # compile them in place (needs mypy's mypyc and a C compiler)
    python -m hloscope.mypyc_build status   # which modules run compiled, and which are stale
    python -m hloscope.mypyc_build clean    # remove the compiled modules: back to pure Python

Nothing else changes: the same source, the same results (CI runs the fast tier and the parser
corpus against the compiled build, ``.ci/run``). The compiled files (``*.so``) sit beside the
sources they were built from, and Python imports them instead of the ``.py``: a source edited
after a build would not run. ``stale_modules`` finds those, and ``import hloscope`` warns
(RuntimeWarning) when there are any; ``clean`` or a new ``build`` ends it.

Modules whose classes use ``functools.cached_property`` stay interpreted: a compiled class
has no instance ``__dict__`` for it to cache in (the property would be recomputed on every read).
Standard library only: this module imports nothing of hloscope.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from pathlib import Path

from hloscope.buildinfo import (
    COMPILED_MODULES,
    GROUP,
    ROOT,
    BuildStatus,
    all_compiled_files,
    build_status,
    group_library_files,
    source_path,
)

__all__ = ["build", "clean", "main"]

def build(root: Path = ROOT) -> BuildStatus:
    """Compile :data:`COMPILED_MODULES` in place with mypyc (their intermediate C and objects
    go to a temporary folder). Raises ImportError without mypyc (``pip install mypy``)."""
    # lazy: build tooling, only when building
    from mypyc.build import mypycify
    from setuptools import setup

    clean(root)  # nothing of an older build survives it (a module it no longer lists would shadow its source)
    paths = [str(source_path(m, root).relative_to(root)) for m in COMPILED_MODULES]
    options = [] if (root / "pyproject.toml").exists() else ["--ignore-missing-imports"]
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="hloscope-mypyc-") as tmp:
        os.chdir(root)  # mypy reads the project's configuration from here; --inplace writes beside the sources
        try:
            extensions = mypycify(options + paths, opt_level="3", target_dir=os.path.join(tmp, "c"),
                                  group_name=GROUP)
            with warnings.catch_warnings():  # setuptools' notes on reading pyproject.toml: not ours to act on
                warnings.simplefilter("ignore")
                setup(name="hloscope-compiled", ext_modules=extensions,
                      script_args=["-q", "build_ext", "--inplace", "--build-temp", os.path.join(tmp, "obj")])
        finally:
            os.chdir(here)
    return build_status(root)


def clean(root: Path = ROOT) -> tuple[Path, ...]:
    """Remove every compiled module file under the package (this build's and any an older build
    left) and the shared library; returns what was removed."""
    removed: list[Path] = []
    for files in all_compiled_files(root).values():
        for f in files:
            f.unlink()
            removed.append(f)
    for f in group_library_files(root):
        f.unlink()
        removed.append(f)
    return tuple(removed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hloscope.mypyc_build", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=("build", "status", "clean"))
    args = ap.parse_args(argv)
    if args.action == "clean":
        removed = clean()
        print(f"removed {len(removed)} compiled file(s) under {ROOT}")
        return 0
    if args.action == "build":
        try:
            status = build()
        except ImportError as e:
            print(f"hloscope.mypyc_build: mypyc is not installed ({e}); pip install mypy", file=sys.stderr)
            return 3
        except SystemExit as e:  # setuptools reports a failed compile by exiting
            print(f"hloscope.mypyc_build: the C compile failed ({e})", file=sys.stderr)
            return 4
    else:
        status = build_status()
    print(f"compiled: {len(status.compiled)} of {len(COMPILED_MODULES)} modules under {ROOT}")
    for module in status.stale:
        why = ("its source is newer than its compiled file" if module in COMPILED_MODULES
               else "left by an older build, which compiled it")
        print(f"stale: {module} ({why}: build again or clean)")
    return 1 if status.stale else 0


if __name__ == "__main__":
    sys.exit(main())
