"""Messages a new user meets first (#21): a truncated file, a terminal on stdin, empty or binary
input worded the same by every command, and a baseline that is never written silently."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.hlo.loader import STDIN_PROMPT
from tests.conftest import FIXTURES, fixture_text


def _err_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("hloscope: error: "), err
    return err.strip()


def test_a_truncated_file_says_it_looks_truncated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = fixture_text("mlp_offload.hlo.txt")
    cut = tmp_path / "cut.hlo.txt"
    cut.write_text(text[: len(text) // 2])  # as a copy interrupted half way would leave it
    assert main(["analyze", str(cut)]) == 2
    err = _err_line(capsys)
    assert err.startswith(f"hloscope: error: {cut}:") and "truncated" in err


def test_a_malformed_but_complete_file_does_not_claim_truncation(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    text = fixture_text("mlp_offload.hlo.txt").replace("fusion-done(", "fusion-done((", 1)
    bad = tmp_path / "bad.hlo.txt"
    bad.write_text(text)
    assert main(["analyze", str(bad)]) == 2
    assert "truncated" not in _err_line(capsys)


def test_a_one_line_text_that_is_not_hlo_is_called_not_hlo_not_truncated(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # issue 46 item 9: a one-line note was "... the text ends here, in the middle of a computation: is the
    # file truncated?"; nothing in it opens a module, so it is not HLO (a cut module still says truncated)
    note = tmp_path / "notes.txt"
    note.write_text("remember to offload the activations\n")
    assert main(["analyze", str(note)]) == 2
    assert _err_line(capsys) == (f"hloscope: error: {note}:1:1: not HLO text: it starts 'remember to offload the "
                                 "activations', where a module starts 'HloModule <name>' (compiled.as_text() or an "
                                 "XLA dump's *.txt)")
    for argv in (["check", str(note), "--no-config"], ["dot", str(note), "--calls"]):
        assert main(argv) == 2
        assert "not HLO text" in _err_line(capsys)


@pytest.mark.parametrize("content", [b"", b"  \n\n", b"\x89PNG\r\n\x1a\n\x00\x00", b"HloModule m\n\xff\xfe\n"],
                         ids=["empty", "blank", "png", "latin1"])
def test_empty_and_binary_input_read_the_same_in_every_command(tmp_path: Path, content: bytes,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "input.hlo.txt"
    f.write_bytes(content)
    lines = []
    for argv in (["analyze", str(f)], ["tui", str(f)], ["dot", str(f), "--calls"], ["check", str(f), "--no-config"]):
        assert main(argv) == 2, argv
        lines.append(_err_line(capsys))
    assert len(set(lines)) == 1, lines
    assert ("empty file" in lines[0]) if not content.strip() else ("binary data" in lines[0])


def test_a_json_report_is_known_as_one_by_every_command_that_reads_hlo(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # issue 36 item 10: analyze, dot, export and tui said "expected 'HloModule <name>'" at 1:1
    report = tmp_path / "report.json"
    assert main(["analyze", str(FIXTURES / "mlp_offload.hlo.txt"), "--json", "-o", str(report)]) == 0
    capsys.readouterr()
    for argv in (["analyze", str(report)], ["dot", str(report), "--calls"], ["tui", str(report)],
                 ["export", str(report), "--format", "model-explorer", "-o", str(tmp_path / "out")]):
        assert main(argv) == 2, argv
        err = _err_line(capsys)
        assert err == (f"hloscope: error: {report}: an hloscope JSON report, not HLO; give the module it was made "
                       f"from ({FIXTURES / 'mlp_offload.hlo.txt'}), its dump or artifact folder (diff and check "
                       "--baseline read reports)"), argv
    # JSON that is not a report (a --profile's {"op": us}) is still not HLO, in one line
    other = tmp_path / "times.json"
    other.write_text('{"fusion.12": 41.5}\n')
    assert main(["analyze", str(other)]) == 2
    assert _err_line(capsys).endswith("times.json: JSON, not HLO text; expected a module starting 'HloModule ...'")


class _Terminal(io.StringIO):
    def __init__(self, data: str, tty: bool) -> None:
        super().__init__(data)
        self.buffer = io.BytesIO(data.encode())
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "pipe"])
def test_stdin_from_a_terminal_says_it_is_waiting(tty: bool, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", _Terminal(fixture_text("mlp_offload.hlo.txt"), tty))
    assert main(["analyze", "-"]) == 0
    captured = capsys.readouterr()
    assert (STDIN_PROMPT in captured.err) is tty
    assert "verdicts:" in captured.out


def test_write_baseline_says_what_it_wrote_and_what_it_replaced(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "base.json"
    path = str(FIXTURES / "llama_offload.hlo.txt")
    main(["check", path, "--no-config", "--write-baseline", str(base)])
    err = capsys.readouterr().err
    transfers = len(json.loads(base.read_text())["transfers"])
    assert f"hloscope: wrote baseline {base}: {transfers} transfer(s), exposed " in err
    main(["check", str(FIXTURES / "mlp_offload.hlo.txt"), "--no-config", "--write-baseline", str(base)])
    err = capsys.readouterr().err
    now = len(json.loads(base.read_text())["transfers"])
    assert f"hloscope: replaced baseline {base} (was: {transfers} transfer(s)" in err
    assert f"with: {now} transfer(s)" in err and "git diff" in err


@pytest.mark.parametrize("command", ["analyze", "compile", "check", "dot", "diff", "sweep", "tui", "targets"])
def test_every_help_prints(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    # argparse %-formats help text: a '5%' in a rule's sentence made `check --help` an internal error.
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    assert f"usage: hloscope {command}" in capsys.readouterr().out
