"""Behaviour with Textual's Pilot on real fixtures: keys, navigation, search, history, compare, export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import DataTable, TabbedContent

from hloscope.analysis.kinds import VerdictKind
from hloscope.tui.app import HloscopeApp
from hloscope.tui.load import Source
from hloscope.tui.screens.compare import CompareScreen
from hloscope.tui.screens.error import ErrorScreen
from hloscope.tui.screens.help import HelpScreen
from hloscope.tui.screens.search import SearchScreen
from hloscope.tui.widgets.schedule import ScheduleView
from hloscope.tui.widgets.transfers import COLUMNS, TransferTable
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


@pilot_test
async def test_the_schedule_shows_simulated_start_times_and_the_detail_the_transfer_timing() -> None:
    app = HloscopeApp(Source(LLAMA))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        assert app.loaded is not None and app.loaded.times is not None
        table = app.screen.query_one(TransferTable)
        v = next(v for v in table.shown if v.timing is not None and v.timing.wait_us > 0)
        table.move_cursor(row=table.shown.index(v))
        await pilot.pause(0.3)
        detail = str(app.screen.query_one("#detail-text").render())
        t = v.timing
        assert f"issued {t.issue_us:,.1f}" in detail and f"finished {t.finish_us:,.1f}" in detail
        assert f"reached {t.done_us:,.1f}" in detail and "waited" in detail
        await pilot.press("enter")
        await pilot.pause()
        view = app.screen.query_one(ScheduleView)
        assert "start µs" in view._header()
        assert "last simulated iteration" in str(view.border_subtitle)
        row = next(i for i, r in enumerate(view.rows) if r.instruction is v.transfer.instruction)
        line = "".join(s.text for s in view._segments(row))
        assert f"{t.issue_us:,.1f}" in line
        done = next(i for i, r in enumerate(view.rows) if r.instruction is v.done)
        line = "".join(s.text for s in view._segments(done))
        assert "waited" in line


@pilot_test
async def test_the_exposed_column_is_the_simulated_wait_per_step() -> None:
    from hloscope.units import human_us

    app = HloscopeApp(Source(LLAMA))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        table = app.screen.query_one(TransferTable)
        timed = 0
        for row, v in enumerate(table.shown):
            cell = str(table.get_row_at(row)[COLUMNS.index("~exposed/step")])
            if v.timing is not None and v.timing.matched:
                timed += 1
                per_step = v.timing.wait_us_per_step
                assert v.est_exposed_us * v.transfer.executions == pytest.approx(per_step)
                assert cell == (human_us(per_step) if per_step > 0 else "-")
        assert timed > 0


@pilot_test
async def test_export_writes_the_simulated_step_as_a_trace(tmp_path: Path) -> None:
    app = HloscopeApp(Source(LLAMA))
    out = tmp_path / "step.trace.json"
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await pilot.press("e")
        kinds = app.screen.query_one("#export-kinds")
        keys = [k.key for k in app.screen.kinds]  # type: ignore[attr-defined]
        assert keys[:2] == ["json", "trace"]
        kinds.focus()
        await pilot.press("down")  # the trace
        box = app.screen.query_one("#export-path")
        assert box.value.endswith(".trace.json")  # type: ignore[attr-defined]
        box.value = str(out)  # type: ignore[attr-defined]
        box.focus()
        await pilot.press("enter")
        await pilot.pause()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step.trace.json"]
    doc = json.loads(out.read_text())
    events = doc["traceEvents"]
    assert all(e["ph"] in ("M", "X", "s", "t", "f") for e in events)
    slices = [e for e in events if e["ph"] == "X"]
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in slices)
    transfers = {e["name"]: e for e in slices if e["cat"] == "transfer"}
    report = app.loaded.report  # type: ignore[union-attr]
    assert set(transfers) == {start for _, start in report.timeline.transfers}  # type: ignore[union-attr]
    for v in report.verdicts:
        if v.transfer.instruction.name in transfers:
            assert transfers[v.transfer.instruction.name]["args"]["verdict"] == str(v.verdict)


def test_the_trace_is_not_offered_for_an_unscheduled_module() -> None:
    from hloscope.tui.export import available
    from hloscope.tui.load import load_source

    loaded = load_source(Source(str(FIXTURES / "mlp_offload.before_optimizations.hlo.txt")))
    assert loaded.report.timeline is None
    assert "trace" not in [k.key for k in available(loaded)]


@pilot_test
async def test_the_loading_screen_comes_first_and_the_load_waits_for_it() -> None:
    import threading

    from hloscope.tui.load import load_source
    from hloscope.tui.screens.loading import LoadingScreen

    release = threading.Event()

    def slow(source: Source):  # type: ignore[no-untyped-def]
        release.wait(30)
        return load_source(source)

    app = HloscopeApp(Source(LLAMA), loader=slow)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, LoadingScreen)
        assert "loading" in str(app.screen.query_one("#summary").render())
        assert app.screen.query_one("#loading").display
        release.set()
        await wait_loaded(pilot)
        assert not isinstance(app.screen, LoadingScreen) and app.main is app.screen


def test_the_first_screen_imports_no_lists_and_no_main_screen() -> None:
    # (textual.app itself imports its Tree widget; the DataTable and the tabs wait for the worker)
    import subprocess
    import sys

    code = ("import sys, hloscope.tui.app; print(sorted(m for m in sys.modules if m in ("
            "'hloscope.tui.screens.main', 'hloscope.tui.widgets.schedule', 'hloscope.tui.widgets.detail', "
            "'textual.widgets._data_table', 'textual.widgets._tabbed_content', "
            "'hloscope.render.verdict_words')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=FIXTURES.parent).stdout
    assert out.strip() == "[]"


def test_the_tui_command_imports_no_analysis_before_its_first_screen() -> None:
    # `hloscope tui PATH` up to App.run (the first screen): argument parsing, the nsys-archive
    # test and check_source. It once imported hloscope.cli.analyze for is_nsys_archive, and with
    # it the analysis, networkx, the renderers and the checks: 0.25 s before the loading screen.
    import subprocess
    import sys

    code = ("import sys, hloscope.tui.app as A\n"
            "def run(self, *a, **k):\n"
            "    print(sorted({m for m in sys.modules if m.split('.')[:2] in (['hloscope', 'analysis'],"
            " ['hloscope', 'render'], ['hloscope', 'check'], ['hloscope', 'api']) or m == 'networkx'}))\n"
            "A.HloscopeApp.run = run\n"
            "from hloscope.cli.main import main\n"
            "sys.exit(main(['tui', sys.argv[1]]))\n")
    out = subprocess.run([sys.executable, "-c", code, str(LLAMA)], capture_output=True, text=True,
                         cwd=FIXTURES.parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.xla  # a deviceless compile of the mlp workload
@pilot_test
async def test_a_compiled_step_shows_its_checkpoint_names(tmp_path: Path) -> None:
    from hloscope.cli.main import main

    # Given a real compile of the mlp workload (its manifest lists the step's checkpoint names)
    out = tmp_path / "mlp"
    assert main(["compile", "--workload", "mlp", "--devices", "8", "--out", str(out), "-o", str(tmp_path / "r")]) == 0
    names = {n["name"] for n in json.loads((out / "manifest.json").read_text())["tensor_names"]}
    assert names
    app = HloscopeApp(Source(str(out)))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        table = app.screen.query_one(TransferTable)
        # Then the checkpoint column shows those names, the same the report carries
        # (by the column's label: the mlp step's one name is 'hidden', which is also a verdict)
        column = COLUMNS.index("checkpoint")
        shown = [str(table.get_row_at(row)[column]) for row in range(table.row_count)]
        assert shown == [v.transfer.checkpoint_name or "-" for v in table.shown]
        assert {s for s in shown if s != "-"} and {s for s in shown if s != "-"} <= names
        await pilot.pause(0.3)
        v = table.selected
        assert v is not None
        # and the detail names it as every sentence does, quoted as data ("checkpoint 'hidden'")
        assert v.transfer.checkpoint_name
        assert f"checkpoint '{v.transfer.checkpoint_name}'" in str(app.screen.query_one("#detail-text").render())


@pilot_test
async def test_an_unscheduled_module_has_no_time_column_and_the_border_says_why() -> None:
    from hloscope.tui.widgets.schedule import NO_TIMES

    # the module before optimizations has no is_scheduled=true in its HloModule line: nothing is simulated
    app = HloscopeApp(Source(str(FIXTURES / "mlp_offload.before_optimizations.hlo.txt")))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        assert app.loaded is not None and app.loaded.report.timeline is None and app.loaded.times is None
        await pilot.press("2")
        view = app.screen.query_one(ScheduleView)
        assert view.border_subtitle == NO_TIMES
        assert "start µs" not in view._header()
