"""End to end on real compiles of the Llama 3 405B preset (128 compile-only GPUs; each ~1-2 min here).

- H100 (80 GB): the step does not fit; XLA places every done right after its start.
- GB200, batch 2: fits; a baseline made there.
- GB200, batch 4: no longer fits; the windows close, and the baseline check fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.errors import EXIT_CHECK_FAILED, EXIT_OK

pytestmark = [pytest.mark.slow, pytest.mark.xla]


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["check", "--no-config", "--workload", "llama3-405b", "--devices", "128", *argv])
    out, err = capsys.readouterr()
    return code, out + err


def test_h100_every_done_right_after_its_start_fails(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out = check(capsys, "--target", "h100-sxm", "--no-exposed", "--format", "json", "-o",
                      str(tmp_path / "r.json"), "--write-baseline", str(tmp_path / "h100.json"))
    assert code == EXIT_CHECK_FAILED, out
    report = json.loads((tmp_path / "h100.json").read_text())
    adjacent = [p for p in report["async_pairs"] if p["kind"] == "host_transfer" and p["adjacent"]]
    assert report["transfers"] and len(adjacent) == len(report["transfers"])  # the fact, from the HLO
    result = json.loads((tmp_path / "r.json").read_text())
    assert len(result["violations"]) == len(report["transfers"])
    assert all("done placed directly after start" in "\n".join(v["lines"]) for v in result["violations"])


def test_baseline_before_a_larger_batch_fails_after_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base = tmp_path / "baseline.json"
    code, out = check(capsys, "--target", "gb200", "--no-sync", "--fits-hbm", "--write-baseline", str(base))
    assert code == EXIT_OK, out
    code, out = check(capsys, "--target", "gb200", "--set", "batch=2", "--no-sync", "--baseline", str(base))
    assert code == EXIT_OK, out  # the preset's batch is 2: same step, no regression
    code, out = check(capsys, "--target", "gb200", "--set", "batch=4", "--no-sync", "--baseline", str(base))
    assert code == EXIT_CHECK_FAILED
    assert "REGRESSION worse" in out and "-> exposed" in out
    assert "REGRESSION memory" in out and "does NOT fit" in out
