"""Behaviour with Textual's Pilot on real fixtures: keys, navigation, search, history, compare, export."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import DataTable, TabbedContent

from hloscope.analysis.kinds import VerdictKind
from hloscope.tui.app import HloscopeApp
from hloscope.tui.load import Source
from hloscope.tui.screens.compare import CompareScreen
from hloscope.tui.screens.error import ErrorScreen
from hloscope.tui.screens.help import HelpScreen
from hloscope.tui.screens.search import SearchScreen
from hloscope.tui.widgets.schedule import ScheduleView
from hloscope.tui.widgets.transfers import TransferTable
from tests.tui.conftest import FIXTURES, pilot_test, wait_loaded

LLAMA = str(FIXTURES / "llama_offload.hlo.txt")
SIZE = (150, 45)


@pilot_test
async def test_transfers_filter_sort_and_enter_opens_the_window_in_the_schedule() -> None:
    app = HloscopeApp(Source(LLAMA))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        assert app.loaded is not None
        table = app.screen.query_one(TransferTable)
        assert table.row_count == len(app.loaded.report.verdicts) == 9
        # v cycles the verdict filter: all -> sync -> exposed
        await pilot.press("v", "v")
        assert table.verdict_filter is VerdictKind.EXPOSED
        assert table.row_count == sum(v.verdict is VerdictKind.EXPOSED for v in app.loaded.report.verdicts)
        assert all(v.verdict is VerdictKind.EXPOSED for v in table.shown)
        await pilot.press("v", "v", "v", "v")  # back to all
        assert table.row_count == 9
        await pilot.press("d")
        assert {v.transfer.direction.value for v in table.shown} == {"to_host"}
        await pilot.press("d", "d", "s")  # both directions again; sort by exposed time, largest first
        exposed = [v.est_exposed_us * v.transfer.executions for v in table.shown]
        assert exposed == sorted(exposed, reverse=True)
        chosen = table.selected
        assert chosen is not None
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.query_one("#tabs", TabbedContent).active == "schedule"
        view = app.screen.query_one(ScheduleView)
        assert view.computation == chosen.transfer.computation
        assert view.current is not None and view.current.instruction is chosen.transfer.instruction
        # n walks the ops inside the window, all inside it
        await pilot.press("n")
        row = view.current
        assert row is not None
        seg = {(s.computation, p) for s in chosen.window for p in range(s.first, s.end)}
        if chosen.compute or chosen.collectives:
            assert (row.instruction.computation, row.instruction.position) in seg


@pilot_test
async def test_search_jumps_to_an_instruction_and_back_returns() -> None:
    app = HloscopeApp(Source(LLAMA))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await pilot.press("enter")  # first transfer's window: a first place in history
        view = app.screen.query_one(ScheduleView)
        first = (view.computation, view.current.instruction.name if view.current else None)
        await pilot.press("slash")
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*"dynamic-slice-done.3")
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, SearchScreen)
        assert view.current is not None and view.current.instruction.name == "dynamic-slice-done.3"
        assert view.computation == "region_13.23_spmd"
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert (view.computation, view.current.instruction.name) == first
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert view.current.instruction.name == "dynamic-slice-done.3"


@pilot_test
async def test_schedule_expands_a_loop_and_follows_a_user_link() -> None:
    app = HloscopeApp(Source(LLAMA))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await pilot.press("2")
        view = app.screen.query_one(ScheduleView)
        assert view.computation == app.loaded.report.module.entry_name  # type: ignore[union-attr]
        i = next(i for i, r in enumerate(view.rows) if r.instruction.name == "while.43")
        before = len(view.rows)
        view.cursor = i
        await pilot.press("right")
        assert len(view.rows) == before + 229 and view.rows[i].expanded
        await pilot.press("left")
        assert len(view.rows) == before
        # the detail pane's links: go to the async done of a start
        start = next(i for i, r in enumerate(view.rows) if r.instruction.opcode == "async-start"
                     or r.instruction.text_opcode.endswith("-start"))
        view.cursor = start
        await pilot.pause(0.3)  # the detail pane follows once the cursor rests
        pane = app.screen.query_one("#detail")
        targets = pane.targets  # type: ignore[attr-defined]
        assert any(n and n.endswith(view.rows[start].instruction.name.split("-start")[-1]) for _, n in targets)


@pilot_test
async def test_help_screen_and_ctrl_c_quits() -> None:
    app = HloscopeApp(Source(LLAMA))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_code == 0 or app.return_code is None


@pilot_test
async def test_export_writes_the_json_report_at_the_chosen_path(tmp_path: Path) -> None:
    app = HloscopeApp(Source(LLAMA))
    out = tmp_path / "r.json"
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await pilot.press("e")
        box = app.screen.query_one("#export-path")
        box.focus()  # type: ignore[attr-defined]
        box.value = str(out)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await pilot.pause()
    data = json.loads(out.read_text())
    assert len(data["transfers"]) == 9
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


@pilot_test
async def test_compare_pipelined_with_unpipelined_side_by_side() -> None:
    other = Source(str(FIXTURES / "llama_offload_nopipe.hlo.txt"))
    app = HloscopeApp(Source(LLAMA), compare=other)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        for _ in range(200):
            if isinstance(app.screen, CompareScreen):
                break
            await pilot.pause(0.05)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        table = screen.query_one("#compare-table", DataTable)
        assert table.row_count == len(screen.matches)
        assert screen.shown[0].changed or not any(m.changed for m in screen.matches)
        await pilot.press("down")
        await pilot.pause()
        m = screen.shown[1]
        if m.a is not None:
            a_view = screen.query_one("#view-a", ScheduleView)
            assert a_view.verdict is m.a and a_view.computation == m.a.transfer.computation
        await pilot.press("escape")
        assert not isinstance(app.screen, CompareScreen)


@pilot_test
async def test_a_truncated_module_shows_the_error_screen(tmp_path: Path) -> None:
    text = (FIXTURES / "mlp_offload.hlo.txt").read_text()
    cut = tmp_path / "cut.hlo.txt"
    cut.write_text(text[: len(text) // 2])
    app = HloscopeApp(Source(str(cut)))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        assert isinstance(app.screen, ErrorScreen)
        assert app.failure is not None and str(cut) in str(app.failure)
        await pilot.press("q")
