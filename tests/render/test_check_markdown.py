"""``hloscope check --format markdown``: a GitHub job summary with the violations and the
exposed windows, every module string inert (pipes, backticks, brackets, HTML, mentions)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.render.check.markdown import md
from tests.conftest import FIXTURES, fixture_report, fixture_text

HOSTILE = "q|proj`x` [click](http://evil.example) <img src=x onerror=alert(1)> **b** @team #1 \\| _u_\nnext"


def _cells(row: str) -> list[str]:
    """A GFM table row split at its unescaped pipes."""
    return re.split(r"(?<!\\)\|", row.strip())[1:-1]


def _tables(text: str) -> list[list[str]]:
    out: list[list[str]] = []
    block: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append(line)
        elif block:
            out.append(block)
            block = []
    return out


def test_markdown_has_the_violations_and_exposed_windows(capsys: pytest.CaptureFixture[str]) -> None:
    report = fixture_report("llama_offload.hlo.txt")
    exposed = [v for v in report.verdicts if v.verdict.value == "exposed"]
    not_hidden = [v for v in report.verdicts if v.verdict.value in ("exposed", "partial", "sync")]
    assert main(["check", str(FIXTURES / "llama_offload.hlo.txt"), "--no-config", "--format", "markdown"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"### hloscope check: FAILED ({len(exposed)} violation(s))")
    rules, violations, windows = _tables(out)
    # the default gate (issue 53): no-sync, no-exposed and the bound on the step's wait
    assert [_cells(r)[0].strip() for r in rules[2:]] == ["`no-sync`", "`no-exposed`", "`max-exposed-fraction`"]
    assert len(violations) - 2 == len(exposed) and len(windows) - 2 == len(not_hidden)
    for v in exposed:
        assert any(md(v.transfer.instruction.name) in r for r in violations[2:])
    for table in (rules, violations, windows):
        width = len(_cells(table[0]))
        assert all(len(_cells(r)) == width for r in table), table


def test_module_strings_cannot_make_markup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The llama fixture as an artifact folder whose manifest gives its tensors a hostile checkpoint name
    # (matched to the user line its to-host writes come from, read from the unnamed report).
    lines = sorted({v.transfer.source.line for v in fixture_report("llama_offload.hlo.txt").verdicts
                    if v.transfer.source is not None and v.transfer.source.file.endswith("llama.py")})
    llama = next(v.transfer.source.file for v in fixture_report("llama_offload.hlo.txt").verdicts
                 if v.transfer.source is not None and v.transfer.source.file.endswith("llama.py"))
    folder = tmp_path / "art"
    folder.mkdir()
    (folder / "optimized.hlo.txt").write_text(fixture_text("llama_offload.hlo.txt"))
    (folder / "manifest.json").write_text(json.dumps({"target": "h100-sxm", "devices": 8, "tensor_names": [
        {"name": HOSTILE, "file": llama, "line": line, "producer_file": llama, "producer_line": line, "role": None}
        for line in lines]}))
    assert main(["check", str(folder), "--no-config", "--format", "markdown"]) == 1
    out = capsys.readouterr().out
    assert md(HOSTILE) in out  # the name is there, escaped
    for table in _tables(out):
        width = len(_cells(table[0]))
        assert all(len(_cells(r)) == width for r in table)  # no pipe of a name ends a cell
    plain = out.replace("<br>", "")
    assert "<" not in plain and ">" not in plain.replace("-&gt;", "")  # no HTML, only entities
    assert "](" not in out and "[click]" not in out  # no link
    ours = r"no-sync|no-exposed|max-exposed-fraction|baseline"  # the rule names (the default gate's among them)
    assert not re.search(rf"(?<!\\)`(?!(?:{ours})`)", re.sub(rf"`({ours})`", "", out))  # backticks only ours
    assert "\n" not in md(HOSTILE) and not re.search(r"(?<!\\)@team", out)  # no mention
