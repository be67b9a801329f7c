"""The summary bar says the call when host outputs are mapped every call (issue 55), and nothing more otherwise."""

from __future__ import annotations

from pathlib import Path

from hloscope.analysis.report import analyze_module
from hloscope.hlo.parser import parse_hlo
from hloscope.targets import get_target
from hloscope.tui.widgets.summary import lay_out, summary_phrases

HERE = Path(__file__).resolve().parents[2] / "fixtures" / "measured" / "tpu_v5e_hostbuf"


def _summary(name: str) -> str:
    report = analyze_module(parse_hlo((HERE / f"{name}.hlo.txt").read_text()), get_target("tpu-v5e"))
    # the bar's phrases joined by ' · ' on lines wide enough to hold them all
    return lay_out(summary_phrases(report, None), 1000, 10).plain


def test_the_tutorials_summary_bar_gives_the_call_and_its_host_work() -> None:
    assert ("· the call ~2.70 s: + ~2.32 s of host work (2 new host output(s), 1.2 GiB, mapped every call; "
            "donate, or keep them on the chip)") in _summary("tutorial_grads_to_host")


def test_the_donated_steps_summary_bar_adds_nothing() -> None:
    assert "the call" not in _summary("tutorial_update_donated")
