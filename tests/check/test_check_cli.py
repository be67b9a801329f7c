"""``hloscope check`` and ``hloscope diff`` as a CI job calls them: exit codes, formats, pyproject config."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from check_helpers import DATA, FIXTURES

from hloscope.cli.main import main
from hloscope.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, EXIT_NOTHING_TO_CHECK, EXIT_OK

LLAMA = str(FIXTURES / "llama_offload.hlo.txt")
NOPIPE = str(FIXTURES / "llama_offload_nopipe.hlo.txt")


@pytest.fixture(autouse=True)
def _no_pyproject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no pyproject.toml above a tmp folder


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_exit_0_hidden_1_exposed_with_readable_message(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(FIXTURES / "mlp_offload_nopipe.hlo.txt"), "--no-sync", "--min-hidden-fraction",
                       "0.1")
    assert code == EXIT_OK, out
    code, out, _ = run(capsys, LLAMA, "--no-exposed")
    assert code == EXIT_CHECK_FAILED
    assert "dynamic-slice-start.2.0" in out and "overlapped by: nothing that does work" in out
    assert "llama.py:71" in out and "per step" in out  # V's line: dynamic-slice-start.2.0 reads V back


def test_sync_real_step_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(DATA / "mlp_sync"), "--no-sync", "--fits-hbm", "--annotations-accounted")
    assert code == EXIT_CHECK_FAILED
    assert "FAIL no-sync" in out and "pass fits-hbm" in out and "FAIL annotations-accounted" in out


def test_nothing_to_check_exit_8_and_allow_empty(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(FIXTURES / "mlp_remat.hlo.txt"))
    assert code == EXIT_NOTHING_TO_CHECK and "nothing to check" in err and len(err.strip().splitlines()) == 1
    code, out, _ = run(capsys, str(FIXTURES / "mlp_remat.hlo.txt"), "--allow-empty")
    assert code == EXIT_OK and "allow-empty" in out


@pytest.mark.parametrize("argv, words", [
    ([LLAMA, "--fits-hbm"], "cannot be evaluated"),
    (["/no/such.hlo"], "no such file"),
    ([LLAMA, "--max-exposed-us", "lots"], "expected a number"),
    ([LLAMA, "--min-hidden-fraction", "2"], "fraction"),
    ([LLAMA, "--baseline", "/no/base.json"], "no such baseline"),
    ([LLAMA, "--allow", "instruction=x"], "needs a reason"),
    ([], "nothing given to check"),
    (["--maxtext", "model_name=llama2-7b", "--set", "layers=2"], "MaxText's own KEY=VALUE settings"),
    ([LLAMA, "--maxtext", "model_name=llama2-7b"], "give one of path, workload, fn, maxtext"),
])
def test_bad_input_exit_2_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], words: str) -> None:
    code, _, err = run(capsys, *argv)
    assert code == EXIT_BAD_INPUT and words in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv, words", [
    ([LLAMA, "--format", "yaml"], "unknown format 'yaml'; choose one of: text, json, junit, github, markdown, sarif"),
    ([LLAMA, "--format", "xml"], "unknown format 'xml'"),
    ([LLAMA, "--target", "tpu"], "unknown target"),
])
def test_an_unknown_name_exits_3_as_analyze_and_docs_cli_say(capsys: pytest.CaptureFixture[str], argv: list[str],
                                                            words: str) -> None:
    # issue 46 item 9: check said 2 for --format yaml where analyze and docs/cli.md's exit-code table say 3
    code, _, err = run(capsys, *argv)
    assert code == 3 and words in err and len(err.strip().splitlines()) == 1, err
    assert main(["analyze", LLAMA, "--format", "yaml"]) == 3


def test_pyproject_rules_and_unknown_key(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.hloscope]\npath = "{NOPIPE}"\nno-sync = true\nmax-exposed-us = 1e9\n'
        '[[tool.hloscope.allow]]\ninstruction = "dynamic-slice-start.2.0"\nreason = "first read, known"\n')
    code, out, _ = run(capsys, "--no-exposed")
    assert code == EXIT_OK, out
    assert "pass no-sync" in out and "pass max-exposed-us" in out and "first read, known" in out
    (tmp_path / "pyproject.toml").write_text("[tool.hloscope]\nno-sinc = true\n")
    code, _, err = run(capsys, LLAMA)
    assert code == EXIT_BAD_INPUT and "unknown key 'no-sinc'" in err
    assert run(capsys, LLAMA, "--no-config")[0] == EXIT_CHECK_FAILED


def test_junit_loads_in_an_xml_parser(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, LLAMA, "--no-sync", "--no-exposed", "--format", "junit")
    assert code == EXIT_CHECK_FAILED
    root = ET.fromstring(out.split("\n", 1)[1])
    suite = root.find("testsuite")
    assert suite is not None and suite.get("tests") == "2" and suite.get("failures") == "1"
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["no-sync"].find("failure") is None
    failure = cases["no-exposed"].find("failure")
    assert failure is not None and "dynamic-slice-start.2.0" in (failure.text or "")


def test_github_annotation_points_at_the_user_source_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, LLAMA, "--no-exposed", "--format", "github")
    assert code == EXIT_CHECK_FAILED
    line = next(ln for ln in out.splitlines() if ln.startswith("::error"))
    assert "file=" in line and "llama.py" in line and ",line=71," in line and "title=hloscope no-exposed" in line


def test_json_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, LLAMA, "--format", "json")
    data = json.loads(out)
    assert code == EXIT_CHECK_FAILED and data["passed"] is False
    assert {v["instruction"] for v in data["violations"]} >= {"dynamic-slice-start.2.0"}


def test_write_baseline_then_regression(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base = tmp_path / "hloscope-baseline.json"
    code, _, _ = run(capsys, NOPIPE, "--allow-empty", "--max-exposed-us", "1e9", "--write-baseline", str(base))
    assert code == EXIT_OK and json.loads(base.read_text())["schema"].startswith("hloscope.report/")
    assert run(capsys, NOPIPE, "--max-exposed-us", "1e9", "--baseline", str(base))[0] == EXIT_OK
    code, out, _ = run(capsys, LLAMA, "--max-exposed-us", "1e9", "--baseline", str(base))
    assert code == EXIT_CHECK_FAILED and "REGRESSION" in out


def test_diff_prints_for_a_person(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", NOPIPE, LLAMA]) == EXIT_OK
    out = capsys.readouterr().out
    assert "matched" in out and "REGRESSION" in out
    assert main(["diff", LLAMA, LLAMA]) == EXIT_OK
    assert "no change" in capsys.readouterr().out


def test_fits_host_pool_from_the_flag_and_from_the_environment(capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """mlp_sync keeps 64 KiB per GPU on the host: a pool of 0.00001 GiB (10.5 KiB) cannot give it."""
    folder = str(DATA / "mlp_sync")
    code, out, _ = run(capsys, folder, "--fits-host-pool", "--allow-empty")
    assert code == EXIT_OK and "pass fits-host-pool" in out
    code, out, _ = run(capsys, folder, "--fits-host-pool", "--host-pool-gb", "0.00001")
    assert code == EXIT_CHECK_FAILED and "FAIL fits-host-pool" in out and "64.0 KiB" in out
    monkeypatch.setenv("XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB", "1")
    code, out, _ = run(capsys, folder, "--fits-host-pool")
    assert code == EXIT_OK
    monkeypatch.setenv("XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB", "lots")
    code, _, err = run(capsys, folder, "--fits-host-pool")
    assert code == EXIT_BAD_INPUT and err.count("\n") == 1 and "XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB='lots'" in err


def test_the_memory_line_never_says_fits_when_the_pool_cannot_give_it(capsys: pytest.CaptureFixture[str]) -> None:
    folder = str(DATA / "mlp_sync")
    assert main(["analyze", folder]) == EXIT_OK
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("memory per device"))
    assert "host 64.0 KiB (fits in 64.0 GiB of PJRT's pinned-host pool" in line
    assert main(["analyze", folder, "--host-pool-gb", "0.00001"]) == EXIT_OK
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("memory per device"))
    assert "host 64.0 KiB (does NOT fit in 10.5 KiB of PJRT's pinned-host pool" in line and "fits in 232" not in line


def test_maxtext_in_pyproject_is_a_source_like_path_or_workload(tmp_path: Path) -> None:
    # [tool.hloscope] maxtext = [...] is read as --maxtext takes it, and is one of the sources
    from hloscope.check.config import config_from_mapping
    from hloscope.errors import HloscopeError

    cfg = config_from_mapping({"maxtext": ["model_name=llama2-7b", "remat_policy=qkv_proj_offloaded"]}, "pp")
    assert cfg.compile.maxtext == ("model_name=llama2-7b", "remat_policy=qkv_proj_offloaded")
    with pytest.raises(HloscopeError, match="give one of path, workload, fn, maxtext"):
        config_from_mapping({"maxtext": ["model_name=llama2-7b"], "workload": "mlp"}, "pp")
    with pytest.raises(HloscopeError, match="expected a list of strings"):
        config_from_mapping({"maxtext": "model_name=llama2-7b"}, "pp")


@pytest.mark.parametrize(("flag", "pyproject", "field", "want"), [
    (["--devices", "8"], "devices = 16", lambda c: c.compile.devices, 8),
    (["--devices", "4"], "devices = 16", lambda c: c.compile.devices, 4),
    ([], "devices = 16", lambda c: c.compile.devices, 16),
    (["--hbm-margin", "0"], "hbm-margin = 0.1", lambda c: c.hbm_margin, 0.0),
    (["--tolerance-us", "1"], "tolerance-us = 50\ntolerance-fraction = 0.2",
     lambda c: (c.tolerance.exposed_us, c.tolerance.exposed_fraction), (1.0, 0.2)),
])
def test_a_flag_overrides_pyproject_even_with_the_defaults_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   flag: list[str], pyproject: str, field, want) -> None:  # type: ignore[no-untyped-def]
    # `hloscope check --devices 8` under `devices = 16` compiled for 16: 8 is the default, and the merge
    # took only flags that differ from the defaults
    from hloscope.cli.check import resolve_config
    from hloscope.cli.main import build_parser

    (tmp_path / "pyproject.toml").write_text(f'[tool.hloscope]\nworkload = "mlp"\n{pyproject}\n')
    monkeypatch.chdir(tmp_path)
    args = build_parser("check").parse_args(["check", *flag])
    assert field(resolve_config(args)) == want
