"""CI gates that cannot pass by accident (exit 8 unless --allow-empty), --set ranges, artifact context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.errors import EXIT_BAD_INPUT, EXIT_NOTHING_TO_CHECK
from tests.conftest import FIXTURES


def test_fail_on_an_unoptimized_module_is_nothing_to_check(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(FIXTURES / "mlp_offload.before_optimizations.hlo.txt")
    assert main(["analyze", path, "--fail-on", "exposed,sync"]) == EXIT_NOTHING_TO_CHECK
    assert "not scheduled" in capsys.readouterr().err
    assert main(["analyze", path, "--fail-on", "exposed,sync", "--allow-empty"]) == 0


def test_fail_on_a_cpu_module_is_nothing_to_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A scheduled module with no XLA:GPU backend config (what the CPU compiler emits).
    hlo = tmp_path / "cpu.hlo.txt"
    hlo.write_text("HloModule cpu_step, is_scheduled=true\n\nENTRY main {\n"
                   "  p = f32[8]{0} parameter(0)\n  ROOT t = f32[8]{0} tanh(p)\n}\n")
    assert main(["analyze", str(hlo), "--fail-on", "exposed"]) == EXIT_NOTHING_TO_CHECK
    assert "compiled for neither a GPU nor a TPU" in capsys.readouterr().err


def test_fail_on_a_gpu_module_without_transfers_is_nothing_to_check(capsys: pytest.CaptureFixture[str]) -> None:
    # llama_remat: full rematerialization, nothing in S(5).
    assert main(["analyze", str(FIXTURES / "llama_remat.hlo.txt"), "--fail-on", "exposed"]) == EXIT_NOTHING_TO_CHECK
    assert "no host transfer" in capsys.readouterr().err


@pytest.mark.parametrize("setting", ["layers=0", "heads=7", "batch=-1", "seq=0"])
def test_out_of_range_set_is_bad_input(setting: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "--workload", "llama", "--set", setting, "--out", "/nonexistent/x"]) == EXIT_BAD_INPUT
    assert "llama" in capsys.readouterr().err


def test_artifact_folder_target_comes_from_the_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "art"
    folder.mkdir()
    (folder / "optimized.hlo.txt").write_text((FIXTURES / "llama_offload_nopipe.hlo.txt").read_text())
    (folder / "manifest.json").write_text(json.dumps({"schema": "hloscope.artifact/1", "target": "gb200",
                                                      "devices": 8, "xla_options": {}}))
    assert main(["analyze", str(folder), "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["target"] == "gb200"
    # where the target came from is said once, in the report (JSON notes; the table under its
    # header), not repeated on stderr by every run (#21)
    assert any("target gb200 (from manifest.json)" in n for n in json.loads(out.out)["notes"])
    assert "manifest" not in out.err
    assert main(["analyze", str(folder)]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines()[1].startswith("artifact folder: target gb200 (from manifest.json), 8 devices")
    assert "manifest" not in out.err
    assert main(["analyze", str(folder), "--json", "--target", "h100-sxm"]) == 0
    assert json.loads(capsys.readouterr().out)["target"] == "h100-sxm"
