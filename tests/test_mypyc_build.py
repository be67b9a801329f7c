"""The optional compiled build (hloscope.mypyc_build): what it finds, what it removes, and the
rules the compiled modules' source must keep for mypyc to run it as Python does."""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import os
from pathlib import Path

import pytest

from hloscope import buildinfo, mypyc_build

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
ROOT = Path(__file__).resolve().parents[1]


def _tree(tmp_path: Path, module: str, compiled_after_source: bool, group: bool = True) -> tuple[Path, Path]:
    src = tmp_path.joinpath(*module.split(".")).with_suffix(".py")
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text("x = 1\n")
    so = src.with_suffix("").with_name(src.stem + SUFFIX)
    so.write_bytes(b"\x7fELF")
    if group:
        (tmp_path / "hloscope" / f"{buildinfo.GROUP_FILE}{SUFFIX}").write_bytes(b"\x7fELF")
    older, newer = 1_700_000_000, 1_700_000_100
    os.utime(src, (older, newer if not compiled_after_source else older))
    os.utime(so, (older, newer if compiled_after_source else older))
    return src, so


def test_a_tree_never_built_has_nothing_compiled_or_stale(tmp_path: Path) -> None:
    assert buildinfo.build_status(tmp_path) == buildinfo.BuildStatus((), ())
    assert buildinfo.stale_modules(tmp_path) == ()


def test_a_source_edited_after_the_build_is_stale(tmp_path: Path) -> None:
    _tree(tmp_path, "hloscope.hlo.parser", compiled_after_source=False)
    _tree(tmp_path, "hloscope.analysis.cost.roofline", compiled_after_source=True)
    status = buildinfo.build_status(tmp_path)
    assert status.compiled == ("hloscope.hlo.parser", "hloscope.analysis.cost.roofline")
    assert status.stale == ("hloscope.hlo.parser",)
    assert buildinfo.stale_modules(tmp_path) == ("hloscope.hlo.parser",)


def test_stale_modules_looks_only_where_a_build_left_its_shared_library(tmp_path: Path) -> None:
    _tree(tmp_path, "hloscope.hlo.parser", compiled_after_source=False, group=False)
    assert buildinfo.build_status(tmp_path).stale == ("hloscope.hlo.parser",)
    assert buildinfo.stale_modules(tmp_path) == ()  # the cheap check import hloscope makes


def test_a_module_an_older_build_compiled_is_stale_and_cleaned(tmp_path: Path) -> None:
    src, so = _tree(tmp_path, "hloscope.hlo.general", compiled_after_source=True)  # not in the list
    assert "hloscope.hlo.general" not in buildinfo.COMPILED_MODULES
    assert buildinfo.build_status(tmp_path) == buildinfo.BuildStatus(("hloscope.hlo.general",),
                                                                      ("hloscope.hlo.general",))
    assert so in mypyc_build.clean(tmp_path) and src.exists() and not so.exists()


def test_clean_removes_every_compiled_file_and_nothing_else(tmp_path: Path) -> None:
    src, so = _tree(tmp_path, "hloscope.hlo.parser", compiled_after_source=True)
    other = src.with_name("notes.txt")
    other.write_text("kept")
    removed = mypyc_build.clean(tmp_path)
    assert set(removed) == {so, tmp_path / "hloscope" / f"{buildinfo.GROUP_FILE}{SUFFIX}"}
    assert src.exists() and other.exists() and not so.exists()
    assert buildinfo.build_status(tmp_path).compiled == ()


def test_the_shared_library_is_inside_the_package_and_init_knows_its_name() -> None:
    # Beside the package, an editable install run from another folder did not find it (CI's doc
    # blocks: "No module named 'hloscope__mypyc'").
    assert buildinfo.GROUP.startswith("hloscope.")
    assert f'"{buildinfo.GROUP_FILE}' in (ROOT / "hloscope" / "__init__.py").read_text()


def test_every_compiled_module_exists_and_none_uses_cached_property() -> None:
    for module in buildinfo.COMPILED_MODULES:
        src = ROOT.joinpath(*module.split(".")).with_suffix(".py")
        assert src.exists(), module
        # A compiled class has no instance __dict__: cached_property would recompute on every read
        # (the call graph rebuilt per pair: 20 s instead of 0.3 s on the 32-layer module).
        assert "cached_property" not in src.read_text(), module


def test_compiled_modules_bind_each_except_name_to_one_type() -> None:
    """mypyc types a local once per function: ``except A as e`` then ``except B as e`` raises
    TypeError at run time in the compiled build (found on the parser's unbalanced-bracket error)."""
    found = []
    for module in buildinfo.COMPILED_MODULES:
        path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
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
                    reason="runs in .ci/run's compiled-build step (HLOSCOPE_EXPECT_COMPILED=1)")
def test_the_compiled_build_is_what_runs() -> None:
    for module in buildinfo.COMPILED_MODULES:
        path = importlib.import_module(module).__file__ or ""
        assert path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), (module, path)
    assert buildinfo.build_status().stale == ()
