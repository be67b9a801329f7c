"""hloscope's compiled build: the parser's fast path and the analysis passes compiled by mypyc
from the same source, for about 1.5x the speed of the pure-Python modules.

``pip install .`` and ``pip install -e .`` build it (setup.py's ``build_ext`` is :class:`BuildExt`)
wherever a C compiler and Python's headers are present; when the compile cannot be made (no
compiler, a mypyc error) the install goes on in pure Python and says so in one line (pip shows
a build's lines with ``-v``; ``python build_tools/hloscope_build.py status`` and every benchmark
say which build runs). ``HLOSCOPE_PURE=1 pip install ...`` installs pure Python on purpose.
By hand, without pip (the same build, in place, beside the sources):

    python build_tools/hloscope_build.py build    # compile in place (needs mypy and a C compiler)
    python build_tools/hloscope_build.py status   # which modules run compiled, and which are stale
    python build_tools/hloscope_build.py clean    # remove the compiled files: back to pure Python

Each build writes a manifest beside the compiled files (``hloscope/_compiled.cpython-311.txt``): the modules
it compiled and the SHA-256 of each one's source. ``import hloscope`` reads it
(``hloscope/compiled.py``): a module whose source has changed since makes every compiled module
run from its source (with one warning), so an edit is never shadowed by an old compiled file.

Modules whose classes use ``functools.cached_property`` stay interpreted: a compiled class has no
instance ``__dict__`` for it to cache in (the property would be recomputed on every read).
Standard library, setuptools and mypy only: nothing here imports hloscope, and none of it ships in
the installed package.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from setuptools import Extension
from setuptools.command.build_ext import build_ext
from setuptools.dist import Distribution

#: The modules the build compiles: the parser's fast path and every pass of one whole analysis that
#: benchmarks/bench_passes.py times (not analysis.report: its cached_property needs an instance
#: __dict__, which a compiled class does not have). Not hlo.general either: compiled, its reading of
#: a hostile 100 kB line of commas peaked at 8.0 MB, above the 6.0 MB bound of
#: tests/hlo/test_fuzz_parser.py (pure Python stays within it); hlo.lines, the line reader both
#: paths share, is compiled (it reads at most 16 kB of a line whole).
COMPILED_MODULES = (
    "hloscope.hlo.attributes",
    "hloscope.hlo.building",
    "hloscope.hlo.lines",
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
    "hloscope.analysis.simulate.costs",
    "hloscope.analysis.structure.transfer_names",
    "hloscope.analysis.structure.transfers",
    "hloscope.analysis.structure.value_flow",
    "hloscope.analysis.structure.backend",
)
#: mypyc's name for the one shared library of the build: ``hloscope/_compiled__mypyc.*.so``, inside
#: the package, so that it imports wherever the package does (beside it, an editable install
#: run from another folder did not find it).
GROUP = "hloscope._compiled"
GROUP_FILE = GROUP.rsplit(".", 1)[-1] + "__mypyc"
#: The manifest's name in the package, one per Python ABI (``hloscope.compiled.MANIFEST`` reads it;
#: a test holds them equal).
MANIFEST = f"_compiled.{sys.implementation.cache_tag}.txt"
#: ``HLOSCOPE_PURE=1``: install (and, at run time, run) the pure-Python sources.
PURE_ENV = "HLOSCOPE_PURE"
#: The C optimisation level. -O3 took 57.8 s of CPU for the 24 modules, -O1 44.5 s; -O3 is kept:
#: the compile runs once per install, the modules on every analysis.
OPT_LEVEL = "3"

ROOT = Path(__file__).resolve().parent.parent  # the repository: setup.py, pyproject.toml, hloscope/
#: Where mypyc writes the C, relative to ROOT (removed when the build ends).
C_DIR = os.path.join("build", "hloscope-mypyc")


def source_path(module: str, root: Path = ROOT) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def note(line: str) -> None:
    """The build's one line (pip shows it with -v; a build by hand prints it)."""
    print(f"hloscope build: {line}", file=sys.stderr, flush=True)


