"""The text report fits the terminal it is printed to (issue 46 item 4).

Whole lines, one per transfer and one per reason, in a pipe or a file (the golden files);
at ``COLUMNS`` 80, 120 and 160 no line is longer and each transfer's name and verdict
share one line, the verdict first; the columns left out go to the transfer's detail
lines and no word of a reason is lost to the wrap. Colour on a terminal only.
"""

from __future__ import annotations

import io
import re

import pytest

from hloscope.api import analyze
from hloscope.cli.fit import report_color, report_width
from hloscope.cli.main import main
from hloscope.hlo.loader import load_module
from hloscope.targets import get_target
from tests.conftest import FIXTURES

WIDTHS = (80, 120, 160)
STEPS = ("mlp_offload.hlo.txt", "llama_offload.hlo.txt")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def analyze_out(capsys: pytest.CaptureFixture[str], name: str, *argv: str) -> str:
    assert main(["analyze", str(FIXTURES / name), *argv]) == 0
    return capsys.readouterr().out


def verdicts(name: str) -> list[tuple[str, str]]:
    report = analyze(load_module(str(FIXTURES / name)), get_target("h100-sxm"))
    return [(v.transfer.instruction.name, v.verdict.value.upper()) for v in report.verdicts]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", STEPS)
def test_every_line_fits_and_each_verdict_is_on_its_transfer_s_line(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str, width: int) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    out = analyze_out(capsys, name)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= width, [line for line in lines if len(line) > width]
    rows = {line.split()[1]: line.split()[0] for line in lines
            if line.split()[:1] and line.split()[0] in ("HIDDEN", "PARTIAL", "EXPOSED", "SYNC")}
    expected = verdicts(name)
    assert len(expected) >= 3
    assert rows == dict(expected)


@pytest.mark.parametrize("name", STEPS)
def test_the_wrap_loses_no_word_and_moved_columns_are_in_the_detail_lines(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    whole = analyze_out(capsys, name)  # no COLUMNS, not a terminal: whole lines
    assert max(len(line) for line in whole.splitlines()) > 160
    monkeypatch.setenv("COLUMNS", "80")
    narrow = analyze_out(capsys, name)
    joined = " ".join(narrow.split())
    for line in whole.splitlines():
        if not line.startswith("transfer ") and not line.startswith("-") and \
                not any(line.startswith(n + " ") for n, _ in verdicts(name)):
            assert " ".join(line.split()) in joined, line
    # at 80 columns the table keeps verdict, transfer, dir, bytes and the two times; op and where are in
    # each transfer's detail line, after its reason
    header = next(line for line in narrow.splitlines() if line.startswith("verdict "))
    assert header.split() == ["verdict", "transfer", "dir", "bytes", "~xfer", "us", "~hidden", "us"]
    first, _ = verdicts(name)[0]
    block = narrow.split(f"\n  {first}: ", 1)[1]
    detail = " ".join(block.split("\n  dynamic-", 1)[0].split())
    assert re.search(r"op dynamic-(update-)?slice, where \S+, x/step \d+, mode async", detail), detail


def test_colour_on_a_terminal_only(capsys: pytest.CaptureFixture[str]) -> None:
    plain = analyze_out(capsys, "llama_offload.hlo.txt")
    assert "\x1b[" not in plain  # a pipe: no colour
    painted = analyze_out(capsys, "llama_offload.hlo.txt", "--color", "always")
    assert "\x1b[31mEXPOSED\x1b[0m" in painted and "\x1b[33mPARTIAL\x1b[0m" in painted
    assert "\x1b[32mHIDDEN\x1b[0m" in painted
    assert ANSI.sub("", painted) == plain  # the same report, only painted
    assert "\x1b[" not in analyze_out(capsys, "llama_offload.hlo.txt", "--color", "never")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        raise OSError("no size")


def test_the_width_and_colour_come_from_the_stream_and_the_environment() -> None:
    pipe, tty = io.StringIO(), Terminal()
    assert report_width(pipe, {}) is None  # a pipe or a file: whole lines
    assert report_width(pipe, {"COLUMNS": "100"}) == 100
    assert report_width(pipe, {"COLUMNS": "wide"}) is None
    assert report_width(tty, {}) is None  # a terminal whose size cannot be read
    assert report_color(tty, "auto", {}) is True
    assert report_color(tty, "auto", {"NO_COLOR": "1"}) is False  # no-color.org
    assert report_color(tty, "auto", {"TERM": "dumb"}) is False
    assert report_color(pipe, "auto", {}) is False
    assert report_color(pipe, "always", {"NO_COLOR": "1"}) is True  # asked for on the command line
    assert report_color(tty, "never", {}) is False
