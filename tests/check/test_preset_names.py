"""A name MaxText's own preset lists that the model never tags is the preset's, not the user's typo (issue 46).

``fixtures/maxtext_rope/`` is docs/maxtext.md's tiny llama (``hloscope compile --maxtext ...
remat_policy=qkv_proj_offloaded``, MaxText 0.2.5, jax 0.12.0.1; its README.md). Read by hand in its
``manifest.json``: the step's one remat policy is ``save_and_offload_only_these_names`` offloading
``key_proj``, ``kv_proj``, ``query_proj`` and ``value_proj``, built by MaxText's ``remat_policy``
``qkv_proj_offloaded`` (the ``preset`` the compile recorded; ``maxtext.remat_policy`` says the same);
the checkpoint names the llama tags are ``attention_out``, ``decoder_layer_input``, ``key_proj``,
``mlpwi_0``, ``mlpwi_1``, ``mlpwo``, ``out_proj``, ``query_proj`` and ``value_proj``: no ``kv_proj``
(only MaxText's MLA attention tags it). Its optimized module moves Q, K and V to host and back: 12
transfers (tests/analysis/structure/test_rope_names.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.analysis.intent.account import account_intent
from hloscope.analysis.intent.manifest import intent_from_dict, intent_to_dict
from hloscope.analysis.intent.model import Preset, with_preset
from hloscope.analysis.intent.outcome import Fact, Why
from hloscope.artifact import load_report
from hloscope.cli.main import main
from hloscope.render.intent_text import intent_dict, intent_headline, intent_lines, mark
from hloscope.render.intent_words import detail_words

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "maxtext_rope"
PRESET = Preset("MaxText", "remat_policy", "qkv_proj_offloaded")


def test_fixture_facts_read_by_hand() -> None:
    manifest = json.loads((FIXTURE / "manifest.json").read_text())
    [policy] = manifest["intent"]["policies"]
    assert policy["kind"] == "save_and_offload_only_these_names"
    assert policy["offloaded"] == ["key_proj", "kv_proj", "query_proj", "value_proj"]
    assert policy["preset"] == {"framework": "MaxText", "setting": "remat_policy", "value": "qkv_proj_offloaded"}
    assert manifest["maxtext"]["remat_policy"] == "qkv_proj_offloaded" and manifest["maxtext"]["version"] == "0.2.5"
    tagged = {t["name"] for t in manifest["intent"]["tags"]}
    assert "kv_proj" not in tagged and {"query_proj", "key_proj", "value_proj"} <= tagged


def test_the_presets_untagged_name_is_said_as_the_presets() -> None:
    report = load_report(str(FIXTURE))
    acc = report.intent
    assert acc is not None
    by_name = {a.asked.what: a for a in acc.items}
    kv = by_name["kv_proj"]
    assert kv.why is Why.PRESET_NOT_TAGGED and kv.asked.preset == PRESET and not kv.suggestions
    [said] = kv.detail
    assert said.fact is Fact.PRESET_LISTS and said.arg("value") == "qkv_proj_offloaded"
    words = detail_words(kv.detail)
    assert words.startswith("kv_proj: listed by MaxText's remat_policy=qkv_proj_offloaded, never tagged by this model")
    assert "did you mean" not in words
    # Q, K and V became their transfers; nothing the user asked for is missing
    assert {n: len(by_name[n].transfers) for n in ("query_proj", "key_proj", "value_proj")} == {
        "query_proj": 4, "key_proj": 4, "value_proj": 4}
    assert acc.missing == () and acc.preset_untagged == (kv,) and mark(kv) == "--"
    assert intent_headline(acc) == (
        "offloads asked for: 3 request(s); every readable one became transfers; 1 name(s) listed by MaxText's "
        "remat_policy=qkv_proj_offloaded never tagged by this model (kv_proj)")
    req = next(r for r in intent_dict(acc)["requests"] if r["what"] == "kv_proj")
    assert (req["why"], req["preset"], req["produced_transfers"]) == (
        "preset-not-tagged", "MaxText's remat_policy=qkv_proj_offloaded", False)


def test_docs_tiny_llama_passes_check_no_sync(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(FIXTURE), "--no-config", "--no-sync"]) == 0
    assert "pass intent-accounted" in capsys.readouterr().out


def test_preset_names_tagged_fails_it_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(FIXTURE), "--no-config", "--no-sync", "--preset-names-tagged"]) == 1
    out = capsys.readouterr().out
    assert "FAIL preset-names-tagged" in out and "pass intent-accounted" in out
    assert "kv_proj: listed by MaxText's remat_policy=qkv_proj_offloaded, never tagged by this model" in out
    # an allow entry excuses it, as for any request
    assert main(["check", str(FIXTURE), "--no-config", "--no-sync", "--preset-names-tagged",
                 "--allow", "checkpoint=kv_proj;reason=MLA only"]) == 0


def test_the_users_own_list_still_fails_on_a_name_never_tagged() -> None:
    # The same intent without the preset: the user wrote kv_proj, so it is a name never tagged, with its
    # closest tagged names, and intent-accounted fails on it.
    manifest = json.loads((FIXTURE / "manifest.json").read_text())
    record = manifest["intent"]
    for p in record["policies"]:
        p.pop("preset")
    intent = intent_from_dict(record)
    assert intent is not None and intent.policies[0].preset is None
    acc = account_intent(intent, [])
    kv = next(a for a in acc.items if a.asked.what == "kv_proj")
    assert kv.why is Why.NEVER_TAGGED and kv in acc.missing and "did you mean" in detail_words(kv.detail)
    # with_preset (what the MaxText compile does) marks the policy, and the manifest keeps it
    marked = with_preset(intent, PRESET)
    assert intent_from_dict(intent_to_dict(marked)) == marked and marked.policies[0].preset == PRESET
    assert next(a for a in account_intent(marked, []).items if a.asked.what == "kv_proj").why is Why.PRESET_NOT_TAGGED


def test_value_proj_with_an_exposed_transfer_says_it_happened_and_how_it_fared() -> None:
    # Issue 46: the block said "ok" for value_proj while one of its transfers is exposed; issue 53: "done" read as
    # success. It is marked by its worst transfer, EXPOSED, and says how each of its transfers fared, worst first.
    report = load_report(str(FIXTURE))
    assert report.intent is not None
    v = next(a for a in report.intent.items if a.asked.what == "value_proj")
    fared = sorted(str(x.verdict) for x in v.transfers)
    assert fared == ["exposed", "hidden", "hidden", "hidden"]  # the peeled layer's offload is exposed
    assert mark(v) == "EXPOSED"
    lines = "\n".join(intent_lines(report.intent))
    assert "  EXPOSED offload 'value_proj' [MaxText's remat_policy=qkv_proj_offloaded: " in lines
    assert "offloaded; 4 transfer(s), 1 exposed, 3 hidden; to host 512.0 KiB/step, to device 512.0 KiB/step; " \
           "4 execution(s)/step" in lines
