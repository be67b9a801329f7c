"""``hloscope.analysis`` reads no files: it takes bytes, text or parsed records, never a path.

The files are opened on the sources side (``hloscope/hlo/``: ``loader``, ``archive``, ``xla_dumps``,
``folders``, ``profile_files``); an analysis that opened one would be a second reader of a format
whose errors and caching live there. The check reads each module's syntax tree, so prose and
comments that name ``open()`` do not count.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ANALYSIS = ROOT / "hloscope" / "analysis"

#: Methods that read or open a file: ``Path.read_bytes``/``read_text``/``open``, ``gzip.open``,
#: ``os.listdir`` and the other ways to list a folder.
FILE_METHODS = frozenset({"read_bytes", "read_text", "open", "iterdir", "glob", "rglob", "listdir", "scandir",
                          "walk"})
#: Modules whose only use is to reach the file system: archives, paths, folder listings.
FILE_MODULES = frozenset({"zipfile", "tarfile", "pathlib", "glob", "shutil"})


def file_uses(source: str) -> list[str]:
    """``line: what`` for each place Python ``source`` opens, reads or lists a file, or imports a
    module that does."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id == "open":
                found.append(f"{node.lineno}: open()")
            elif isinstance(f, ast.Attribute) and f.attr in FILE_METHODS:
                found.append(f"{node.lineno}: .{f.attr}()")
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] in FILE_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in FILE_MODULES:
            found.append(f"{node.lineno}: from {node.module} import")
    return sorted(found, key=lambda use: int(use.split(":")[0]))


def test_the_check_finds_each_kind_of_file_use() -> None:
    source = ("import zipfile\nfrom pathlib import Path\nwith open(p, 'rb') as f: pass\ndata = Path(p).read_bytes()\n"
              "text = p.read_text()\ng = gzip.open(p)\n"
              "# open() in a comment\n'''read_bytes() in prose'''\nx = ins.bytes_read\ny = b.read_bytes\n")
    assert [u.split(":")[0] for u in file_uses(source)] == ["1", "2", "3", "4", "5", "6"]


def test_analysis_opens_no_file() -> None:
    modules = sorted(ANALYSIS.rglob("*.py"))
    assert len(modules) > 20  # the scan sees the package (a moved folder would make it pass on nothing)
    offenders = [f"{path.relative_to(ROOT)}:{use}" for path in modules
                 for use in file_uses(path.read_text(encoding="utf-8"))]
    assert offenders == [], "analysis/ takes bytes or records; read the file in hloscope/hlo/:\n" + "\n".join(offenders)