# -- the manifest -----------------------------------------------------------------------------------


def source_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest_text(root: Path, compiled: bool, why: str = "") -> str:
    """``compiled mypy <version>`` and one ``module sha256`` line per compiled module; or
    ``pure <why>`` alone (the install fell back, or HLOSCOPE_PURE=1)."""
    if not compiled:
        return f"pure {why}\n"
    import mypy.version

    lines = [f"compiled mypy {mypy.version.__version__}"]
    lines += [f"{m} {source_digest(source_path(m, root))}" for m in COMPILED_MODULES]
    return "\n".join(lines) + "\n"


# -- what a build leaves ----------------------------------------------------------------------------


def compiled_files(package: Path) -> list[Path]:
    """This interpreter's compiled files under ``package`` (a ``hloscope`` folder): the modules of this
    build and of any older one whose list was longer (they would shadow their sources all the same),
    the shared library, and the manifest. Another Python's build (its own extension suffix and
    manifest: an editable install shared by a Python 3.11 and a 3.12 venv) is left alone."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]  # ".cpython-311-x86_64-linux-gnu.so": this ABI's
    found = sorted(f for f in package.rglob("*" + suffix))
    manifest = package / MANIFEST
    return found + ([manifest] if manifest.exists() else [])


def clean(package: Path) -> list[Path]:
    """Remove every compiled file under ``package``; returns what was removed."""
    removed = compiled_files(package)
    for f in removed:
        f.unlink()
    return removed


# -- mypyc ------------------------------------------------------------------------------------------


def mypyc_extensions(root: Path, c_dir: str) -> list[Extension]:
    """mypyc's extensions for :data:`COMPILED_MODULES` (type-checks them and writes their C to
    ``c_dir``), one C file per module so that the compile can use every core. Run in ``root``:
    mypy reads the project's configuration from there."""
    from mypyc.build import mypycify

    paths = [str(source_path(m, root).relative_to(root)) for m in COMPILED_MODULES]
    here = os.getcwd()
    os.chdir(root)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exts: list[Extension] = mypycify(paths, opt_level=OPT_LEVEL, debug_level="0", multi_file=True,
                                             target_dir=c_dir, group_name=GROUP)
    finally:
        os.chdir(here)
    # One C file per module includes the group's header, which mypyc writes under the group's package
    # folder (c_dir/hloscope/) without adding that folder to the include path.
    for ext in exts:
        ext.include_dirs.append(str(root / c_dir / Path(*GROUP.split(".")[:-1])))
    return exts


def jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@contextmanager
def parallel_compile(compiler: Any, n: int) -> Iterator[None]:
    """The compiler's ``compile`` of many sources runs up to ``n`` compiles at once (distutils
    compiles one extension's sources one after another: the shared library's ~30 C files)."""
    one: Callable[..., list[str]] = compiler.compile

    def compile(sources: Sequence[str], *args: Any, **kw: Any) -> list[str]:
        if n < 2 or len(sources) < 2:
            return one(sources, *args, **kw)
        with ThreadPoolExecutor(n) as pool:
            parts = list(pool.map(lambda s: one([s], *args, **kw), sources))
        return [obj for part in parts for obj in part]

    compiler.compile = compile
    try:
        yield
    finally:
        compiler.compile = one


