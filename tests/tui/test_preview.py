"""The transfer table's first rows from a first pass in a child process (tui.preview, issue 44 item 2): the child
analyses the file while the app starts and sends the rows; the loading screen shows them with their
verdicts until the main screen, whose table reads the same."""

from __future__ import annotations

import threading

import pytest
from textual.widgets import DataTable

from hloscope.analysis.report import analyze_step
from hloscope.analysis.simulate.overlap import AnalysisOptions
from hloscope.artifact import read_step
from hloscope.request import CompileRequest
from hloscope.tui.app import HloscopeApp
from hloscope.tui.load import Loaded, Source, load_source
from hloscope.tui.preview import COLUMNS, PREVIEW_ENV, PreviewRows, core_is_free, preview_rows, start_preview
from hloscope.tui.screens.loading import LoadingScreen
from hloscope.tui.widgets.transfers import TransferTable
from tests.tui.conftest import FIXTURES, pilot_test

LLAMA = str(FIXTURES / "llama_offload.hlo.txt")


@pytest.fixture(autouse=True)
def _a_child_whatever_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    # The child starts only when a core is free (core_is_free); the tests below are about the child,
    # and run under -n 2 on 2 cores, so they ask for it whatever the load.
    monkeypatch.setenv(PREVIEW_ENV, "1")


def test_the_child_waits_for_a_free_core() -> None:
    # On a 2-core machine a load of 1 leaves one core for the child; at load 15-19 (where the child was
    # measured to make the first rows later) or on one core there is none.
    assert core_is_free(2, 0.4) and core_is_free(2, 1.0) and core_is_free(16, 12.0)
    assert not core_is_free(2, 1.5) and not core_is_free(2, 17.0) and not core_is_free(1, 0.0)


def _rows(table: DataTable[object]) -> list[tuple[str, ...]]:
    return [tuple(str(c) for c in table.get_row_at(r)) for r in range(table.row_count)]


def _in_process(path: str) -> PreviewRows:
    step = read_step(path, None)
    return preview_rows(analyze_step(step.inputs, step.target, AnalysisOptions()))


def test_the_child_sends_the_rows_of_its_analysis_and_is_reaped() -> None:
    preview = start_preview(Source(LLAMA))
    assert preview is not None and preview.process is not None
    process = preview.process
    got = preview.wait()
    assert got == _in_process(LLAMA)
    assert got is not None and len(got.rows) == 9 and all(len(r) == len(COLUMNS) for r in got.rows)
    assert got.verdicts.startswith("verdicts: ")
    assert preview.process is None and process.returncode == 0  # reaped


def test_a_file_the_child_cannot_analyse_sends_nothing() -> None:
    bad = FIXTURES.parent / "tests" / "golden"  # a folder with no module: the load says why, not the preview
    preview = start_preview(Source(str(bad)))
    assert preview is not None and preview.wait() is None


def test_no_preview_for_a_compile_or_when_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert start_preview(Source(request=CompileRequest(target="h100-sxm", workload="mlp"))) is None
    monkeypatch.setenv(PREVIEW_ENV, "0")
    assert start_preview(Source(LLAMA)) is None


@pilot_test
async def test_the_loading_screen_shows_the_rows_then_the_main_table_reads_the_same() -> None:
    # Given a load held until the preview is on screen
    release = threading.Event()

    def held(source: Source) -> Loaded:
        assert release.wait(60)
        return load_source(source)

    app = HloscopeApp(Source(LLAMA), loader=held, preview=start_preview(Source(LLAMA)))
    async with app.run_test(size=(160, 45)) as pilot:
        for _ in range(1200):
            if app.screen.query("#preview"):
                break
            await pilot.pause(0.05)
        # Then the loading screen shows the transfer table's rows with their verdicts
        assert isinstance(app.screen, LoadingScreen) and app.loaded is None
        first = app.screen.query_one("#preview", DataTable)
        assert [str(c.label) for c in first.columns.values()] == list(COLUMNS)
        shown = _rows(first)
        assert len(shown) == 9 and {r[1] for r in shown} <= {"sync", "exposed", "partial", "hidden", "unscheduled"}
        # When the report comes, the main table has the same rows in the same order
        release.set()
        for _ in range(1200):
            if app.main is not None and app.screen is app.main:
                break
            await pilot.pause(0.05)
        await pilot.pause()
        assert _rows(app.screen.query_one(TransferTable)) == shown
        assert app.preview is not None and app.preview.process is None  # the child is gone
