"""Faces without hidden doors (issue 45): an import inside a function is there to keep start-up fast
and says so (``# lazy: <why>``); none re-loads a module the file's own top level already loads.

The counter is ``benchmarks/function_imports.py`` (``--list reload`` and ``--list bare`` name them).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]



def _counter() -> ModuleType:
    spec = importlib.util.spec_from_file_location("function_imports", ROOT / "benchmarks" / "function_imports.py")
    assert spec is not None and spec.loader is not None
    mod = sys.modules.get(spec.name) or importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass looks its module up there
    spec.loader.exec_module(mod)
    return mod


def _found() -> list:  # type: ignore[type-arg]
    return list(_counter().scan(ROOT))


def test_no_function_level_import_reloads_what_the_top_level_loads() -> None:
    reloads = [f"{f.path}:{f.line}: {f.statement}" for f in _found() if f.reload]
    assert reloads == [], "\n".join(reloads)


def test_every_function_level_import_says_why() -> None:
    bare = [f"{f.path}:{f.line}: {f.statement}" for f in _found() if not f.reason]
    assert bare == [], "add '# lazy: <why>' or import it at the top:\n" + "\n".join(bare)


def test_the_counter_counts_what_it_says(tmp_path: Path) -> None:
    # Given a package whose module imports at its top, under TYPE_CHECKING and inside functions
    pkg = tmp_path / "hloscope"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "leaf.py").write_text("X = 1\n")
    (pkg / "m.py").write_text(
        "from __future__ import annotations\n"
        "import json\n"
        "from typing import TYPE_CHECKING\n"
        "from hloscope.sub.leaf import X\n"
        "if TYPE_CHECKING:\n"
        "    import csv\n"
        "def f() -> None:\n"
        "    import json\n"                                   # 8: re-load, no reason
        "    from hloscope.sub import leaf  # lazy: no\n"     # 9: re-load (hloscope.sub.leaf is loaded)
        "    import csv  # lazy: only under TYPE_CHECKING at the top\n"  # 10: not a re-load
        "    # lazy: a run of two\n"
        "    import zipfile\n"                                # 12: reason from the line above
        "    import tarfile\n"                                # 13: same run, same reason
        "    print(zipfile, tarfile)\n"                      # 14: the run ends
        "    from hloscope import sub\n"                      # 15: hloscope.sub: loaded as X's parent
        "g = lambda: __import__('os')\n")
    found = {f.line: f for f in _counter().scan(tmp_path)}
    # Then each import is counted once, a re-load only when everything it loads is loaded already
    assert sorted(found) == [8, 9, 10, 12, 13, 15]
    assert [n for n, f in sorted(found.items()) if f.reload] == [8, 9, 15]
    assert {n: f.reason for n, f in found.items()} == {
        8: "", 9: "no", 10: "only under TYPE_CHECKING at the top", 12: "a run of two", 13: "a run of two", 15: ""}
