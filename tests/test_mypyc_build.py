"""The compiled build (build_tools/hloscope_build.py, run by ``pip install``) and what ``import
hloscope`` makes of it (hloscope/compiled.py): which modules it compiles, the manifest it leaves,
a pure-Python install when the compile cannot be made, the sources run when one was edited since
or HLOSCOPE_PURE=1, and the rules the compiled modules' source must keep for mypyc to run it as
Python does."""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from hloscope import compiled

ROOT = Path(__file__).resolve().parents[1]
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _build_tools() -> ModuleType:
    """build_tools/hloscope_build.py, which is no part of the installed package."""
    spec = importlib.util.spec_from_file_location("hloscope_build", ROOT / "build_tools" / "hloscope_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The build tooling runs in pip's build environment, which brings setuptools; a venv of Python 3.12+ has
# none of its own (CI's JAX 0.12 venv), and there this module is only collected, never selected.
pytest.importorskip("setuptools", reason="the build tooling needs setuptools (pip's build environment has it)")
build = _build_tools()


def _package(tmp_path: Path, modules: dict[str, str]) -> Path:
    """A ``hloscope`` folder with these modules' sources (module name -> text)."""
    package = tmp_path / "hloscope"
    package.mkdir()
    for module, text in modules.items():
        src = build.source_path(module, tmp_path)
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(text)
    return package


def _manifest(package: Path, digests: dict[str, str], mtime: int = 1_700_000_000) -> None:
    (package / compiled.MANIFEST).write_text("compiled mypy 2.4.1\n" + "".join(f"{m} {d}\n" for m, d in digests.items()))
    os.utime(package / compiled.MANIFEST, (mtime, mtime))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_build_and_the_package_name_the_same_manifest_and_switch() -> None:
    assert build.MANIFEST == compiled.MANIFEST
    assert build.GROUP_FILE + SUFFIX == compiled.GROUP_LIBRARY
    assert build.PURE_ENV == compiled.PURE_ENV == "HLOSCOPE_PURE"
    assert build.GROUP.startswith("hloscope.")  # the shared library inside the package (beside it, an
    # editable install run from another folder did not find it: "No module named 'hloscope__mypyc'")


def test_the_build_tooling_is_not_in_the_package() -> None:
    assert not list((ROOT / "hloscope").rglob("*mypyc_build*")) and not list((ROOT / "hloscope").rglob("buildinfo*"))
    assert "listdir" not in (ROOT / "hloscope" / "__init__.py").read_text()


def test_a_tree_never_built_runs_its_sources(tmp_path: Path) -> None:
    package = _package(tmp_path, {"hloscope.hlo.parser": "x = 1\n"})
    assert compiled.read_build(package) == compiled.Build()
    assert compiled.describe(compiled.read_build(package)) == "build: pure Python (not built)"


def test_a_pure_install_says_why(tmp_path: Path) -> None:
    package = _package(tmp_path, {})
    (package / compiled.MANIFEST).write_text("pure the C compile failed (gcc: not found)\n")
    got = compiled.read_build(package)
    assert got.compiled == () and got.pure_why == "the C compile failed (gcc: not found)"
    assert not got.runs_compiled


def test_only_a_source_whose_text_changed_since_the_build_is_stale(tmp_path: Path) -> None:
    texts = {"hloscope.hlo.parser": "x = 1\n", "hloscope.hlo.shape": "y = 2\n", "hloscope.hlo.model": "z = 3\n"}
    package = _package(tmp_path, texts)
    _manifest(package, {m: _sha(t) for m, t in texts.items()})
    for module in texts:  # every source newer than the manifest: each is hashed
        os.utime(build.source_path(module, tmp_path), (1_700_000_100, 1_700_000_100))
    assert compiled.read_build(package) == compiled.Build(tuple(texts), (), "")  # touched, not edited
    build.source_path("hloscope.hlo.shape", tmp_path).write_text("y = 3\n")
    build.source_path("hloscope.hlo.model", tmp_path).unlink()
    got = compiled.read_build(package)
    assert got.stale == ("hloscope.hlo.shape", "hloscope.hlo.model")
    assert "2 of 3 compiled modules edited since the install" in compiled.describe(got)


def test_a_source_older_than_the_manifest_is_not_hashed(tmp_path: Path) -> None:
    package = _package(tmp_path, {"hloscope.hlo.parser": "x = 1\n"})
    _manifest(package, {"hloscope.hlo.parser": "not-its-digest"}, mtime=1_700_000_100)
    os.utime(build.source_path("hloscope.hlo.parser", tmp_path), (1_700_000_000, 1_700_000_000))
    assert compiled.read_build(package).stale == ()  # the build came after the source's last write


def test_clean_removes_every_compiled_file_and_the_manifest_and_nothing_else(tmp_path: Path) -> None:
    package = _package(tmp_path, {"hloscope.hlo.parser": "x = 1\n", "hloscope.hlo.general": "y = 1\n"})
    made = [package / "hlo" / f"parser{SUFFIX}", package / "hlo" / f"general{SUFFIX}",  # general: an older build's
            package / f"{build.GROUP_FILE}{SUFFIX}"]
    for f in made:
        f.write_bytes(b"\x7fELF")
    _manifest(package, {})
    removed = build.clean(package)
    assert set(removed) == {*made, package / compiled.MANIFEST}
    assert build.source_path("hloscope.hlo.parser", tmp_path).exists() and not any(f.exists() for f in made)


def _copy_package(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "hloscope", tmp_path / "hloscope",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", compiled.MANIFEST))
    return tmp_path / "hloscope"


def _import_in(tmp_path: Path, module: str, **env: str) -> subprocess.CompletedProcess[str]:
    code = (f"import {module} as m, hloscope.compiled as c; print(m.__file__); "
            "print(c.describe(c.current()))")
    clean_env = {k: v for k, v in os.environ.items() if k != compiled.PURE_ENV}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={**clean_env, "PYTHONPATH": str(tmp_path), **env})


def test_an_edited_source_runs_instead_of_its_compiled_file_with_one_warning(tmp_path: Path) -> None:
    # Given a package whose build compiled hlo.shape (a file in its place that is no loadable module)
    # and whose shape.py was edited since
    package = _copy_package(tmp_path)
    (package / "hlo" / f"shape{SUFFIX}").write_bytes(b"not a shared library")
    _manifest(package, {"hloscope.hlo.shape": _sha("the text it was compiled from")})
    # When it is imported
    got = _import_in(tmp_path, "hloscope.hlo.shape")
    # Then the source runs, and one warning says why and how to compile again
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[0] == str(package / "hlo" / "shape.py")
    assert got.stderr.count("RuntimeWarning") == 1 and "edited since the install" in got.stderr
    assert "pip install -e ." in got.stderr


def test_compiled_files_no_manifest_describes_never_shadow_their_sources(tmp_path: Path) -> None:
    # An older build's (the opt-in build before the install compiled, which wrote no manifest)
    package = _copy_package(tmp_path)
    (package / "hlo" / f"shape{SUFFIX}").write_bytes(b"not a shared library")
    (package / compiled.GROUP_LIBRARY).write_bytes(b"not a shared library")
    got = _import_in(tmp_path, "hloscope.hlo.shape")
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[0] == str(package / "hlo" / "shape.py")
    assert got.stderr.count("RuntimeWarning") == 1 and "no manifest describes" in got.stderr


def test_hloscope_pure_runs_the_sources_of_a_compiled_install_silently(tmp_path: Path) -> None:
    package = _copy_package(tmp_path)
    (package / "hlo" / f"shape{SUFFIX}").write_bytes(b"not a shared library")
    _manifest(package, {"hloscope.hlo.shape": build.source_digest(package / "hlo" / "shape.py")}, mtime=2_000_000_000)
    got = _import_in(tmp_path, "hloscope.hlo.shape", HLOSCOPE_PURE="1")
    assert got.returncode == 0 and got.stderr == "", got.stderr
    assert got.stdout.splitlines() == [str(package / "hlo" / "shape.py"),
                                       "build: pure Python (HLOSCOPE_PURE=1; the install compiled 1 modules)"]
    # without HLOSCOPE_PURE the compiled file is what Python loads (here: no loadable module)
    assert "ImportError" in _import_in(tmp_path, "hloscope.hlo.shape").stderr


def _build_by_hand(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    for name in ("build_tools", "hloscope"):
        shutil.copytree(ROOT / name, tmp_path / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", compiled.MANIFEST))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    clean_env = {k: v for k, v in os.environ.items() if k != compiled.PURE_ENV}
    return subprocess.run([sys.executable, "build_tools/hloscope_build.py", "build"], capture_output=True, text=True,
                          cwd=tmp_path, env={**clean_env, **env})


def test_hloscope_pure_installs_pure_python_and_says_so(tmp_path: Path) -> None:
    got = _build_by_hand(tmp_path, HLOSCOPE_PURE="1")
    assert got.returncode == 0, got.stderr
    assert "hloscope build: installing pure Python: HLOSCOPE_PURE=1" in got.stderr.splitlines()
    assert build.compiled_files(tmp_path / "hloscope") == [tmp_path / "hloscope" / compiled.MANIFEST]
    assert compiled.read_build(tmp_path / "hloscope").pure_why == "HLOSCOPE_PURE=1"


@pytest.mark.slow
def test_a_failing_c_compile_installs_pure_python_in_one_line(tmp_path: Path) -> None:
    pytest.importorskip("mypyc")
    # mypyc translates the modules (seconds), then every compile fails: CC is a compiler that fails
    got = _build_by_hand(tmp_path, CC="false", LDSHARED="false")
    assert got.returncode == 0, got.stderr
    lines = [line for line in got.stderr.splitlines() if line.startswith("hloscope build:")]
    assert len(lines) == 1 and lines[0].startswith("hloscope build: installing pure Python: the C compile failed")
    assert build.compiled_files(tmp_path / "hloscope") == [tmp_path / "hloscope" / compiled.MANIFEST]


def test_every_compiled_module_exists_and_none_uses_cached_property() -> None:
    for module in build.COMPILED_MODULES:
        src = build.source_path(module, ROOT)
        assert src.exists(), module
        # A compiled class has no instance __dict__: cached_property would recompute on every read
        # (the call graph rebuilt per pair: 20 s instead of 0.3 s on the 32-layer module).
        assert "cached_property" not in src.read_text(), module


def test_compiled_modules_bind_each_except_name_to_one_type() -> None:
    """mypyc types a local once per function: ``except A as e`` then ``except B as e`` raises
    TypeError at run time in the compiled build (found on the parser's unbalanced-bracket error)."""
    found = []
    for module in build.COMPILED_MODULES:
        path = build.source_path(module, ROOT)
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            types: dict[str, set[str]] = {}
            for node in ast.walk(fn):
                if isinstance(node, ast.ExceptHandler) and node.name:
                    types.setdefault(node.name, set()).add(ast.unparse(node.type) if node.type else "")
            found += [f"{path.name}:{fn.lineno} {name}: {sorted(t)}" for name, t in types.items() if len(t) > 1]
    assert found == []


@pytest.mark.skipif(os.environ.get("HLOSCOPE_EXPECT_COMPILED") != "1",
                    reason="runs in .ci/run's compiled-build steps (HLOSCOPE_EXPECT_COMPILED=1)")
def test_the_compiled_build_is_what_runs() -> None:
    for module in build.COMPILED_MODULES:
        path = importlib.import_module(module).__file__ or ""
        assert path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), (module, path)
    assert compiled.current().runs_compiled and compiled.current().stale == ()
    assert compiled.current().compiled == build.COMPILED_MODULES


@pytest.mark.skipif(os.environ.get(compiled.PURE_ENV) != "1", reason="runs in .ci/run's pure-Python steps (HLOSCOPE_PURE=1)")
def test_the_pure_build_is_what_runs() -> None:
    for module in build.COMPILED_MODULES:
        assert (importlib.import_module(module).__file__ or "").endswith(".py"), module
    assert not compiled.current().runs_compiled
