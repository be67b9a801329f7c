"""The sweep's progress: a rich bar counting done / cached / failed / running on a
terminal, one line per finished cell otherwise."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from hloscope.cli.compiling import progress_bar
from hloscope.compile.search.sweep import FINISHED, STARTED, cells

CELLS = cells("mlp", {}, "h100-sxm", 8, ["remat", "offload", "save"], [None], ["lhs"], [True])


def test_bar_counts_done_cached_failed_running() -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=200)
    on_event, phase, stop = progress_bar(3, console)
    assert phase is not None
    for c in CELLS:
        on_event(STARTED, c, None)
    phase(CELLS[0], "XLA compile")
    on_event(FINISHED, CELLS[0], {"cached": True, "error": ""})
    on_event(FINISHED, CELLS[1], {"cached": False, "error": "XLA compile failed: boom"})
    console.file.flush()
    stop()
    text = buf.getvalue()
    assert "done 2/3 · cached 1 · failed 1 · running 1" in text
    assert "remat scheduler=lhs pipelined=on: XLA compile" in text


def test_lines_without_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    on_event, phase, stop = progress_bar(3)  # pytest's stderr is not a terminal
    assert phase is None
    on_event(STARTED, CELLS[0], None)
    on_event(FINISHED, CELLS[0], {"cached": True, "error": ""})
    on_event(FINISHED, CELLS[1], {"cached": False, "error": "boom"})
    on_event(FINISHED, CELLS[2], {"cached": False, "error": ""})
    stop()
    assert capsys.readouterr().err.splitlines() == [
        "[1/3] cached: remat scheduler=lhs pipelined=on",
        "[2/3] failed: offload scheduler=lhs pipelined=on",
        "[3/3] compiled: save scheduler=lhs pipelined=on",
    ]
