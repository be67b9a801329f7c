"""The shape of the house, counted the same way on any checkout of hloscope (issue 35's figures).

    python benchmarks/house_counts.py                 # this checkout
    python benchmarks/house_counts.py --tree /tmp/old # another checkout, side by side with this one

For each tree: Python files per room (each folder of ``hloscope/``; the package's own top-level
modules as ``hloscope``), imports inside functions (an ``import`` or ``from ... import`` whose
parent is a function: the imports a reader cannot see at the top of a file), names of ``Any``
(``typing.Any`` used in the code, imports of it not counted), and the walk of one
``hloscope analyze`` of an nsys-jax archive (fixtures/measured/pax_fsdp4_proc0.nsys.zip): the
hloscope modules it imports, the distinct hloscope functions it calls, and how often it opens the
archive (an audit hook), in a fresh interpreter of the current Python with the tree first on the path.

    python benchmarks/house_counts.py --package hloscope/compile            # one package, by folder
    python benchmarks/house_counts.py --package hloscope/compile --walk-compile

``--package``: for each folder of that package, its files, lines, uses of ``Any``, functions over
100 lines (named), imports inside functions, and how many of those re-load a module the file's top
level already imports (issue 45's hidden doors). ``--walk-compile``: the walk of one
``hloscope compile --workload llama --target h100-sxm --devices 8`` (in this process, no cache): the
modules of the package in the order their first function (not a module's or class's own body) is called.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARCHIVE = "fixtures/measured/pax_fsdp4_proc0.nsys.zip"

_WALK = r"""
import json, os, sys
tree, archive = sys.argv[1], sys.argv[2]
pkg = os.path.join(tree, "hloscope") + os.sep
opens = 0
def audit(event, args):
    global opens
    if event == "open" and args and os.path.abspath(str(args[0])) == os.path.abspath(archive):
        opens += 1
sys.addaudithook(audit)
called = set()
def profile(frame, event, arg):
    if event == "call" and frame.f_code.co_filename.startswith(pkg):
        called.add((frame.f_code.co_filename, frame.f_code.co_qualname))
sys.setprofile(profile)
import contextlib, io
from hloscope.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(["analyze", archive])
sys.setprofile(None)
mods = sorted(m for m, v in sys.modules.items() if m.startswith("hloscope") and getattr(v, "__file__", None))
print(json.dumps({"rc": rc, "modules": len(mods), "functions": len(called), "archive_opens": opens}))
"""


def _inside_function(tree: ast.AST) -> int:
    count = 0

    def walk(node: ast.AST, in_fn: bool) -> None:
        nonlocal count
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_fn:
                count += 1
            walk(child, in_fn or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(tree, False)
    return count


def _any_uses(tree: ast.AST) -> int:
    names = sum(1 for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "Any")
    attrs = sum(1 for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "Any")
    # Annotations written as strings (from __future__ import annotations keeps them as code, but a
    # quoted one is a string): count 'Any' as a word in those too.
    quoted = sum(str(n.value).replace("[", " ").replace("]", " ").replace(",", " ").split().count("Any")
                 for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                 and "Any" in n.value and len(n.value) < 200 and "[" in n.value)
    return names + attrs + quoted


def static_counts(tree: Path) -> dict[str, object]:
    pkg = tree / "hloscope"
    rooms: Counter[str] = Counter()
    fn_imports = 0
    any_uses = 0
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(pkg)
        rooms["hloscope" if len(rel.parts) == 1 else "hloscope/" + "/".join(rel.parts[:-1])] += 1
        source = ast.parse(path.read_text(), filename=str(path))
        fn_imports += _inside_function(source)
        any_uses += _any_uses(source)
    return {"files": sum(rooms.values()), "rooms": dict(sorted(rooms.items())),
            "function_level_imports": fn_imports, "any": any_uses}


def _loads(node: ast.Import | ast.ImportFrom, tree: Path) -> set[str]:
    """The modules an import statement loads: ``from a import b`` loads a.b when b is a module of
    the tree (a file or a folder), else a."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if node.level or not node.module:
        return {f".{node.module or ''}"}
    loads = set()
    for alias in node.names:
        name = f"{node.module}.{alias.name}"
        if node.module.split(".")[0] == "hloscope":
            sub = tree.joinpath(*name.split("."))
            is_module = sub.is_dir() or sub.with_suffix(".py").exists()
        elif node.module.split(".")[0] in sys.stdlib_module_names:
            is_module = importlib.util.find_spec(node.module) is not None and _is_submodule(name)
        else:  # another package: not imported here to find out; count it as a module of its own
            is_module = True
        loads.add(name if is_module else node.module)
    return loads