class BuildExt(build_ext):
    """setuptools' ``build_ext`` for hloscope: the mypyc extensions, or pure Python with one line.

    The extensions are made when the command runs (not when setup.py is read: pip reads it three
    times per install). Whatever fails (mypy missing, a type error, no compiler, no Python headers)
    leaves no compiled file behind and does not fail the install."""

    def finalize_options(self) -> None:
        # Once per build, whichever command finalizes this one first (egg_info's file list does, before
        # build does): the C goes to a folder under build/ given relative to the project, as setuptools
        # wants every path of an extension's sources (egg_info refused /tmp/...: "setup script specifies
        # an absolute path").
        made = getattr(self.distribution, "_hloscope_mypyc", None)
        if made is None:
            why = ""
            if os.environ.get(PURE_ENV) == "1":
                why = f"{PURE_ENV}=1"
            else:
                shutil.rmtree(ROOT / C_DIR, ignore_errors=True)
                try:
                    self.distribution.ext_modules = mypyc_extensions(ROOT, C_DIR)
                except BaseException as e:  # mypyc reports a type error by SystemExit
                    if isinstance(e, KeyboardInterrupt):
                        raise
                    why = f"mypyc could not translate the modules ({_short(e)})"
            made = self.distribution._hloscope_mypyc = why
        self._why_pure: str = made
        super().finalize_options()
        if self.parallel is None:
            self.parallel = jobs()  # the per-module extensions, side by side

    def _package_dir(self) -> Path:
        """Where this build's compiled files go: the sources (in place: ``pip install -e``) or build_lib."""
        if self.inplace:
            return Path(self.get_finalized_command("build_py").get_package_dir("hloscope")).resolve()
        return Path(self.build_lib) / "hloscope"

    def run(self) -> None:
        package = self._package_dir()
        clean(package)  # nothing of an older build survives this one
        try:
            if not self._why_pure:
                try:
                    super().run()
                except BaseException as e:
                    if isinstance(e, KeyboardInterrupt):
                        raise
                    self._why_pure = f"the C compile failed ({_short(e)})"
                    for ext in self.extensions:  # whatever was built of it: a module without its library fails
                        Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
                    clean(package)
                    self.extensions = []
                    self.distribution.ext_modules = []
            package.mkdir(parents=True, exist_ok=True)
            if self._why_pure:
                note(f"installing pure Python: {self._why_pure}")
                (package / MANIFEST).write_text(manifest_text(ROOT, compiled=False, why=self._why_pure))
            else:
                (package / MANIFEST).write_text(manifest_text(ROOT, compiled=True))
                note(f"compiled {len(COMPILED_MODULES)} modules with mypyc")
        finally:
            shutil.rmtree(ROOT / C_DIR, ignore_errors=True)

    def build_extensions(self) -> None:
        with parallel_compile(self.compiler, jobs()):  # the compiler run() has just made
            super().build_extensions()


def _short(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= 160 else text[:157] + "..."


class BinaryDistribution(Distribution):
    """A distribution that always runs ``build_ext`` (its extensions are known only when it runs)."""

    def has_ext_modules(self) -> bool:
        return True


# -- by hand ----------------------------------------------------------------------------------------


def build_in_place(root: Path = ROOT) -> int:
    """The install's build, in place, without pip (``--inplace``, temporary folders elsewhere)."""
    from setuptools import setup

    with tempfile.TemporaryDirectory(prefix="hloscope-build-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # setuptools' notes on reading pyproject.toml: not ours to act on
        here = os.getcwd()
        os.chdir(root)
        try:
            args = ["-q", "build_ext", "--inplace", "--build-temp", os.path.join(tmp, "obj"),
                    "--build-lib", os.path.join(tmp, "lib")]
            setup(name="hloscope-compiled", cmdclass={"build_ext": BuildExt}, distclass=BinaryDistribution,
                  packages=["hloscope"], script_args=args)
        finally:
            os.chdir(here)
    return status(root)


def status(root: Path = ROOT) -> int:
    sys.path.insert(0, str(root))
    from hloscope import compiled

    state = compiled.read_build(root / "hloscope")
    print(f"{compiled.describe(state)} ({root / 'hloscope'})")
    return 1 if state.stale else 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python build_tools/hloscope_build.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=("build", "status", "clean"))
    args = ap.parse_args(argv)
    if args.action == "clean":
        removed = clean(ROOT / "hloscope")
        print(f"removed {len(removed)} compiled file(s) under {ROOT / 'hloscope'}")
        return 0
    if args.action == "build":
        return build_in_place()
    return status()


if __name__ == "__main__":
    sys.exit(main())
