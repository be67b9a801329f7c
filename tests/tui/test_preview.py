"""The transfer table's first rows from a first pass in a child process (tui.preview, issue 44 item 2): the child
analyses the file while the app starts and sends the rows; the loading screen shows them with their
verdicts until the main screen, whose table reads the same."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
from textual.widgets import DataTable

from hloscope.analysis.report import analyze_step
from hloscope.analysis.simulate.overlap import AnalysisOptions
from hloscope.artifact import read_step
from hloscope.request import CompileRequest
from hloscope.tui import app as app_module
from hloscope.tui.app import HloscopeApp
from hloscope.tui.load import Loaded, Source, load_source
from hloscope.tui.preview import (
    COLUMNS,
    PREVIEW_ENV,
    Preview,
    PreviewRows,
    has_another_core,
    preview_rows,
    start_preview,
)
from hloscope.tui.screens.loading import LoadingScreen
from hloscope.tui.widgets.transfers import TransferTable
from tests.tui.conftest import FIXTURES, pilot_test, wait_loaded

LLAMA = str(FIXTURES / "llama_offload.hlo.txt")


@pytest.fixture(autouse=True)
def _a_child_whatever_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    # The child starts only with a second core (has_another_core); the tests below are about the child,
    # and ask for it on any machine.
    monkeypatch.setenv(PREVIEW_ENV, "1")


def test_the_child_needs_a_second_core_whatever_the_load() -> None:
    # Since the app's load waits for the child's rows, the child made them come sooner quiet and with
    # two busy processes on 2 cores, and no later with six: only on one core does it compete with the app.
    assert has_another_core(2) and has_another_core(16)
    assert not has_another_core(1)


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


@pilot_test
async def test_the_load_starts_once_the_rows_are_on_screen() -> None:
    # The analysis compiled by mypyc holds the interpreter lock for long stretches: a load running
    # beside the child kept its rows off the screen until the main screen (measured: never seen first).
    # Given a loader that notes what the screen showed when it was called
    seen: list[bool] = []
    app: HloscopeApp

    def noting(source: Source) -> Loaded:
        seen.append(bool(app.screen.query("#preview")))
        return load_source(source)

    app = HloscopeApp(Source(LLAMA), loader=noting, preview=start_preview(Source(LLAMA)))
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_loaded(pilot)
        # Then the load began with the child's rows on the loading screen, and once
        assert seen == [True]


def _silent_child(seconds: float) -> Preview:
    """A child that sends nothing: it exits at once (0) or sleeps ``seconds``."""
    code = f"import time; time.sleep({seconds})"
    return Preview(subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL))


@pilot_test
async def test_a_child_that_fails_lets_the_load_start_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a child that sends nothing and a head start longer than the test's patience
    monkeypatch.setattr(app_module, "PREVIEW_HEAD_START_S", 3600.0)
    app = HloscopeApp(Source(LLAMA), preview=_silent_child(0))
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_loaded(pilot)
        # Then the main screen came without waiting out the head start
        assert app.main is not None and app.screen is app.main


@pilot_test
async def test_a_slow_child_lets_the_load_start_after_its_head_start(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a child that would answer in a minute (a large module) and a head start of 0.2 s
    monkeypatch.setattr(app_module, "PREVIEW_HEAD_START_S", 0.2)
    preview = _silent_child(60)
    app = HloscopeApp(Source(LLAMA), preview=preview)
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_loaded(pilot)
        # Then the main screen came, and the child was stopped
        assert app.main is not None and app.screen is app.main
        assert preview.process is None


def test_the_child_starts_before_the_compile_helpers_and_the_loader_are_imported() -> None:
    # `hloscope tui FILE` starts the child as soon as it knows the file: the compile's checks (JAX's
    # version, devices, sweeps) and the HLO loader came before it (0.13 s after the start, 0.09 s without).
    code = ("import sys, hloscope.tui.preview as P, hloscope.cli.tui as T\n"
            "def start(source):\n"
            "    print(sorted(m for m in sys.modules if m in ('hloscope.cli.compiling', 'hloscope.hlo.loader',"
            " 'hloscope.hlo.archive', 'textual.app', 'hloscope.analysis')))\n"
            "    raise SystemExit(0)\n"
            "T.start_preview = start\n"
            "from hloscope.cli.main import main\n"
            "sys.exit(main(['tui', sys.argv[1]]))\n")
    out = subprocess.run([sys.executable, "-c", code, LLAMA], capture_output=True, text=True, check=True,
                         cwd=FIXTURES.parent).stdout
    assert out.strip() == "[]"


def test_a_file_that_is_not_a_zip_is_no_archive_without_reading_it_as_one(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from hloscope.cli import archive
    from hloscope.hlo.archive import ZIP_MAGIC

    assert archive._ZIP_MAGIC == ZIP_MAGIC  # the copy the check keeps, to import nothing
    assert not archive.is_nsys_archive(LLAMA)
    assert not archive.is_nsys_archive(str(tmp_path))  # a folder
    assert not archive.is_nsys_archive(str(tmp_path / "missing.zip"))
    (tmp_path / "t.zip").write_bytes(b"HloModule m\n")
    assert not archive.is_nsys_archive(str(tmp_path / "t.zip"))