def _is_submodule(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _function_imports(source: ast.Module, tree: Path) -> tuple[int, int]:
    """(imports inside functions, those of them loading only modules the file's top level loads at
    run time; imports under ``if TYPE_CHECKING:`` are not loaded)."""
    top: set[str] = set()
    for stmt in source.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            top |= _loads(stmt, tree)
    total = again = 0

    def walk(node: ast.AST, in_fn: bool) -> None:
        nonlocal total, again
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_fn:
                total += 1
                again += _loads(child, tree) <= top
            walk(child, in_fn or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(source, False)
    return total, again


def package_counts(tree: Path, package: str) -> dict[str, object]:
    """Per folder of ``package`` (a path such as hloscope/compile): files, lines, Any, long functions, imports."""
    root = tree / package
    rows: dict[str, dict[str, object]] = {}
    totals: Counter[str] = Counter()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(tree)
        folder = "/".join(rel.parts[:-1])
        text = path.read_text()
        source = ast.parse(text, filename=str(path))
        row = rows.setdefault(folder, {"files": 0, "lines": 0, "any": 0, "fn_imports": 0, "fn_imports_again": 0,
                                       "functions_over_100_lines": []})
        long_fns = [f"{path.stem}.{n.name} ({(n.end_lineno or n.lineno) - n.lineno + 1})"
                    for n in ast.walk(source) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and (n.end_lineno or n.lineno) - n.lineno + 1 > 100]
        fn_imports, again = _function_imports(source, tree)
        counts = {"files": 1, "lines": len(text.splitlines()), "any": _any_uses(source), "fn_imports": fn_imports,
                  "fn_imports_again": again}
        for key, value in counts.items():
            row[key] = int(row[key]) + value  # type: ignore[call-overload]
            totals[key] += value
        row["functions_over_100_lines"] = [*row["functions_over_100_lines"], *long_fns]  # type: ignore[misc]
        totals["functions_over_100_lines"] += len(long_fns)
    return {"folders": rows, "total": dict(totals)}


_WALK_COMPILE = r"""
import json, os, sys, tempfile
tree = sys.argv[1]
pkg = os.path.join(tree, "hloscope") + os.sep
first = {}
def profile(frame, event, arg):
    code = frame.f_code
    # Functions only: not a module's or a class body's own code (no CO_OPTIMIZED), nor <genexpr> and the like.
    if event == "call" and code.co_filename.startswith(pkg) and code.co_flags & 1 and code.co_name[0] != "<":
        mod = frame.f_globals.get("__name__", "?")
        if mod not in first:
            first[mod] = code.co_qualname
sys.setprofile(profile)
import contextlib, io
from hloscope.cli.main import main
out = tempfile.mkdtemp()
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(["compile", "--workload", "llama", "--target", "h100-sxm", "--devices", "8", "--out",
               os.path.join(out, "a"), "--no-cache"])
sys.setprofile(None)
print(json.dumps({"rc": rc, "walk": [[m, f] for m, f in first.items()]}))
"""


def walk_compile(tree: Path, package: str) -> dict[str, object]:
    """The modules one compile of the built-in llama for 8 H100s calls, in order of their first call."""
    env = {**os.environ, "PYTHONPATH": str(tree), "HLOSCOPE_IN_PROCESS": "1", "HLOSCOPE_NO_CACHE": "1"}
    out = subprocess.run([sys.executable, "-c", _WALK_COMPILE, str(tree)], env=env, capture_output=True, text=True,
                         cwd=tree, check=False)
    if out.returncode != 0 or not out.stdout.strip():
        return {"error": (out.stderr.strip().splitlines() or ["no output"])[-1]}
    got = json.loads(out.stdout.strip().splitlines()[-1])
    dotted = package.replace("/", ".")
    walk = [f"{m}:{f}" for m, f in got["walk"] if m.startswith(dotted)]
    return {"rc": got["rc"], "modules_called": len(got["walk"]), f"{dotted}_modules_called": len(walk),
            "walk": walk}


def walk_counts(tree: Path) -> dict[str, object]:
    archive = tree / ARCHIVE
    if not archive.exists():
        archive = HERE.parent / ARCHIVE
    env = {**os.environ, "PYTHONPATH": str(tree), "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", _WALK, str(tree), str(archive)], env=env, capture_output=True,
                         text=True, cwd=tree, check=False)
    if out.returncode != 0 or not out.stdout.strip():
        return {"error": (out.stderr.strip().splitlines() or ["no output"])[-1]}
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, action="append", default=[],
                    help="another checkout to count beside this one (repeatable)")
    ap.add_argument("--no-walk", action="store_true", help="static counts only")
    ap.add_argument("--package", help="count one package by folder (e.g. hloscope/compile), not the whole house")
    ap.add_argument("--walk-compile", action="store_true",
                    help="with --package: the walk of one compile of the built-in llama for 8 H100s")
    args = ap.parse_args()
    trees = [*args.tree, HERE.parent]
    rows: dict[str, object] = {}
    if args.package:
        for tree in trees:
            counted = package_counts(tree, args.package)
            if args.walk_compile:
                counted["walk_compile"] = walk_compile(tree, args.package)
            rows[str(tree)] = counted
        print(json.dumps(rows, indent=1))
        return 0
    for tree in trees:
        row = static_counts(tree)
        if not args.no_walk:
            row["walk"] = walk_counts(tree)
        rows[str(tree)] = row
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
