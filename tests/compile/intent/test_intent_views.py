"""The intent views show strings from a trace (names, paths, policies) as data: a manifest read from
disk may hold anything. No JAX: the intent comes from a manifest's ``intent`` object."""

from __future__ import annotations

from hloscope.analysis.intent.account import account_intent
from hloscope.analysis.intent.manifest import intent_from_dict
from hloscope.analysis.intent.outcome import Why
from hloscope.render.intent_text import intent_dict, intent_lines
from hloscope.tui.widgets.intent import intent_text

HOSTILE = "[bold red]x\x1b[2J[/]"

MANIFEST_INTENT = {
    "policies": [{"kind": "save_and_offload_only_these_names", "saved": [], "offloaded": [HOSTILE],
                  "offload_src": "device", "offload_dst": "pinned_host", "differentiated": True}],
    "tags": [{"name": "[link=file:///etc]y", "where": {"file": "/m/[i]model.py", "line": 3, "function": "f"}}],
    "placements": [],
}


def test_hostile_names_are_shown_as_data() -> None:
    intent = intent_from_dict(MANIFEST_INTENT)
    assert intent is not None
    account = account_intent(intent, [])
    [item] = account.items
    assert item.why is Why.NEVER_TAGGED and item.asked.what == HOSTILE
    text = intent_text(account)
    assert not text.spans or all("link" not in str(s.style) for s in text.spans)
    assert "[bold red]x\\x1b[2J[/]" in text.plain  # markup kept literally, the escape made visible
    assert "\x1b" not in text.plain
    assert HOSTILE in "\n".join(intent_lines(account))  # the text report is plain text: the name as written
    assert intent_dict(account)["requests"][0]["what"] == HOSTILE


def test_unknown_intent_says_so() -> None:
    assert "not known" in intent_text(None).plain
    assert intent_lines(None) == []
    assert intent_from_dict(None) is None and intent_from_dict("x") is None
