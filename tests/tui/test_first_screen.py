"""The first screen comes before the margins (issue 44 item 2): the transfer table with its verdicts
from the core analysis; margins and marginal costs fill in from a background worker, keys answer
meanwhile."""

from __future__ import annotations

import threading

import pytest
from textual.widgets import Static

import hloscope.tui.app
from hloscope.render.margin_text import margin_cell, margin_line
from hloscope.tui.app import HloscopeApp
from hloscope.tui.load import Loaded, Source, measure_margins
from hloscope.tui.widgets.transfers import COST_COLUMNS, PENDING, TransferTable
from tests.tui.conftest import FIXTURES, pilot_test, wait_loaded

LLAMA = str(FIXTURES / "llama_offload.hlo.txt")


def _cells(table: TransferTable, column: str) -> dict[str, str]:
    i = [str(c.label) for c in table.columns.values()].index(column)
    return {str(table.get_row_at(r)[0]): str(table.get_row_at(r)[i]) for r in range(table.row_count)}


@pilot_test
async def test_verdicts_first_then_margins_from_the_background(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    measured: list[Loaded] = []

    def held(loaded: Loaded) -> None:  # the worker's measure_margins, held until the test lets it go
        assert release.wait(60)
        measure_margins(loaded)
        measured.append(loaded)

    monkeypatch.setattr(hloscope.tui.app, "measure_margins", held)
    app = HloscopeApp(Source(LLAMA))
    async with app.run_test(size=(160, 45)) as pilot:
        # Given the first screen, margins not measured
        for _ in range(1200):
            if app.search_index is not None:
                break
            await pilot.pause(0.05)
        assert app.loaded is not None and app.main is not None and not app.margins_ready
        report = app.loaded.report
        assert "margins" not in vars(report)  # nothing read them: the re-simulations have not run
        table = app.screen.query_one(TransferTable)
        verdicts = _cells(table, "verdict")
        assert len(verdicts) == len(report.verdicts) == 9
        assert verdicts == {v.transfer.instruction.name: str(v.verdict) for v in report.verdicts}
        # When keys come meanwhile: down moves the cursor, m shows the cost columns
        table.focus()
        await pilot.press("down", "down")
        assert table.cursor_row == 2
        await pilot.press("m")
        await pilot.pause(0.1)
        assert [str(c.label) for c in table.columns.values()] == list(COST_COLUMNS)
        timed = {v.transfer.instruction.name for v in report.verdicts if v.timing is not None}
        assert timed and {_cells(table, "margin")[n] for n in timed} == {PENDING}
        # blame is the simulated step's, known with the verdicts
        assert _cells(table, "~blame") != {n: PENDING for n in verdicts}
        # the marginal-cost sort (s five times: schedule, exposed, bytes, verdict, name, marginal cost)
        # keeps the schedule order until the figures come, and says so
        await pilot.press("s", "s", "s", "s", "s")
        assert "sorted by marginal cost (…)" in str(table.border_subtitle)
        assert table.shown == list(report.verdicts)
        chosen = table.selected
        assert chosen is not None and chosen.timing is not None
        await pilot.pause(0.2)  # the detail pane follows the cursor after DETAIL_DELAY_S
        detail = str(app.screen.query_one("#detail-text", Static).render())
        assert "margin: …" in detail
        assert "margins" not in vars(report)
        # Then the worker measures them: the table's cells and the detail pane show them, the cursor stays
        release.set()
        await wait_loaded(pilot)
        assert app.margins_ready and measured == [app.loaded]
        assert table.selected is chosen
        assert "sorted by marginal cost ·" in str(table.border_subtitle)
        costs = [-(m.marginal_us if (m := report.margin_for(v)) is not None else 0.0) for v in table.shown]
        assert costs == sorted(costs) and table.shown != list(report.verdicts)
        margins = _cells(table, "margin")
        for v in report.verdicts:
            assert margins[v.transfer.instruction.name] == margin_cell(report.margin_for(v))
        line = margin_line(report, chosen)
        assert line is not None
        assert f"margin: {line}" in str(app.screen.query_one("#detail-text", Static).render())
