"""The TUI's memory line on a TPU dump folder (issue 53 item 3: it said "memory: not known for a
dump folder without XLA's memory texts" though XLA's buffer assignment was in the folder).

Figures read by hand from fixtures/tpu_v5e/dump_offload_scan/ (tests/cli/test_tpu_dump_memory.py):
1.6 GiB of device allocation on v5e's 15.75 GiB, 1.0 GiB of host temporaries, and the largest
device buffers at the peak 256 MiB each (no 32 MiB VMEM value among them).
"""

from __future__ import annotations

from textual.widgets import Static

from hloscope.tui.app import HloscopeApp
from hloscope.tui.load import Source
from tests.tui.conftest import FIXTURES, pilot_test, wait_loaded


@pilot_test
async def test_a_tpu_dump_folder_shows_its_memory() -> None:
    app = HloscopeApp(Source(str(FIXTURES / "tpu_v5e" / "dump_offload_scan")))
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_loaded(pilot)
        assert app.failure is None
        # the bar lays its phrases out on its lines (a long phrase wraps at its spaces): read it as one line
        summary = " ".join(str(app.screen.query_one("#summary", Static).render()).split())
        assert "memory: device allocation 1.6 GiB of 15.7 GiB HBM: fits · host 1.0 GiB" in summary, summary
        assert ("largest at peak: 256.0 MiB saved activations, 256.0 MiB weights/optimizer state, "
                "256.0 MiB weights/optimizer state") in summary, summary
        assert "not known" not in summary
