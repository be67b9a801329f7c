"""Count the sentences written in the analysis and check layers (issue 26: words only in render/).

A *sentence* is a string literal (or f-string) of five words or more; a word is a run of
non-blank characters with a letter in it (an f-string's placeholders are not words). Not
counted: docstrings, the arguments of log calls (``log.debug(...)``, ``logger.warning(...)``,
``logging.info(...)``, ``warnings.warn(...)``) and the messages of
exceptions raised where bad input is found (anything inside a ``raise`` statement), which are
worded where they are raised.

    python benchmarks/prose_literals.py            # the count per file and the total
    python benchmarks/prose_literals.py --list     # every literal counted, FILE:LINE: text
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("hloscope/analysis", "hloscope/check")
MIN_WORDS = 5
_LOG_OWNERS = frozenset({"log", "logger", "logging", "_log", "_logger", "LOG", "warnings"})


def _text(node: ast.AST) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    assert isinstance(node, ast.JoinedStr)
    return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else " "
                   for v in node.values)


def words(text: str) -> int:
    """Words in ``text``: blank-separated runs with a letter in them (placeholders are blanks)."""
    return sum(any(c.isalpha() for c in w) for w in text.split())


def _skipped(tree: ast.Module) -> set[int]:
    """ids of the nodes whose strings are not counted (docstrings, log calls, raise statements)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                skip.add(id(body[0].value))
        elif isinstance(node, ast.Raise):
            skip.update(id(n) for n in ast.walk(node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id in _LOG_OWNERS:
                skip.update(id(n) for n in ast.walk(node))
    return skip


def sentences(path: Path, min_words: int = MIN_WORDS) -> list[tuple[int, str]]:
    """(line, text) of every counted literal of ``min_words`` words or more in one file."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _skipped(tree)
    inside_fstrings = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in ast.walk(n)
                       if v is not n}
    out = []
    for node in ast.walk(tree):
        if id(node) in skip or id(node) in inside_fstrings:
            continue
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            text = _text(node)
            if words(text) >= min_words:
                out.append((node.lineno, text))
    return sorted(out)


def count(root: Path = ROOT) -> dict[str, list[tuple[int, str]]]:
    """Counted literals per file (relative path), for the files of ``LAYERS`` that hold any."""
    found: dict[str, list[tuple[int, str]]] = {}
    for layer in LAYERS:
        for path in sorted((root / layer).rglob("*.py")):
            got = sentences(path)
            if got:
                found[str(path.relative_to(root))] = got
    return found


def main(argv: list[str]) -> int:
    found = count()
    for name, got in found.items():
        if "--list" in argv:
            for line, text in got:
                print(f"{name}:{line}: {text!r}")
        else:
            print(f"{len(got):4d}  {name}")
    print(f"{sum(len(g) for g in found.values()):4d}  total in {', '.join(LAYERS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
