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
"""

from __future__ import annotations

import argparse
import ast
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
    args = ap.parse_args()
    trees = [*args.tree, HERE.parent]
    rows = {}
    for tree in trees:
        row = static_counts(tree)
        if not args.no_walk:
            row["walk"] = walk_counts(tree)
        rows[str(tree)] = row
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
