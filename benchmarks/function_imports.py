"""Imports inside function bodies in ``hloscope/`` (issue 45, "faces without hidden doors").

    python benchmarks/function_imports.py                  # totals for this checkout
    python benchmarks/function_imports.py --list reload    # every re-load, FILE:LINE: statement
    python benchmarks/function_imports.py --list bare      # every function-level import with no reason
    python benchmarks/function_imports.py --tree /tmp/old  # another checkout, beside this one

A *function-level import* is an ``import`` or ``from ... import`` whose parent is a function (or
a lambda). It is a *re-load* when every module it loads is one the file's own top-level imports
already load (a top-level ``import a.b`` loads ``a`` and ``a.b``; ``from a import b`` loads ``a``,
and ``a.b`` when that is a module of the package): the import hides nothing and saves nothing.
Imports under ``if TYPE_CHECKING:`` load nothing at run time and do not count as top-level loads.
A function-level import *has a reason* when a comment on one of its lines, or a comment line right
above it (or above the run of imports it is in), says why it is there after ``lazy:``
(``# lazy: jax is slow to import``).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import io
import json
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
#: How a function-level import says why it is there: ``# lazy: <the reason>``.
LAZY = "lazy:"


@dataclass(frozen=True)
class FunctionImport:
    """One import inside a function body: where it is, what it loads, and whether it says why."""

    path: str  # relative to the tree, with '/'
    line: int  # 1-based, the statement's first line
    statement: str  # the source text, on one line
    loads: frozenset[str]  # the modules it loads (dotted names)
    reload: bool  # every module it loads is already loaded by the file's top level
    reason: str  # what its "# lazy: ..." comment says, '' when none


def _is_type_checking(test: ast.expr) -> bool:
    return ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _module_name(pkg_root: Path, path: Path) -> str:
    parts = list(path.relative_to(pkg_root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(pkg_root: Path, dotted: str) -> bool:
    """Whether ``dotted`` names a module or package (this tree's own package, or one installed),
    found on disk without importing anything."""
    parts = dotted.split(".")
    if parts[0] == pkg_root.name:
        places = [pkg_root.parent]
    else:
        try:
            spec = importlib.util.find_spec(parts[0])  # a top-level name: nothing is imported
        except (ImportError, ValueError):
            return False
        if spec is None or not spec.submodule_search_locations:
            return False
        places = [Path(p).parent for p in spec.submodule_search_locations]
    for place in places:
        base = place.joinpath(*parts)
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file() or any(base.parent.glob(
                f"{parts[-1]}.*.so")):
            return True
    return False


def _with_parents(dotted: str) -> set[str]:
    parts = dotted.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


def _base(node: ast.ImportFrom, here: str, is_pkg: bool) -> str:
    """The absolute module a ``from ... import`` reads from."""
    if not node.level:
        return node.module or ""
    anchor = here.split(".") if is_pkg else here.split(".")[:-1]
    anchor = anchor[: len(anchor) - (node.level - 1)]
    return ".".join([*anchor, *([node.module] if node.module else [])])


def _targets(node: ast.Import | ast.ImportFrom, pkg_root: Path, here: str, is_pkg: bool) -> set[str]:
    """The modules one import statement asks for: ``import a.b`` asks for ``a.b``; ``from a import
    b`` for ``a.b`` when that is a module of the package, else for ``a``."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    base = _base(node, here, is_pkg)
    return {f"{base}.{a.name}" if _is_module(pkg_root, f"{base}.{a.name}") else base for a in node.names}


def _loads(node: ast.Import | ast.ImportFrom, pkg_root: Path, here: str, is_pkg: bool) -> set[str]:
    """The modules one import statement loads: what it asks for and the packages above them."""
    return {m for t in _targets(node, pkg_root, here, is_pkg) for m in _with_parents(t)}


def _comments(source: str) -> dict[int, str]:
    out: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string.lstrip("#").strip()
    return out


def scan_file(pkg_root: Path, path: Path) -> list[FunctionImport]:
    """Every function-level import of one file of the package rooted at ``pkg_root``."""
    source = path.read_text()
    tree = ast.parse(source, filename=str(path))
    here = _module_name(pkg_root, path)
    is_pkg = path.name == "__init__.py"
    top: set[str] = set()
    inner: list[ast.Import | ast.ImportFrom] = []

    def walk(node: ast.AST, in_fn: bool, typing_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                if in_fn:
                    inner.append(child)
                elif not typing_only:
                    top.update(_loads(child, pkg_root, here, is_pkg))
                continue
            if isinstance(child, ast.If) and not in_fn and _is_type_checking(child.test):
                for stmt in child.body:
                    walk_one(stmt, in_fn, True)
                for stmt in child.orelse:
                    walk_one(stmt, in_fn, typing_only)
                continue
            walk(child, in_fn or isinstance(child, _FUNCTION), typing_only)

    def walk_one(stmt: ast.stmt, in_fn: bool, typing_only: bool) -> None:
        holder = ast.Module(body=[stmt], type_ignores=[])
        walk(holder, in_fn, typing_only)

    walk(tree, False, False)
    comments = _comments(source)
    rel = path.relative_to(pkg_root.parent).as_posix()
    lines = source.splitlines()
    found = []
    import_lines = {n for node in inner for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)}
    for node in inner:
        end = node.end_lineno or node.lineno
        said = [comments[n] for n in range(node.lineno, end + 1) if n in comments]
        above = node.lineno - 1
        while above in import_lines:  # a comment over a run of imports speaks for each of them
            above -= 1
        if above in comments and lines[above - 1].lstrip().startswith("#"):
            said.append(comments[above])
        reason = next((c.split(LAZY, 1)[1].strip() for c in said if LAZY in c), "")
        targets = _targets(node, pkg_root, here, is_pkg)
        text = " ".join(part.strip() for part in lines[node.lineno - 1:end]).split("  #")[0].split(" #")[0]
        found.append(FunctionImport(rel, node.lineno, text, frozenset(targets), targets <= top, reason))
    return found


def scan(tree: Path) -> list[FunctionImport]:
    """Every function-level import of ``tree/hloscope``, file by file."""
    pkg_root = tree / "hloscope"
    return [imp for path in sorted(pkg_root.rglob("*.py")) for imp in scan_file(pkg_root, path)]


def counts(found: list[FunctionImport]) -> dict[str, int]:
    return {"function_level_imports": len(found),
            "reloads": sum(1 for f in found if f.reload),
            "without_reason": sum(1 for f in found if not f.reason),
            "files_with_any": len({f.path for f in found})}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, action="append", default=[], help="another checkout (repeatable)")
    ap.add_argument("--list", choices=("all", "reload", "bare"), help="list the imports of one kind")
    args = ap.parse_args()
    rows = {}
    for tree in [*args.tree, ROOT]:
        found = scan(tree)
        rows[str(tree)] = counts(found)
        if args.list:
            for f in found:
                if args.list == "all" or (args.list == "reload" and f.reload) or (args.list == "bare" and not f.reason):
                    print(f"{f.path}:{f.line}: {f.statement}" + (f"  # {f.reason}" if f.reason else ""))
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
