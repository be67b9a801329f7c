"""Output is a contract: the table and JSON reports of fixtures, byte for byte.

The golden files were reviewed by reading them against the fixture HLO. When the
output changes on purpose, regenerate with ``HLOSCOPE_UPDATE_GOLDEN=1 pytest
tests/cli/test_golden.py`` and review the diff.
"""

from __future__ import annotations

import os

import pytest

from hloscope.cli.main import main
from tests.conftest import FIXTURES

GOLDEN = FIXTURES.parent / "tests" / "golden"
CASES = {
    "mlp_offload.report.txt": ["analyze", "mlp_offload.hlo.txt"],
    "mlp_offload.report.json": ["analyze", "mlp_offload.hlo.txt", "--json"],
    "llama_offload_nopipe.report.txt": ["analyze", "llama_offload_nopipe.hlo.txt", "--target", "gb200"],
    "mlp_before_optimizations.report.txt": ["analyze", "mlp_offload.before_optimizations.hlo.txt"],
    "targets.txt": ["targets"],  # every built-in target's figures as the table prints them
}


@pytest.mark.parametrize("golden", CASES, ids=list(CASES))
def test_golden(golden: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES)  # relative paths keep absolute directories out of the output
    argv = CASES[golden]
    assert main(argv) == 0
    out = capsys.readouterr().out
    path = GOLDEN / golden
    if os.environ.get("HLOSCOPE_UPDATE_GOLDEN"):
        path.write_text(out)
    assert out == path.read_text()
