"""Output shown in the docs is what the command prints today.

A ``text`` block that starts with ``$ hloscope ...`` shows a command and what it
printed. Each such command runs here (in a scratch folder, the repository on
``PYTHONPATH``), and every line of the block must be in its output: compared with
runs of spaces collapsed (a table's column widths, a line the doc wraps by hand), a
line that ends in ``...`` up to there, a line of only ``...`` an elision, a ``...`` inside a line
anything on that same line. A figure that
drifts (the step's collectives, a count of hidden transfers) fails here. Blocks that
cannot run here say why in :data:`NOT_RUN`.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.test_doc_blocks import ROOT, SLOW, Block, blocks

#: Shown runs not repeated here, by a fragment of the command: why.
NOT_RUN = {
    "hloscope diff baseline.json": "needs the reader's baseline.json and a batch-4 405B step",
    "hloscope sweep llama3-405b": "a 405B sweep compiles 18 cells of 126 layers: hours on a 2-core machine",
}


#: ``(exit 1)``: the exit status the doc shows for the command.
EXIT_LINE = re.compile(r"\(exit (\d+)\)")


def shown_runs() -> list[object]:
    out: list[object] = []
    for b in blocks():
        first = b.text.split("\n", 1)[0]
        if b.lang != "text" or not first.startswith("$ hloscope "):
            continue
        why = next((w for frag, w in NOT_RUN.items() if frag in first), None)
        marks = [pytest.mark.xla] + ([pytest.mark.slow] if SLOW.search(first) else [])
        if why:
            marks.append(pytest.mark.skip(reason=why))
        out.append(pytest.param(b, id=b.name, marks=marks))
    return out


def _squash(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def missing_lines(block: Block, output: str) -> list[str]:
    """The block's lines (after the command) that the output does not have."""
    have = _squash(output)
    missing = []
    for line in block.text.splitlines()[1:]:
        want = line.strip()
        if not want or want == "..." or EXIT_LINE.fullmatch(want):
            continue
        if want.endswith("..."):
            want = want[:-3]
        if "..." in want:  # an elision inside the line: its parts, in order, on one line of the output
            if not any(_in_order(_squash(want).split("..."), _squash(out)) for out in output.splitlines()):
                missing.append(line)
            continue
        if _squash(want) not in have:
            missing.append(line)
    return missing


def _in_order(parts: list[str], line: str) -> bool:
    """Whether ``parts`` appear in ``line`` in order, none overlapping."""
    at = 0
    for part in parts:
        found = line.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


def test_the_matcher_fails_on_a_changed_figure() -> None:
    block = Block(ROOT / "README.md", 1, "text", "$ hloscope x\nsimulated step: 1.0 s = compute 0.5 s + ...\n"
                                              "  a   b\n...\n")
    assert missing_lines(block, "simulated step: 1.0 s = compute 0.5 s + waits\na b\n") == []
    assert missing_lines(block, "simulated step: 1.0 s = compute 0.7 s + waits\na b\n") == [
        "simulated step: 1.0 s = compute 0.5 s + ..."]


def test_an_elision_inside_a_line_matches_on_that_line_only() -> None:
    block = Block(ROOT / "README.md", 1, "text", "$ hloscope x\n  worse: a (op ...) at .../x.py:3: hidden -> partial\n")
    assert not missing_lines(block, "  worse: a (op t/u) at /c/x.py:3: hidden -> partial\n")
    assert missing_lines(block, "  worse: a (op t/u) at /c/x.py:3: hidden -> exposed\n")
    assert missing_lines(block, "  worse: a (op t/u)\n at /c/x.py:3: hidden -> partial\n")


@pytest.mark.parametrize("block", shown_runs())
def test_shown_output_is_what_the_command_prints(block: Block, tmp_path: Path) -> None:
    argv = shlex.split(block.text.split("\n", 1)[0][2:])[1:]
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(ROOT)}
    for arg in argv:  # a repository path the doc names (tests/check/data/...) reads as it does from the root
        top = Path(arg).parts[0] if arg and not arg.startswith("-") and not Path(arg).is_absolute() else ""
        if top and (ROOT / top).exists() and not (tmp_path / top).exists():
            (tmp_path / top).symlink_to(ROOT / top)
    r = subprocess.run([sys.executable, "-m", "hloscope", *argv], cwd=tmp_path, capture_output=True, text=True,
                       timeout=3600, env=env, check=False)
    shown_exit = [int(m.group(1)) for m in (EXIT_LINE.fullmatch(ln.strip()) for ln in block.text.splitlines()) if m]
    assert r.returncode == (shown_exit[0] if shown_exit else 0), r.stderr[-2000:]
    missing = missing_lines(block, r.stdout + r.stderr)
    assert not missing, f"{block.name}: not in today's output:\n" + "\n".join(missing) + \
        "\n--- output ---\n" + (r.stdout + r.stderr)[-6000:]
