"""A whole --xla_dump_to folder is judged by its step, found by what it is, never by file size (issue 46 item 2).

fixtures/tpu_v5e/dump_offload_scan/ is a real TPU v5e dump (fixtures/README.md): the training step
``module_0044.jit_step`` (64,543 B, 128 MiB per layer offloaded each way; its module before
optimizations holds two ``annotate_device_placement`` calls) beside the larger random initializer
``module_0010.jit__normal`` (65,411 B, no host memory) and ``module_0017.jit_multiply`` (2,975 B).
Before, analyze read the largest file, the initializer, and said "no host transfers found".
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hloscope.artifact import load_unoptimized, read_step
from hloscope.cli.main import main
from tests.conftest import FIXTURES

DUMP = FIXTURES / "tpu_v5e" / "dump_offload_scan"
STEP = DUMP / "module_0044.jit_step.cl_933746096.after_optimizations.txt"
NORMAL = DUMP / "module_0010.jit__normal.cl_933746096.after_optimizations.txt"


def _one_line(err: str) -> str:
    assert err.count("\n") == 1 and err.startswith("hloscope: error: "), err
    return err.strip()


def test_the_step_is_read_though_the_initializer_is_larger(capsys: pytest.CaptureFixture[str]) -> None:
    # Given the dump as XLA wrote it: the initializer is the largest file (what "the largest" read)
    assert NORMAL.stat().st_size == 65411 > STEP.stat().st_size == 64543
    # When analyze reads the folder
    assert main(["analyze", str(DUMP), "--json"]) == 0
    out, err = capsys.readouterr()
    # Then it judges the step and says which module it read and why, and how to read another
    assert err.strip() == (f"hloscope: note: 3 modules in {DUMP}; reading jit_step (module_0044): it moves data "
                           "to or from host memory; --module NAME reads another")
    report = json.loads(out)
    moved = sorted((t["direction"], t["bytes"]) for t in report["transfers"])
    assert moved == [("to_device", 128 << 20), ("to_host", 128 << 20)]  # bf16[8192,8192] each way


def test_module_reads_another_and_a_name_that_is_not_there_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(DUMP), "--module", "jit__normal"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"hloscope report: {NORMAL}: module jit__normal") and "no host transfers found" in out
    assert err == ""
    assert main(["analyze", str(DUMP), "--module", "module_0044", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["transfers"] == 2
    listed = "its modules: jit__normal (module_0010), jit_multiply (module_0017), jit_step (module_0044)"
    for argv in (["analyze", str(DUMP)], ["check", str(DUMP), "--no-config"], ["dot", str(DUMP), "--calls"],
                 ["tui", str(DUMP)]):
        assert main([*argv, "--module", "jit_train"]) == 3, argv
        assert _one_line(capsys.readouterr().err) == (f"hloscope: error: {DUMP}: no module 'jit_train' in this "
                                                      f"dump folder; {listed}")
    assert main(["analyze", str(STEP), "--module", "jit_step"]) == 2
    assert "is not a folder; --module chooses among the modules of an XLA dump folder" in \
        _one_line(capsys.readouterr().err)


def test_check_and_dot_read_the_step_too(capsys: pytest.CaptureFixture[str]) -> None:
    from hloscope.check.subject import load_path

    # check's loader: the step and its module before optimizations (its placement annotations), or --module's
    subject = load_path(str(DUMP), None)
    assert subject.report.module.name == "jit_step" and subject.unoptimized is not None
    assert subject.unoptimized.name == "jit_step"
    other = load_path(str(DUMP), None, module="jit_multiply")
    assert other.report.module.name == "jit_multiply" and other.unoptimized is not None
    assert other.unoptimized.name == "jit_multiply"
    assert main(["dot", str(DUMP), "--calls"]) == 0
    assert 'label="call graph of jit_step\\n' in capsys.readouterr().out
    assert main(["dot", str(DUMP), "--calls", "--module", "jit__normal"]) == 0
    assert 'label="call graph of jit__normal\\n' in capsys.readouterr().out


def test_the_step_brings_its_target_arguments_and_its_module_before_optimizations() -> None:
    step = read_step(str(DUMP))
    assert step.inputs.module.name == "jit_step"
    assert "version: TPU_VERSION_VIPERFISH" in step.inputs.dumps.target_arguments
    assert step.inputs.dumps.target_arguments == (DUMP / "module_0044.jit_step.cl_933746096.target_arguments.txt"
                                                  ).read_text()
    assert read_step(str(STEP)).inputs.dumps.target_arguments == step.inputs.dumps.target_arguments
    assert read_step(str(DUMP), module="jit_multiply").inputs.dumps.target_arguments == ""  # (not kept)
    assert read_step(str(FIXTURES / "dump_mlp_offload")).inputs.dumps.target_arguments == ""  # a GPU dump has none
    before = load_unoptimized(str(DUMP))
    assert before is not None and before.name == "jit_step"
    assert sum(i.attr("custom_call_target") == '"annotate_device_placement"'
               for c in before.computations.values() for i in c.instructions) == 2


def test_without_host_transfers_the_training_step_wins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A CPU dump's grad step (no host memory, a gradient: transpose(jvp(...)) in its op names, 3,145 B)
    # beside the TPU dump's larger initializer: the step is read, not the larger file.
    shutil.copy(NORMAL, tmp_path)
    shutil.copy(FIXTURES / "cpu" / "dump_grad_step" / "module_0006.jit_step.cpu_after_optimizations.txt", tmp_path)
    assert main(["analyze", str(tmp_path), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["module"] == "jit_step"
    assert (f"hloscope: note: 2 modules in {tmp_path}; reading jit_step (module_0006): no module moves data to or "
            "from host memory; it holds a gradient; --module NAME reads another") in err
