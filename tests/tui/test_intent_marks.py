"""The Offloads asked pane styles every mark ``render.intent_text.mark`` can give, on a real step."""

from __future__ import annotations

from pathlib import Path

from hloscope.artifact import load_report
from hloscope.render.intent_text import MARK, WORST_MARKS
from hloscope.tui.widgets.intent import MARK_STYLE, intent_text

MAXTEXT_ROPE = Path(__file__).resolve().parents[2] / "fixtures" / "maxtext_rope"


def test_every_mark_has_a_style() -> None:
    # 'done' and 'PART' (issue 44) were drawn unstyled, like plain text; issue 53 marks by the worst verdict
    assert {*MARK.values(), *WORST_MARKS.values(), "NONE"} <= set(MARK_STYLE)
    assert MARK_STYLE["EXPOSED"] != MARK_STYLE["hidden"]  # not every transfer hidden; every one


def test_value_proj_with_an_exposed_transfer_is_marked_exposed_in_its_style() -> None:
    # MaxText's rope step: value_proj's peeled layer's offload is exposed, its 3 others hidden
    # (tests/check/test_preset_names.py reads the same), so its block opens with 'EXPOSED'
    report = load_report(str(MAXTEXT_ROPE))
    text = intent_text(report.intent)
    line = next(i for i, x in enumerate(text.plain.split("\n")) if "offload 'value_proj'" in x)
    start = sum(len(x) + 1 for x in text.plain.split("\n")[:line])
    assert text.plain[start:start + 8] == "EXPOSED "
    styles = [str(s.style) for s in text.spans if s.start == start]
    assert styles == [MARK_STYLE["EXPOSED"]]
