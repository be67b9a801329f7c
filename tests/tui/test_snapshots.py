"""SVG snapshots of the main screens at a fixed terminal size (pytest-textual-snapshot).

Update after a deliberate change with ``pytest tests/tui --snapshot-update`` and
review the SVGs in the diff. The detail pane's source-line text depends on the
user's file being readable here, so it is switched off for snapshots.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from hloscope.tui.app import HloscopeApp
from hloscope.tui.load import Source
from hloscope.tui.screens.compare import CompareScreen
from tests.tui.conftest import FIXTURES, wait_loaded

SIZE = (140, 40)


@pytest.fixture(autouse=True)
def _no_source_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hloscope.tui.widgets.detail.linecache.getline", lambda *a: "")
    monkeypatch.chdir(FIXTURES.parent)  # relative paths in what the screens show


def _app(compare: bool = False) -> HloscopeApp:
    return HloscopeApp(Source("fixtures/llama_offload.hlo.txt"),
                       Source("fixtures/llama_offload_nopipe.hlo.txt") if compare else None)


def test_transfers_screen(snap_compare: Any) -> None:
    assert snap_compare(_app(), terminal_size=SIZE, run_before=wait_loaded)


def test_transfers_screen_at_80x24(snap_compare: Any) -> None:
    # a new user's terminal: name, verdict and exposed time in the table, seven of nine rows (issue 46 item 4)
    assert snap_compare(_app(), terminal_size=(80, 24), run_before=wait_loaded)


def test_schedule_with_a_transfer_window(snap_compare: Any) -> None:
    async def open_window(pilot: Pilot[int]) -> None:
        await wait_loaded(pilot)
        await pilot.press("down", "down", "enter")
        await pilot.pause()

    assert snap_compare(_app(), terminal_size=SIZE, run_before=open_window)


def test_help_screen(snap_compare: Any) -> None:
    async def help_(pilot: Pilot[int]) -> None:
        await wait_loaded(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(_app(), terminal_size=SIZE, run_before=help_)


def test_compare_screen(snap_compare: Any) -> None:
    async def compared(pilot: Pilot[int]) -> None:
        await wait_loaded(pilot)
        for _ in range(400):
            if isinstance(pilot.app.screen, CompareScreen):
                break
            await pilot.pause(0.05)
        await pilot.pause()

    assert snap_compare(_app(compare=True), terminal_size=SIZE, run_before=compared)


def test_search_results_show_markup_in_op_names_literally(snap_compare: Any, tmp_path: Any) -> None:
    # the op_name (Rich markup with a link and an action) and an older JAX op_name with brackets,
    # on a 160-column screen: the search list shows both as written (#21 item 0)
    from tests.tui.test_hostile import OLD_BRACKETS, PWN, hostile_module

    path = tmp_path / "hostile.hlo.txt"
    path.write_text(hostile_module(PWN, "/tmp/[b]x[/b]c.py", "[red]fn[/]").replace(
        'op_name="jit(step)/transpose(jvp())/while/body/closed_call/checkpoint/rematted_computation/dot_general"',
        f'op_name="{OLD_BRACKETS} [i]x[/i]"'))

    async def search(pilot: Pilot[int]) -> None:
        await wait_loaded(pilot)
        await pilot.press("slash", *"dot.3")
        await pilot.pause()

    assert snap_compare(HloscopeApp(Source(str(path))), terminal_size=(160, 45), run_before=search)


def test_every_snapshot_file_belongs_to_a_test() -> None:
    # syrupy fails a run that leaves a snapshot unused, but not under pytest-xdist (the README's
    # `-n auto`), where each worker sees only its own tests: this holds the same check there.
    import ast
    from pathlib import Path

    here = Path(__file__)
    tests = {n.name for n in ast.parse(here.read_text()).body
             if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}
    svgs = {p.stem for p in (here.parent / "__snapshots__" / here.stem).glob("*.svg")}
    assert svgs and svgs <= tests, f"snapshots no test makes: {sorted(svgs - tests)}"
