"""The check rule ``intent-accounted`` as a CI job runs it: ``hloscope check --fn``, an artifact
folder, ``--allow``, and a plain HLO file (no trace) with its unoptimized module."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from hloscope.cli.main import main

pytestmark = pytest.mark.xla

ARGS = "f32[4,256,256]; f32[32,256]"
ROOT = Path(__file__).resolve().parents[3]


_FOLDERS: dict[str, Path] = {}


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Path]:
    """``hloscope compile --fn tests.compile.intent.steps:<fn>`` written to a folder (once per module)."""
    def make(fn: str, folder: str) -> Path:
        if fn not in _FOLDERS:
            out = tmp_path_factory.mktemp("intent") / folder
            assert main(["compile", "--fn", f"tests.compile.intent.steps:{fn}", "--args", ARGS, "--devices", "1",
                         "--out", str(out), "--json"]) == 0
            _FOLDERS[fn] = out
        return _FOLDERS[fn]
    return make


def test_check_fn_on_the_typo_fails_naming_it(capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    code = main(["check", "--fn", "tests.compile.intent.steps:typo_step", "--args", ARGS, "--devices", "1", "--no-config"])
    out = capsys.readouterr().out
    assert code == 1, out  # was exit 8 "nothing to check"
    assert "FAIL intent-accounted" in out and "offload 'mlp_hiden'" in out
    assert "never-tagged" in out and "did you mean 'mlp_hidden'?" in out
    assert "nothing to check" not in out and "pass no-sync" not in out  # no rule passes on nothing


def test_artifact_folder_keeps_the_intent_and_allow_excuses_it(capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              artifact: Callable[[str, str], Path]) -> None:
    monkeypatch.chdir(ROOT)
    folder = artifact("typo_step", "typo")
    capsys.readouterr()
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["intent"]["policies"][0]["offloaded"] == ["mlp_hiden"]
    assert main(["check", str(folder), "--no-config"]) == 1
    assert "offload 'mlp_hiden'" in capsys.readouterr().out
    code = main(["check", str(folder), "--no-config", "--allow", "checkpoint=mlp_hiden;reason=renamed in #123"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "renamed in #123" in out and "mlp_hiden" in out
    # The JSON report of the folder carries the request and its reason.
    assert main(["analyze", str(folder), "--json"]) == 0
    intent = json.loads(capsys.readouterr().out)["intent"]
    [req] = intent["requests"]
    assert (req["what"], req["why"], req["suggestions"], req["produced_transfers"]) == \
        ("mlp_hiden", "never-tagged", ["mlp_hidden"], False)


def test_a_step_whose_offload_happened_passes_and_lists_its_transfers(capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     artifact: Callable[[str, str], Path]) -> None:
    monkeypatch.chdir(ROOT)
    folder = artifact("activation_step", "activation")
    capsys.readouterr()
    assert main(["check", str(folder), "--no-config", "--no-sync"]) == 0
    assert "pass intent-accounted" in capsys.readouterr().out
    assert main(["analyze", str(folder)]) == 0
    text = capsys.readouterr().out
    head = text[text.index("offloads asked for"):text.index("transfer ")]
    assert "every readable one became transfers" in head
    # It happened, and how it fared (issues 46, 53): 2 of its 3 transfers are partial, so marked PARTIAL.
    assert "  PARTIAL offload 'x'" in head and "offloaded; 3 transfer(s), 2 partial, 1 hidden;" in head
    assert "to host 128.0 KiB/step" in head  # 4 layers x f32[32,256]


def test_plain_hlo_falls_back_to_the_unoptimized_annotations(capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            artifact: Callable[[str, str], Path]) -> None:
    from hloscope.artifact import load_report
    from hloscope.check.rules import step_intent
    from hloscope.check.subject import Subject
    from hloscope.hlo.loader import load_module

    monkeypatch.chdir(ROOT)
    folder = artifact("activation_step", "activation")
    capsys.readouterr()
    plain = str(folder / "optimized.hlo.txt")
    before = str(folder / "unoptimized.hlo.txt")
    # A plain file has no trace: the rule needs the unoptimized module, and says so in one line.
    assert main(["check", plain, "--no-config", "--intent-accounted"]) == 2
    assert "no trace" in capsys.readouterr().err
    assert main(["check", plain, "--no-config", "--intent-accounted", "--unoptimized", before]) == 0
    report = load_report(plain)
    assert report.intent is None
    acc = step_intent(Subject(report, plain, load_module(before)))
    assert acc is not None and acc.source == "annotations"
    # The one pinned_host annotation (and the device one bringing it back) became transfers.
    assert [a.why for a in acc.items] == ["transferred", "transferred"]
