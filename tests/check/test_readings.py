"""Every check line shows what the rule read on the step beside the rule's setting, pass or fail (issue 46 item 5).

On the llama fixture (9 transfers; dynamic-slice-start.2.0 exposed ~6.4 us per step, the two
``dynamic-update-slice-start.{2,5}.0`` partial ~1.0 us each: ~8.4 us in all, as ``analyze`` prints it),
a pass line used to read ``pass max-exposed-us = 100.0: at most ...`` without the 8.4.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from check_helpers import DATA, FIXTURES

from hloscope.cli.main import main
from hloscope.errors import EXIT_CHECK_FAILED, EXIT_OK

LLAMA = str(FIXTURES / "llama_offload.hlo.txt")


@pytest.fixture(autouse=True)
def _no_pyproject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no pyproject.toml above a tmp folder


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["check", *argv])
    return code, capsys.readouterr().out


def rule_line(out: str, rule: str) -> str:
    return next(line for line in out.splitlines() if line.split()[1:2] == [rule])


def test_a_pass_and_a_fail_line_show_the_measured_value_beside_the_limit(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(capsys, LLAMA, "--max-exposed-us", "100")
    assert code == EXIT_OK
    assert rule_line(out, "max-exposed-us").startswith("pass max-exposed-us = 100.0 (this step: 8.4 us): at most")
    code, out = check(capsys, LLAMA, "--max-exposed-us", "1")
    assert code == EXIT_CHECK_FAILED
    assert rule_line(out, "max-exposed-us").startswith("FAIL max-exposed-us = 1.0 (this step: 8.4 us): at most")


def test_every_rule_line_of_a_check_carries_its_measurement(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(capsys, LLAMA, "--no-sync", "--no-exposed", "--max-exposed-fraction", "0.5",
                      "--min-hidden-fraction", "0.5", "--min-offloaded-bytes", "1000", "--min-margin", "1.2",
                      "--max-marginal-us", "10", "--expect-offloaded", "nothing_named_so")
    assert code == EXIT_CHECK_FAILED
    assert "(this step: 0 of 9 transfers synchronous)" in rule_line(out, "no-sync")
    assert "(this step: 1 of 9 transfers exposed)" in rule_line(out, "no-exposed")
    assert rule_line(out, "no-exposed").startswith("FAIL")
    # 6 transfers to host: 2 x 64 KiB + 256 KiB in the loop body and the same after it, once per step each
    assert "(this step: 786432, 768.0 KiB)" in rule_line(out, "min-offloaded-bytes")
    assert "(this step: 0 of 1 names offloaded)" in rule_line(out, "expect-offloaded")
    # the largest marginal cost is the exposed transfer's; the smallest margin is a partial one's
    assert "(this step: largest 6.4 us, dynamic-slice-start.2.0)" in rule_line(out, "max-marginal-us")
    assert "smallest 1.38x, dynamic-update-slice-start." in rule_line(out, "min-margin")
    for rule in ("max-exposed-fraction", "min-hidden-fraction"):
        got = rule_line(out, rule).split("(this step: ", 1)[1].split(")", 1)[0]
        fraction, percent = got.split(", ")
        assert f"{float(fraction):.1%}" == percent, got


def test_the_measurement_is_the_value_the_rule_compared_allowed_transfers_left_out(
        capsys: pytest.CaptureFixture[str]) -> None:
    # allowing the exposed transfer leaves the two partial ones' ~1.0 us each: 2.0 us, and the rule passes at 3
    code, out = check(capsys, LLAMA, "--max-exposed-us", "3", "--allow",
                      "instruction=dynamic-slice-start.2.0;reason=known;rules=max-exposed-us")
    assert code == EXIT_OK, out
    assert rule_line(out, "max-exposed-us").startswith("pass max-exposed-us = 3.0 (this step: 2.0 us)")


def test_memory_and_annotation_rules_say_what_they_read(capsys: pytest.CaptureFixture[str]) -> None:
    # mlp_sync's memory-usage-report.txt and its two placement annotations, both synchronous copies
    code, out = check(capsys, str(DATA / "mlp_sync"), "--fits-hbm", "--fits-host-pool", "--annotations-accounted")
    assert code == EXIT_CHECK_FAILED
    assert "(this step: 0 of 2 annotations became async transfers)" in rule_line(out, "annotations-accounted")
    assert "(this step: device allocation 9.9 MiB of 80.0 GiB allowed)" in rule_line(out, "fits-hbm")
    assert "(this step: host 64.0 KiB per GPU of a 64.0 GiB pool)" in rule_line(out, "fits-host-pool")


def test_markdown_github_and_json_show_the_same_measurement(capsys: pytest.CaptureFixture[str]) -> None:
    _, md = check(capsys, LLAMA, "--max-exposed-us", "100", "--no-exposed", "--format", "markdown")
    head = md.splitlines().index("| rule | result | setting | this step | fails when |")
    table = md.splitlines()[head + 2:]
    table = table[:table.index("")]
    rows = {line.split(" | ")[0]: line.split(" | ") for line in table}
    assert rows["| `max-exposed-us`"][1:4] == ["pass", "100.0", "8.4 us"]
    assert rows["| `no-exposed`"][1:4] == ["**FAIL** (1)", "", "1 of 9 transfers exposed"]
    _, gh = check(capsys, LLAMA, "--max-exposed-us", "100", "--no-exposed", "--format", "github")
    assert gh.startswith("::error ")
    assert rule_line(gh.split("\n", 1)[1], "max-exposed-us").startswith("pass max-exposed-us = 100.0 (this step: 8.4 us)")
    _, js = check(capsys, LLAMA, "--max-exposed-us", "100", "--no-exposed", "--format", "json")
    readings = json.loads(js)["readings"]
    assert round(readings["max-exposed-us"]["value"], 1) == 8.4
    assert readings["no-exposed"] == {"value": 1, "of": 9}
