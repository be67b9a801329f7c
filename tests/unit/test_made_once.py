"""Made once, never patched (issue 26 item 5, STYLE.md 15): names, verdicts and timings are
computed before the objects that hold them are built, so nothing in the package calls
``dataclasses.replace`` on a HostTransfer, a Verdict or a TransferTiming. (The compile layer's
CompileResult is issue 26's part A; add ``"result"`` to ``_MADE_ONCE`` when it lands.)"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: What transfers, verdicts, timings and compile results are called where they are handled.
_MADE_ONCE = ("transfer", "verdict", "timing")
_SHORT = ("t", "v", "w", "r")


def replace_calls_on_made_once(path: Path) -> list[str]:
    """``LINE: call`` for each ``replace(x, ...)`` whose ``x`` is named like one of them."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and node.args:
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            first = ast.unparse(node.args[0]).rsplit(".", 1)[-1].lower()
            if name == "replace" and (first in _SHORT or any(k in first for k in _MADE_ONCE)):
                out.append(f"{node.lineno}: {ast.unparse(node)[:80]}")
    return out


def test_no_transfer_verdict_or_timing_is_patched() -> None:
    found = {str(p.relative_to(ROOT)): got for p in sorted((ROOT / "hloscope").rglob("*.py"))
             if (got := replace_calls_on_made_once(p))}
    assert found == {}


def test_the_detector_sees_the_patches_it_forbids(tmp_path: Path) -> None:
    # Given the patches names.py and overlap.py made before (and two like them), and a config replace
    sample = tmp_path / "m.py"
    sample.write_text("import dataclasses\nfrom dataclasses import replace\n"
                      "a = dataclasses.replace(t, checkpoint_name='x')\nb = replace(v, verdict=1)\n"
                      "c = replace(verdict.timing, wait_us=0)\nd = replace(host_transfer, bytes=0)\n"
                      "e = replace(cfg, target='h100')\n")
    # Then the four patches are found and the config's replace is not
    assert [ln.split(":")[0] for ln in replace_calls_on_made_once(sample)] == ["3", "4", "5", "6"]
