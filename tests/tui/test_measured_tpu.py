"""The TUI on a TPU run with its profile (issue 53.8), with Textual's Pilot at 80x24, 120 and 160
columns: the measured step, the waits at the host dones and each transfer's measured figures are
shown; no transfer column and no phrase of the totals is cut mid-figure. Figures read by hand from
the v5e ``big`` run's profile: steps 187.22/187.23/187.24 ms, 100.5 ms per step waited at the two
host dones, the D->H transfer 9.10 ms a run (8 runs), 7.58 ms of it waited at its done.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from hloscope.tui.app import HloscopeApp
from hloscope.tui.load import Source
from hloscope.tui.widgets.summary import SummaryBar
from hloscope.tui.widgets.transfers import TransferTable
from tests.tui.conftest import pilot_test, wait_loaded

BIG = Path(__file__).resolve().parents[2] / "fixtures" / "measured" / "tpu_v5e" / "big"
SMALL = BIG.parent / "small"


def _drawn(widget: object) -> list[str]:
    w = widget
    return ["".join(s.text for s in w.render_line(y)) for y in range(w.size.height)]  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", [80, 120, 160])
@pilot_test
async def test_the_measured_step_waits_and_transfer_figures_are_shown(width: int) -> None:
    app = HloscopeApp(Source(str(BIG / "step.hlo.txt"), measured=str(BIG / "profile" / "step.xplane.pb")))
    async with app.run_test(size=(width, 24)) as pilot:
        await wait_loaded(pilot)
        await pilot.pause(0.3)
        summary = "\n".join(_drawn(app.screen.query_one(SummaryBar)))
        assert "measured step 187.2 ms (simulated 1.00x)" in summary
        assert "host waits measured 100.5 ms/step, simulated 101.1 ms" in summary
        # each line of the totals ends at a whole phrase: no figure cut at the bar's edge
        for line in summary.splitlines():
            assert not line.rstrip().endswith(("Mi", "Gi", " m", "(")), line
        table = app.screen.query_one(TransferTable)
        rows = _drawn(table)
        header = rows[0]
        for label in table.labels[:table.drawn]:
            assert label in header
        for line in rows[1:3]:
            assert "128.0 Mi " not in line + " " or "128.0 MiB" in line  # bytes whole or not drawn
            assert not line.rstrip().endswith(("128.0 Mi", "128.0", "program.py:4")), line
        detail = str(app.screen.query_one("#detail-text", Static).render())
        assert "measured: 8 run(s) of 9.10 ms (14.7 GB/s), waited 7.58 ms at its done (partial)" in " ".join(
            detail.split())


@pilot_test
async def test_at_80_columns_the_bytes_column_is_whole_or_left_out() -> None:
    app = HloscopeApp(Source(str(BIG / "step.hlo.txt"), measured=str(BIG / "profile" / "step.xplane.pb")))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        await pilot.pause(0.3)
        table = app.screen.query_one(TransferTable)
        assert table.drawn < len(table.labels)  # 80 columns do not hold all eight
        assert len(table.columns) == table.drawn
        drawn = _drawn(table)
        assert "128.0 Mi" not in "".join(drawn) or "128.0 MiB" in "".join(drawn)
        await pilot.resize_terminal(160, 24)
        await pilot.pause(0.3)
        assert table.drawn == len(table.labels)  # wide enough again: every column, whole
        assert any("128.0 MiB" in line for line in _drawn(table))


@pilot_test
async def test_a_profile_of_another_program_is_refused() -> None:
    app = HloscopeApp(Source(str(BIG / "step.hlo.txt"), measured=str(SMALL / "profile" / "step.xplane.pb")))
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.pause(2.0)
        for _ in range(100):
            if app.failure is not None:
                break
            await pilot.pause(0.2)
        assert app.failure is not None
        assert "a profile of another program than module 'jit_step'" in str(app.failure)
        assert app.failure.exit_code == 2
