"""``hloscope check --format sarif`` on real failing steps: a SARIF 2.1.0 log a code-scanning service accepts.

The official schema (OASIS, sarif-spec ``sarif-2.1/schema/sarif-schema-2.1.0.json``) is not
shipped: its repository's terms are the OASIS IPR policy, not a licence to redistribute. The
tests validate what SARIF 2.1.0 requires of the objects hloscope writes (section numbers
of the OASIS standard in ``REQUIRED``); with ``HLOSCOPE_SARIF_SCHEMA=/path/to/sarif-schema-2.1.0.json``
they validate against the official schema too.

What the fixtures say, read in ``fixtures/llama_offload.hlo.txt``: ``dynamic-slice-start.2.0``
(an H->D ``fusion-start`` of a ``dynamic-slice`` in ``region_13.23_spmd``, HLO line 1211) reads
back the host buffer ``dynamic-update-slice-start.2.0`` and ``.5.0`` write, whose update is the V
slice of the merged QKV gemm (``loop_slice_fusion.6`` in the peeled layer, line 3322; ``.4`` in
the loop), computed at ``.../hloscope/compile/workloads/llama.py`` line 71 (its stack frame);
nothing is scheduled between its start and done, so ``--no-exposed`` fails on it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from check_helpers import FIXTURES

from hloscope.check.rules import RULES
from hloscope.cli.main import main
from hloscope.errors import EXIT_CHECK_FAILED
from hloscope.render.check.meaning import rule_meaning

LLAMA = str(FIXTURES / "llama_offload.hlo.txt")

_MESSAGE = {"type": "object", "required": ["text"], "properties": {"text": {"type": "string", "minLength": 1}}}
_ARTIFACT = {"type": "object", "required": ["uri"],
             "properties": {"uri": {"type": "string", "format": "uri-reference"}, "uriBaseId": {"type": "string"}}}
#: What SARIF 2.1.0 requires of the objects hloscope writes (OASIS SARIF 2.1.0, the section of each).
REQUIRED: dict[str, Any] = {
    "type": "object", "required": ["version", "runs"],  # 3.13.1
    "properties": {
        "version": {"const": "2.1.0"},  # 3.13.2
        "runs": {"type": "array", "items": {  # 3.13.4, 3.14
            "type": "object", "required": ["tool"],
            "properties": {
                "tool": {"type": "object", "required": ["driver"], "properties": {  # 3.18
                    "driver": {"type": "object", "required": ["name"], "properties": {  # 3.19.8
                        "name": {"type": "string"},
                        "rules": {"type": "array", "items": {  # 3.49
                            "type": "object", "required": ["id"],
                            "properties": {"id": {"type": "string"}, "shortDescription": _MESSAGE,
                                           "defaultConfiguration": {"type": "object", "properties": {
                                               "level": {"enum": ["none", "note", "warning", "error"]}}}}}}}}}},
                "originalUriBaseIds": {"type": "object", "additionalProperties": {  # 3.14.14: absolute, ends in /
                    "type": "object", "required": ["uri"],
                    "properties": {"uri": {"type": "string", "pattern": "^file:///(.*/)?$"}}}},
                "results": {"type": "array", "items": {  # 3.27
                    "type": "object", "required": ["message"],
                    "properties": {
                        "ruleId": {"type": "string"}, "ruleIndex": {"type": "integer", "minimum": 0},
                        "level": {"enum": ["none", "note", "warning", "error"]},  # 3.27.10
                        "message": _MESSAGE,
                        "locations": {"type": "array", "items": {"type": "object", "properties": {  # 3.28
                            "physicalLocation": {"type": "object", "required": ["artifactLocation"],  # 3.29
                                                 "properties": {"artifactLocation": _ARTIFACT, "region": {
                                                     "type": "object", "required": ["startLine"],
                                                     "properties": {"startLine": {"type": "integer",
                                                                                  "minimum": 1}}}}},
                            "logicalLocations": {"type": "array", "items": {"type": "object"}}}}},
                        "suppressions": {"type": "array", "items": {  # 3.35
                            "type": "object", "required": ["kind"],
                            "properties": {"kind": {"enum": ["inSource", "external"]}}}},
                        "partialFingerprints": {"type": "object", "additionalProperties": {"type": "string"}},
                    }}},
            }}},
    },
}


def validate(log: dict[str, Any]) -> None:
    jsonschema.validate(log, REQUIRED, format_checker=jsonschema.FormatChecker())
    official = os.environ.get("HLOSCOPE_SARIF_SCHEMA")
    if official:
        jsonschema.validate(log, json.loads(Path(official).read_text()), format_checker=jsonschema.FormatChecker())
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert len({r["id"] for r in rules}) == len(rules)
    for res in run["results"]:  # 3.27.6: ruleIndex and ruleId name the same rule
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]


def check_sarif(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["check", "--no-config", *argv, "--format", "sarif"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_exposed_transfer_points_at_the_user_line(capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the working folder at / (every absolute path lies under it)
    monkeypatch.chdir("/")
    # When --no-exposed fails on the real llama step
    code, log = check_sarif(capsys, LLAMA, "--no-exposed")
    # Then one result, at llama.py line 71 (the V projection it reads back) under SRCROOT, naming the HLO instruction
    assert code == EXIT_CHECK_FAILED
    validate(log)
    run = log["runs"][0]
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == "file:///"
    [res] = run["results"]
    assert res["ruleId"] == "no-exposed" and res["level"] == "error"
    phys = res["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"]["uriBaseId"] == "SRCROOT"
    assert phys["artifactLocation"]["uri"].endswith("hloscope/compile/workloads/llama.py")
    assert not phys["artifactLocation"]["uri"].startswith("/")
    assert phys["region"] == {"startLine": 71}
    assert res["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == \
        "region_13.23_spmd/dynamic-slice-start.2.0"
    assert res["message"]["text"].startswith("dynamic-slice-start.2.0 (to_device dynamic-slice, 64.0 KiB x2/step")
    assert res["partialFingerprints"]["hloscopeTransfer/v1"].startswith("no-exposed|to_device|")
    assert res["properties"]["verdict"] == "exposed"


def test_rules_are_the_rule_table(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _, log = check_sarif(capsys, LLAMA, "--no-exposed")
    driver = log["runs"][0]["tool"]["driver"]
    assert [r["id"] for r in driver["rules"]] == [*RULES, "baseline"]
    assert driver["rules"][0]["shortDescription"]["text"] == rule_meaning("no-sync")
    # outside the working folder, the source is an absolute file URI
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri["uri"].startswith("file:///") and "uriBaseId" not in uri


def test_step_wide_violation_points_at_its_largest_contributor(capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the real llama step, whose only exposed transfer is dynamic-slice-start.2.0 (V, at llama.py:71)
    monkeypatch.chdir("/")
    # When the step-wide max-exposed-us fails
    code, log = check_sarif(capsys, LLAMA, "--max-exposed-us", "0.5")
    # Then its one result is located where its message says the exposed time comes from
    assert code == EXIT_CHECK_FAILED
    validate(log)
    [res] = log["runs"][0]["results"]
    assert res["ruleId"] == "max-exposed-us" and res["properties"]["limit"] == 0.5
    assert res["properties"]["actual"] > 0.5
    assert "(largest: dynamic-slice-start.2.0 " in res["message"]["text"]
    [loc] = res["locations"]
    assert loc["physicalLocation"]["artifactLocation"]["uri"].endswith("hloscope/compile/workloads/llama.py")
    assert loc["physicalLocation"]["region"] == {"startLine": 71}
    assert loc["logicalLocations"][0]["fullyQualifiedName"] == "region_13.23_spmd/dynamic-slice-start.2.0"


def test_step_wide_violation_with_no_transfer_points_at_the_hlo_file(capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES.parent)
    # the step moves 768 KiB to host per step (9 transfers), far below 1 TB: no transfer to blame
    code, log = check_sarif(capsys, LLAMA, "--min-offloaded-bytes", "1000000000000")
    assert code == EXIT_CHECK_FAILED
    validate(log)
    [res] = log["runs"][0]["results"]
    assert res["ruleId"] == "min-offloaded-bytes"
    assert res["locations"] == [{"physicalLocation": {"artifactLocation": {
        "uri": "fixtures/llama_offload.hlo.txt", "uriBaseId": "SRCROOT"}}}]


#: Every rule broken at once on a real step: every transfer-, step- and request-level finding.
_EVERY_RULE = ("--no-exposed", "--max-exposed-us", "0.1", "--max-exposed-fraction", "0", "--min-hidden-fraction", "1",
               "--expect-offloaded", "no_such_name", "--min-offloaded-bytes", "1000000000000")


@pytest.mark.parametrize("path", [LLAMA, str(FIXTURES / "memory" / "llama_offload_big_host")],
                         ids=["HLO file", "folder (no single HLO file)"])
def test_every_result_of_a_real_run_has_a_location(capsys: pytest.CaptureFixture[str], path: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")
    code, log = check_sarif(capsys, path, *_EVERY_RULE)
    assert code == EXIT_CHECK_FAILED
    validate(log)
    results = log["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"no-exposed", "max-exposed-us", "max-exposed-fraction",
                                              "min-hidden-fraction", "expect-offloaded", "min-offloaded-bytes"}
    for res in results:  # code scanning shows no result without a physical location
        assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], res["ruleId"]


@pytest.mark.xla
def test_every_result_of_a_compiled_step_has_a_location(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the Quick-start step compiled here: no HLO file is checked, only the compile's report
    monkeypatch.chdir(tmp_path)
    code, log = check_sarif(capsys, "--workload", "llama", *_EVERY_RULE)
    assert code == EXIT_CHECK_FAILED
    validate(log)
    results = log["runs"][0]["results"]
    for res in results:
        assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], res["ruleId"]
    # the step-wide max-exposed-us is at the transfer its message names first, at that transfer's source line
    [res] = [r for r in results if r["ruleId"] == "max-exposed-us"]
    largest = res["message"]["text"].split("(largest: ", 1)[1].split(" ", 1)[0]
    [loc] = res["locations"]
    assert loc["logicalLocations"][0]["name"] == largest
    [same] = [r for r in results if r["ruleId"] == "no-exposed"
              and r["locations"][0]["logicalLocations"][0]["name"] == largest]
    assert loc["physicalLocation"] == same["locations"][0]["physicalLocation"]
    assert loc["physicalLocation"]["artifactLocation"]["uri"].endswith("workloads/llama.py")


def test_allowed_violation_is_a_suppressed_result(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.hloscope]\nno-exposed = true\n[[tool.hloscope.allow]]\ninstruction = "dynamic-slice-start.2.0"\n'
        'reason = "first read, known"\n')
    code = main(["check", LLAMA, "--format", "sarif"])
    log = json.loads(capsys.readouterr().out)
    assert code == 0
    validate(log)
    [res] = log["runs"][0]["results"]
    assert res["suppressions"] == [{"kind": "external", "justification": "first read, known"}]
    assert res["locations"][0]["physicalLocation"]["region"] == {"startLine": 71}
