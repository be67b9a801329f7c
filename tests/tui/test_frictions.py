"""The TUI frictions of #21, each as a user meets it, on real fixtures.

Down then Enter in search, the status line after a jump, 160 columns, the detail
pane's operands and source line, the parse-error screen's keys, ``hloscope tui -``,
the export toast's folder, and a crash: one line and a non-zero exit status.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.widgets import Input, OptionList, Static

from hloscope.cli.main import main
from hloscope.errors import EXIT_INTERNAL
from hloscope.tui.app import HloscopeApp
from hloscope.tui.load import Source
from hloscope.tui.screens.error import ErrorScreen
from hloscope.tui.screens.export import ExportScreen
from hloscope.tui.screens.search import SearchScreen
from hloscope.tui.widgets.schedule import ScheduleView
from hloscope.tui.widgets.transfers import TransferTable
from tests.tui.conftest import FIXTURES, pilot_test, wait_loaded
from tests.tui.test_hostile import RecordingApp

LLAMA = str(FIXTURES / "llama_offload.hlo.txt")


@pilot_test
async def test_down_then_enter_in_search_opens_the_first_result_in_one_press() -> None:
    app = HloscopeApp(Source(LLAMA))
    async with app.run_test(size=(150, 45)) as pilot:
        await wait_loaded(pilot)
        await pilot.press("slash")
        await pilot.press(*"dynamic-slice-done")
        search = app.screen
        assert isinstance(search, SearchScreen) and len(search.hits) > 1
        await pilot.press("down")  # from the box to the list: the first result is highlighted
        assert search.query_one(OptionList).highlighted == 0
        await pilot.press("enter")  # one press opens it
        await pilot.pause()
        assert not isinstance(app.screen, SearchScreen)
        view = app.screen.query_one(ScheduleView)
        assert view.current is not None and view.current.instruction.name == search.hits[0].name


@pilot_test
async def test_the_status_line_drops_the_window_when_a_search_jumps_elsewhere_and_back_restores_it() -> None:
    app = HloscopeApp(Source(LLAMA))
    async with app.run_test(size=(150, 45)) as pilot:
        await wait_loaded(pilot)
        assert app.main is not None
        table = app.screen.query_one(TransferTable)
        chosen = table.selected
        assert chosen is not None
        await pilot.press("enter")
        await pilot.pause()
        status = app.screen.query_one("#status", Static)
        assert str(status.render()).startswith(f"window of {chosen.transfer.instruction.name}:")
        # a jump to the entry computation, where the window is not drawn
        entry = app.loaded.report.module.entry_name  # type: ignore[union-attr]
        assert chosen.transfer.computation != entry
        name = next(i.name for i in app.loaded.report.module.entry.instructions  # type: ignore[union-attr]
                    if i.opcode == "while")
        await pilot.press("slash", *name, "enter")
        await pilot.pause()
        view = app.screen.query_one(ScheduleView)
        assert view.computation == entry and view.verdict is None
        assert str(status.render()) == ""
        await pilot.press("left_square_bracket")  # back to the window: its line again
        await pilot.pause()
        assert view.verdict is chosen
        assert str(status.render()).startswith(f"window of {chosen.transfer.instruction.name}:")


@pilot_test
async def test_at_160_columns_every_transfer_column_is_whole_and_the_detail_keeps_file_line_whole() -> None:
    from hloscope.tui.screens.main import DETAIL_MIN_W

    app = HloscopeApp(Source(LLAMA))
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_loaded(pilot)
        await pilot.pause(0.3)
        table = app.screen.query_one(TransferTable)
        assert table.size.width + 2 >= table.needed_width  # (size is inside the border)
        detail = app.screen.query_one("#detail")
        assert detail.size.width >= DETAIL_MIN_W - 4  # (inside its border and padding)
        # what is drawn: each row's source cell whole, e.g. "llama.py:66"
        v = table.selected
        assert v is not None
        loc = app.loaded.report.source(v)  # type: ignore[union-attr]
        assert loc is not None
        where = f"{Path(loc.file).name}:{loc.line}"
        drawn = ["".join(s.text for s in table.render_line(y)) for y in range(table.size.height)]
        assert any(where in line for line in drawn), drawn[:4]
        # the detail pane's lines as drawn: "llama.py:66" never split across two
        text = app.screen.query_one("#detail-text", Static)
        lines = ["".join(s.text for s in strip) for strip in text.render_lines(text.region.reset_offset)]
        assert any(where in line for line in lines), lines


def test_the_detail_lists_an_operand_passed_several_times_once_with_its_count() -> None:
    from hloscope.tui.load import load_source
    from hloscope.tui.widgets.detail import links

    loaded = load_source(Source(LLAMA))
    comp = loaded.report.module.computations["fused_dynamic_update_slice"]
    ins = comp.by_name["dynamic-update-slice.10.1"]
    assert ins.operands.count("constant_156_clone_14") == 3  # as the HLO writes it
    operands = [label for label, _, _ in links(loaded, ins) if label.startswith("operand")]
    assert len(operands) == len(set(ins.operands)) == 4
    assert [label for label in operands if "constant_156_clone_14" in label] == [
        "operand  constant_156_clone_14  constant  x3"]


@pilot_test
async def test_the_parse_error_screen_offers_no_search_compare_or_export(tmp_path: Path) -> None:
    text = (FIXTURES / "mlp_offload.hlo.txt").read_text()
    cut = tmp_path / "cut.hlo.txt"
    cut.write_text(text[: len(text) // 2])
    app = RecordingApp(Source(str(cut)))
    async with app.run_test(size=(150, 45)) as pilot:
        await wait_loaded(pilot)
        assert isinstance(app.screen, ErrorScreen)
        offered = {b.binding.action for b in app.screen.active_bindings.values()}
        assert not offered & {"search", "compare", "export"}, offered
        await pilot.press("slash", "e", "c")
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen) and app.toasts == []  # no "still indexing"
        await pilot.press("q")


@pilot_test
async def test_the_export_toast_names_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = RecordingApp(Source(LLAMA))
    async with app.run_test(size=(150, 45)) as pilot:
        await wait_loaded(pilot)
        await pilot.press("e")
        assert isinstance(app.screen, ExportScreen)
        box = app.screen.query_one("#export-path", Input)
        name = box.value  # the default: a file name in the current folder
        assert "/" not in name
        box.focus()
        await pilot.press("enter")
        await pilot.pause()
    assert (tmp_path / name).is_file()
    assert (f"wrote {name} in {tmp_path.resolve()}", False) in app.toasts


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_tui_dash_reads_the_module_from_stdin_and_opens_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import hloscope.cli.tui as cli_tui

    text = (FIXTURES / "mlp_offload.hlo.txt").read_bytes()
    _stdin(monkeypatch, text)
    seen: dict[str, Any] = {}

    def run(self: HloscopeApp, *args: Any, **kwargs: Any) -> None:  # the terminal part, recorded
        path = Path(str(self.source.path))
        seen["path"], seen["bytes"] = path, path.read_bytes()

    monkeypatch.setattr(HloscopeApp, "run", run)
    monkeypatch.setattr(cli_tui, "use_terminal_for_keys",
                        lambda **kw: seen.setdefault("terminal", kw == {"stdin_held_module": True}))
    assert main(["tui", "-"]) == 0
    assert seen["bytes"] == text and seen["terminal"] is True
    assert not seen["path"].exists()  # the spool folder is removed after the app exits


@pytest.mark.parametrize("data, words", [(b"", "empty"), (b"hello\n", "not HLO text")], ids=["empty", "not HLO"])
def test_tui_dash_with_bad_stdin_is_one_line_about_stdin(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str],
                                                          data: bytes, words: str) -> None:
    _stdin(monkeypatch, data)
    assert main(["tui", "-"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hloscope: error: <stdin>") and words in err and err.count("\n") == 1


def test_a_crash_in_the_app_exits_70_with_one_line(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # Given a bug: building the search index raises (in a worker, after the first screen)
    def broken(self: Any, report: Any) -> None:
        raise RuntimeError("index exploded\nwith a second line")

    monkeypatch.setattr("hloscope.tui.search.SearchIndex.__init__", broken)
    monkeypatch.delenv("HLOSCOPE_DEBUG", raising=False)

    def headless(self: HloscopeApp, *args: Any, **kwargs: Any) -> Any:
        return App.run(self, headless=True, size=(120, 40))

    monkeypatch.setattr(HloscopeApp, "run", headless)
    # When the TUI runs, Then it exits with the internal-error status and one line (before: 0 and a traceback)
    assert main(["tui", LLAMA]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("hloscope: error: internal error in the TUI: ") and "index exploded with a second line" in err
    assert "Traceback" not in err


@pilot_test
async def test_the_offloads_asked_tab_says_when_the_step_s_intent_is_not_known() -> None:
    # a bare HLO file records no trace: the fourth tab says so instead of showing an empty pane
    app = HloscopeApp(Source(LLAMA))
    async with app.run_test(size=(150, 45)) as pilot:
        await wait_loaded(pilot)
        await pilot.press("4")
        await pilot.pause()
        assert app.screen.query_one("#tabs").active == "intent"  # type: ignore[attr-defined]
        assert app.screen.query_one("#intent-scroll").has_focus
        assert "offloads asked for: not known" in str(app.screen.query_one("#intent-view", Static).render())


@pytest.mark.parametrize("argv, code, words", [
    (["--workload", "nosuch"], 3, "unknown workload 'nosuch'"),
    (["--workload", "mlp", "--set", "nosuch=1"], 2, "has no setting 'nosuch'"),
], ids=["unknown workload", "unknown setting"])
def test_a_bad_workload_is_one_line_before_the_terminal_is_taken_over(capsys: pytest.CaptureFixture[str],
                                                                      argv: list[str], code: int, words: str) -> None:
    assert main(["tui", *argv]) == code
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


_COMPILE_IN_THE_APP = """
import sys
from textual.app import App
from hloscope.cli.main import main
from hloscope.tui.app import HloscopeApp

