"""What a new user trips over first, tried from the command line (issue 27).

Each test runs the CLI as a user types it (``main([...])``) on real inputs: the
fixtures' XLA dumps (a GPU one compiled deviceless, a CPU one run with JAX on this
machine: fixtures/generate_cpu_dump.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CPU_DUMP = ROOT / "fixtures" / "cpu" / "dump_grad_step"
CPU_TEXT = CPU_DUMP / "module_0006.jit_step.cpu_after_optimizations.txt"
GPU_DUMP = ROOT / "fixtures" / "dump_mlp_offload"


@pytest.mark.parametrize("sizes", ["0", "4,-1", "8,0,16"])
def test_bad_batch_sizes_refused_before_compiling(sizes: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "mlp", "--batch-sizes", sizes]) == 2
    out, err = capsys.readouterr()
    if sizes == "0":
        assert err.strip().removeprefix("hloscope: error: ") in (ROOT / "docs" / "cli.md").read_text().replace("\n", " ")
    bad = next(b for b in sizes.split(",") if int(b) < 1)
    assert out == "" and err == (f"hloscope: error: --batch-sizes: {bad} is not a per-device batch size "
                                 f"(want integers >= 1, got '{sizes}')\n")


def test_a_cpu_dump_says_it_is_not_a_gpu_module(capsys: pytest.CaptureFixture[str]) -> None:
    # The folder's one module file is XLA:CPU's (dump.cc named it *.cpu_after_optimizations.txt).
    assert main(["analyze", str(CPU_DUMP)]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[0] == (
        "hloscope: note: this module was compiled for the CPU, not a GPU (XLA named the dump file "
        "module_0006.jit_step.cpu_after_optimizations.txt): its schedule says nothing about a GPU; the figures "
        "below model it on h100-sxm anyway, and --fail-on exits 8 on it (nothing to judge)")
    assert "module jit_step (scheduled)" in out
    assert err.splitlines()[0] in (ROOT / "docs" / "cli.md").read_text()  # the doc shows what it prints
    # As a gate it fails: nothing to judge (exit 8), never a pass.
    assert main(["analyze", str(CPU_DUMP), "--fail-on", "exposed"]) == 8


def test_cpu_text_on_stdin_is_known_by_its_backend_config(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # No file name: XLA:CPU's backend config (outer_dimension_partitions) on the fusion shows it.
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.StringIO(CPU_TEXT.read_text()))
    assert main(["analyze", "-"]) == 0
    err = capsys.readouterr().err
    assert "compiled for the CPU, not a GPU (XLA's CPU backend config on ynn_fusion)" in err


def test_a_gpu_dump_gets_no_backend_note(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(GPU_DUMP)]) == 0
    assert "compiled for the CPU" not in capsys.readouterr().err
