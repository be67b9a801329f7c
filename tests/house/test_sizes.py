"""No module a reader cannot hold (issue 54): no module of the package over 700 lines, no function
over 100 (``end_lineno - lineno + 1`` of its ``def``, nested functions counted apart too).

The allow-lists name the ones still over, each with why; empty them as they are split, and never
add to them: a new module or function over the bar fails here.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "hloscope"
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 100

#: Modules still over MAX_MODULE_LINES (path under hloscope/ -> why).
MODULES_OVER: dict[str, str] = {}
#: Functions still over MAX_FUNCTION_LINES ("path:qualified name" -> why).
FUNCTIONS_OVER: dict[str, str] = {}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _long_functions(path: Path) -> dict[str, int]:
    """``qualified name -> lines`` of each function (or method) of ``path`` over the bar."""
    out: dict[str, int] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    assert child.end_lineno is not None
                    size = child.end_lineno - child.lineno + 1
                    if size > MAX_FUNCTION_LINES:
                        out[name] = size
                walk(child, f"{name}.")
            else:
                walk(child, prefix)

    walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), "")
    return out


@functools.cache
def _over() -> tuple[dict[str, int], dict[str, int]]:
    modules: dict[str, int] = {}
    functions: dict[str, int] = {}
    for path in _modules():
        rel = path.relative_to(PACKAGE).as_posix()
        lines = _lines(path)
        if lines > MAX_MODULE_LINES:
            modules[rel] = lines
        for name, size in _long_functions(path).items():
            functions[f"{rel}:{name}"] = size
    return modules, functions


def test_no_module_over_700_lines_but_the_allowed() -> None:
    modules, _ = _over()
    new = {rel: n for rel, n in modules.items() if rel not in MODULES_OVER}
    assert new == {}, f"modules over {MAX_MODULE_LINES} lines: split them by job: {new}"


def test_no_function_over_100_lines_but_the_allowed() -> None:
    _, functions = _over()
    new = {name: n for name, n in functions.items() if name not in FUNCTIONS_OVER}
    assert new == {}, f"functions over {MAX_FUNCTION_LINES} lines: split them by job: {new}"


def test_the_allow_lists_name_only_what_is_still_over() -> None:
    # An entry left behind after its module or function was split would let it grow back unseen.
    modules, functions = _over()
    assert sorted(set(MODULES_OVER) - set(modules)) == []
    assert sorted(set(FUNCTIONS_OVER) - set(functions)) == []


_BODY = "    x = 1\n"


@pytest.mark.parametrize(("source", "expected"), [
    ("def f():\n" + _BODY * 99 + "    return x\n", {"f": 101}),
    ("def f():\n" + _BODY * 98 + "    return x\n", {}),  # 100 lines: at the bar, not over
    ("class C:\n    def m(self):\n" + ("    " + _BODY) * 99 + "        return x\n", {"C.m": 101}),
    ("def outer():\n    def inner():\n" + ("    " + _BODY) * 99 + "        return x\n    return inner\n",
     {"outer": 103, "outer.inner": 101}),
], ids=["101 lines", "100 lines", "a method", "nested"])
def test_the_counter_counts_from_def_to_the_last_line(tmp_path: Path, source: str, expected: dict[str, int]) -> None:
    # Given a module holding one function of a known length, When it is counted, Then only one over 100 is named
    path = tmp_path / "m.py"
    path.write_text(source)
    assert _long_functions(path) == expected