ready = HloscopeApp.on_report_ready
def on_report_ready(self, message):
    ready(self, message)
    print(f"loaded {len(message.loaded.report.verdicts)} transfers", file=sys.__stdout__, flush=True)
    self.set_timer(1.0, self.exit)  # once the main screen is up
HloscopeApp.on_report_ready = on_report_ready
failed = HloscopeApp.on_load_failed
def on_load_failed(self, message):  # the error screen would wait for q
    failed(self, message)
    self.exit()
HloscopeApp.on_load_failed = on_load_failed
HloscopeApp.run = lambda self, *a, **k: App.run(self, headless=True, size=(120, 40))
sys.exit(main(["tui", "--workload", "mlp", "--devices", "8"]))
"""


@pytest.mark.xla  # a deviceless compile of the mlp workload, inside the app's worker
def test_tui_workload_compiles_inside_the_app() -> None:
    # In a fresh interpreter: the compile's spawned process needs Python's resource tracker, which,
    # started first under Textual, was handed Textual's stderr (fileno -1): "bad value(s) in fds_to_keep"
    import subprocess

    done = subprocess.run([sys.executable, "-c", _COMPILE_IN_THE_APP], capture_output=True, text=True,
                          cwd=FIXTURES.parent, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "loaded 3 transfers" in done.stdout


@pilot_test
async def test_a_second_schedule_that_fails_to_load_is_a_toast_and_the_first_stays_open(tmp_path: Path) -> None:
    # LoadFailed says second=True for the compare's B side (it was an exit code of -1)
    text = (FIXTURES / "mlp_offload.hlo.txt").read_text()
    cut = tmp_path / "cut [b]B[@click=app.quit].hlo.txt"
    cut.write_text(text[: len(text) // 2])
    app = RecordingApp(Source(LLAMA))
    async with app.run_test(size=(150, 45)) as pilot:
        await wait_loaded(pilot)
        await pilot.press("c")
        app.screen.query_one("#prompt-input", Input).value = str(cut)
        await pilot.press("enter")
        for _ in range(200):
            if any(message.startswith("B: ") for message, _ in app.toasts):
                break
            await pilot.pause(0.05)
        errors = [(message, markup) for message, markup in app.toasts if message.startswith("B: ")]
        assert errors and errors[0][0].startswith(f"B: {cut}:") and errors[0][1] is False
        assert app.screen is app.main and app.failure is None and app.other is None
        assert str(app.screen.query_one("#status", Static).render()) == errors[0][0]


@pilot_test
async def test_the_memory_line_names_what_was_opened() -> None:
    # issue 36 item 13: an nsys-jax archive was called "a bare HLO file"
    pytest.importorskip("pyarrow", reason="nsys-jax archives need the 'measured' extra (pyarrow)")
    for path, words in ((FIXTURES / "measured" / "pax_fsdp4_proc0.nsys.zip", "memory: not known for an nsys-jax "
                         "archive (it holds the module and its profile, not XLA's memory figures)"),
                        (FIXTURES / "mlp_offload.hlo.txt", "memory: not known for a bare HLO file")):
        app = HloscopeApp(Source(str(path)))
        async with app.run_test(size=(150, 45)) as pilot:
            await wait_loaded(pilot)
            assert app.failure is None
            summary = str(app.screen.query_one("#summary", Static).render())
            assert words in summary, summary


@pilot_test
async def test_m_shows_blame_marginal_cost_and_margin_in_place_of_exposed_time_and_source() -> None:
    from hloscope.tui.widgets.transfers import COST_COLUMNS

    app = HloscopeApp(Source(LLAMA))
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_loaded(pilot)
        table = app.screen.query_one(TransferTable)
        table.focus()
        await pilot.press("m")
        await pilot.pause(0.2)
        assert [str(c.label) for c in table.columns.values()] == list(COST_COLUMNS)
        assert table.size.width + 2 >= table.needed_width  # still whole at 160 columns
        report = app.loaded.report  # type: ignore[union-attr]
        rows = {str(table.get_row_at(r)[0]): table.get_row_at(r) for r in range(table.row_count)}
        for v in report.verdicts:
            m = report.margin_for(v)
            cell = str(rows[v.transfer.instruction.name][COST_COLUMNS.index("margin")])
            assert cell == ("-" if m is None else f"{m.margin:.2f}x" if m.margin is not None else ">9.5x")
        await pilot.press("m")
        await pilot.pause(0.2)
        assert "~exposed/step" in [str(c.label) for c in table.columns.values()]
