"""The TUI's detail pane shows XLA's assumed latency beside hloscope's estimate when the compile's
scheduler log is known (a line right under the transfer's own figures; the transfer table keeps its
columns, so a 160-column screen shows every one whole).

An artifact folder holding the mlp_offload fixture and its own compile's scheduler log
(fixtures/xla-logs/mlp_offload.sol.log): XLA gave every host transfer its fixed default,
5000, and dynamic-slice-start.1's window 0.1635 us of work (read by hand in the log).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from textual.widgets import Static

from hloscope.tui.app import HloscopeApp
from hloscope.tui.load import Source
from hloscope.tui.widgets.transfers import COLUMNS, TransferTable
from tests.tui.conftest import FIXTURES, pilot_test, wait_loaded


def _folder(tmp: Path, with_log: bool) -> Path:
    out = tmp / ("with-log" if with_log else "without-log")
    out.mkdir()
    shutil.copy(FIXTURES / "mlp_offload.hlo.txt", out / "optimized.hlo.txt")
    (out / "manifest.json").write_text(json.dumps({"target": "h100-sxm", "devices": 8}))
    if with_log:
        shutil.copy(FIXTURES / "xla-logs" / "mlp_offload.sol.log", out / "xla-scheduler.log")
    return out


@pilot_test
async def test_detail_line_beside_our_estimate(tmp_path: Path) -> None:
    app = HloscopeApp(Source(str(_folder(tmp_path, True))))
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_loaded(pilot)
        assert len(app.screen.query_one(TransferTable).columns) == len(COLUMNS)
        detail = "\n".join(str(w.render()) for w in app.screen.query(Static))
        ours = detail.index("~transfer ")
        xla = detail.index("xla: XLA's scheduler assumed 5.0 ms (its fixed default")
        assert ours < xla < detail.index("why: ")  # right under hloscope's own figures
        await pilot.press("q")


@pilot_test
async def test_no_log_no_line(tmp_path: Path) -> None:
    app = HloscopeApp(Source(str(_folder(tmp_path, False))))
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_loaded(pilot)
        detail = "\n".join(str(w.render()) for w in app.screen.query(Static))
        assert "~transfer " in detail and "xla:" not in detail
        await pilot.press("q")
