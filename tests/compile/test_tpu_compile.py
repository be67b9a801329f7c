"""Deviceless compiles for TPU targets (libtpu's compile-only slices, hloscope/compile/tpu), held against a chip.

The measured run ``../shared/measured/tpu-v5e/offload_scan_8x128MiB`` (one TPU v5e chip, jax 0.10.2 with
libtpu 0.0.42): its step (tests/compile/tpu_steps.py) moved 8 x 128 MiB to host and back per step, and the
chip's own compile reported temporaries 839,506,432 B and host temporaries 1,073,741,824 B. Each compile
here takes 5-20 s (measured on 2 shared cores). Skipped without libtpu (``pip install 'hloscope[tpu]'``).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from hloscope.compile.tpu.runtime import libtpu_version

pytestmark = [pytest.mark.xla,
              pytest.mark.skipif(libtpu_version() is None, reason="needs libtpu: pip install 'hloscope[tpu]'")]

ROOT = Path(__file__).resolve().parents[2]
STEPS = "tests.compile.tpu_steps"
MiB = 2**20

#: temp_size_in_bytes of the measured step, per libtpu: 0.0.42 is the chip's own figure (its run's
#: compiled.memory_analysis()); 0.0.50 (jax 0.12.0.1) plans 1,644,845,056 B for the same module (measured
#: here, deviceless; no chip run with it).
TEMPORARIES = {"0.0.42": 839_506_432, "0.0.50": 1_644_845_056}


def _libtpu() -> str:
    """The installed libtpu's release (``0.0.42`` of ``0.0.42.1``)."""
    return ".".join((libtpu_version() or "").split(".")[:3])


def _result(request):  # type: ignore[no-untyped-def]
    from hloscope.compile.run.jobs import compile_request_result

    return compile_request_result(request)


def _transfers(result):  # type: ignore[no-untyped-def]
    """The compile's host transfers, each named as the pipeline names them (needs no target)."""
    from hloscope.analysis.intent.naming import find_named_transfers
    from hloscope.analysis.structure.index import ModuleIndex
    from hloscope.hlo.parser import parse_hlo

    index = ModuleIndex(parse_hlo(result.optimized_hlo, "<tpu>"))
    return find_named_transfers(index, names=result.tensor_names, intent=result.intent,
                                unoptimized=parse_hlo(result.unoptimized_hlo, "<unoptimized>"))


def test_the_measured_v5e_step_compiles_with_the_chips_transfers_and_memory() -> None:
    from hloscope.request import CompileRequest

    # Given the measured program's step (the big case) for one v5e chip
    result, _ = _result(CompileRequest("tpu-v5e", 1, fn=f"{STEPS}:step", args=f"@{STEPS}:big_args",
                                       cwd=str(ROOT)))
    # Then it was compiled for the one-chip slice, with TPU XLA's own layouts and host memory space
    assert result.topology.startswith("v5e:1x1 ") and result.mesh_shape == {"fsdp": 1}
    assert ":T(8,128)" in result.optimized_hlo and "S(5)" in result.optimized_hlo
    assert result.scheduler is not None and result.scheduler.name == "lhs"
    # and, as on the chip, 8 x 128 MiB go to host and come back per step (hidden, bf16[1,8192,8192] a layer)
    moved = Counter()
    for t in _transfers(result):
        assert t.checkpoint_name == "hidden" and t.bytes == 128 * MiB and t.is_async
        moved[str(t.direction)] += t.bytes * t.executions
    assert moved == {"to_host": 1024 * MiB, "to_device": 1024 * MiB}
    # with the chip's host temporaries (the 8 offloaded layers) and, on libtpu 0.0.42, its temporaries
    assert result.memory["host_temp_size_in_bytes"] == 1_073_741_824
    assert result.memory["temp_size_in_bytes"] == TEMPORARIES[_libtpu()]
    # and one v5e device's HBM (16 GiB, the target's) as the memory compiled for
    assert result.device_memory_size == 16_909_336_064  # what the chip lets a program use (its dump says so)


@pytest.mark.slow  # 40-80 s of compiles on 2 cores: the README test command stays under 10 minutes (issue 46)
def test_the_llama_workload_on_eight_v5p_chips_names_its_transfers() -> None:
    from hloscope.request import CompileRequest

    result, _ = _result(CompileRequest("tpu-v5p", 8, workload="llama"))
    # v5p: one device per chip (megacore), 8 chips as MaxText's v5p-16
    assert result.topology == "v5:2x2x2 (v5p-16: 8 chips, topology 2x2x2, 1 device per chip)"
    transfers = _transfers(result)
    assert {t.checkpoint_name for t in transfers if t.checkpoint_name} == {"query_proj", "key_proj", "value_proj"}
    # libtpu 0.0.42: 12 transfers (2 layers x Q/K/V, each way: dynamic-update-slice-start into the stacked
    # buffers, dynamic-slice-start out), all named. libtpu 0.0.50 (read in its HLO): 15, to host 3 named
    # dynamic-update-slice-start, 3 named copy-start and 3 more dynamic-update-slice-start with no name found;
    # to the device 3 named copy-start and 3 dynamic-slice-start with no name found
    count, unnamed = {"0.0.42": (12, 0), "0.0.50": (15, 6)}[_libtpu()]
    assert len(transfers) == count and sum(t.checkpoint_name is None for t in transfers) == unnamed


def test_a_named_slice_is_compiled_as_that_shape() -> None:
    from hloscope.request import CompileRequest

    # MaxText's name for 4 chips of tpu7x (8 TensorCores, each a device): libtpu's tpu7x:2x2x1
    result, _ = _result(CompileRequest("tpu7x", 8, fn=f"{STEPS}:small_step", args=f"@{STEPS}:small_args",
                                       cwd=str(ROOT), topology="tpu7x-8"))
    assert result.topology == "tpu7x:2x2x1 (tpu7x-8: 4 chips, topology 2x2x1, 2 devices per chip)"
    # 192 GiB a chip, two devices: 96 GiB each, of which libtpu lets a program use 94.74 GiB
    assert result.devices == 8 and result.device_memory_size == round(94.74 * 2**30)


def test_tpu_options_reach_the_compile_and_an_unknown_one_is_one_line() -> None:
    from hloscope.errors import EXIT_COMPILE_FAILED, HloscopeError
    from hloscope.request import CompileRequest, Scheduler

    small = {"fn": f"{STEPS}:small_step", "args": f"@{STEPS}:small_args", "cwd": str(ROOT)}
    off, _ = _result(CompileRequest("tpu-v5e", 4, scheduler=Scheduler.NONE, **small))  # type: ignore[arg-type]
    assert off.options == {"xla_tpu_enable_latency_hiding_scheduler": False}
    assert off.scheduler is not None and off.scheduler.name == "none"
    with pytest.raises(HloscopeError) as e:
        _result(CompileRequest("tpu-v5e", 4, xla_flags=("xla_tpu_no_such_flag=true",), **small))  # type: ignore[arg-type]
    assert e.value.exit_code == EXIT_COMPILE_FAILED
    assert "No such compile option: 'xla_tpu_no_such_flag'" in str(e.value) and "\n" not in str(e.value)


def test_the_nested_scan_offload_failure_names_the_upstream_issue() -> None:
    from hloscope.errors import EXIT_COMPILE_FAILED, HloscopeError
    from hloscope.request import CompileRequest

    with pytest.raises(HloscopeError) as e:
        _result(CompileRequest("tpu-v5e", 1, fn=f"{STEPS}:nested_step", args=f"@{STEPS}:nested_args",
                               cwd=str(ROOT)))
    assert e.value.exit_code == EXIT_COMPILE_FAILED and "\n" not in str(e.value)
    assert "host offload inside a nested scan" in str(e.value) and "AI-Hypercomputer/maxtext#4995" in str(e.value)


def test_libtpu_prints_nothing_in_a_compile_process(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "tpu.py"
    script.write_text(
        "import hloscope\n"
        "from hloscope.request import CompileRequest\n"
        "from hloscope.compile.run.jobs import compile_job\n"
        f"r, _ = compile_job(CompileRequest('tpu-v5e', 4, fn='{STEPS}:small_step', args='@{STEPS}:small_args',"
        f" cwd={str(ROOT)!r}))\n"
        "print(r.topology)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TPU_", "ALLOW_MULTIPLE", "JAX_PLATFORMS"))}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("v5e:2x2 ") and proc.stderr == ""


def test_the_cli_compiles_a_named_slice_and_refuses_one_for_a_gpu(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from hloscope.cli.main import main

    monkeypatch.chdir(ROOT)
    out = tmp_path / "v5p-8"
    # v5p-8 is MaxText's name for 4 chips (8 TensorCores), one device each: --devices follows it
    assert main(["compile", "--fn", f"{STEPS}:small_step", "--args-from", f"{STEPS}:small_args", "--target", "v5p",
                 "--topology", "v5p-8", "--out", str(out), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["topology"] == "v5:2x2x1 (v5p-8: 4 chips, topology 2x2x1, 1 device per chip)" and manifest["devices"] == 4
    assert manifest["request"]["topology"] == "v5p-8"
    assert {t["direction"] for t in d["transfers"]} == {"to_host", "to_device"}
    # --topology for a GPU target, and a slice whose count --devices contradicts: one line each, exit 2
    assert main(["compile", "--fn", f"{STEPS}:small_step", "--args-from", f"{STEPS}:small_args", "--target",
                 "h100-sxm", "--topology", "v5p-8", "--out", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err == ("hloscope: error: --topology names a TPU slice; h100-sxm is not a TPU "
                                       "target\n")
    assert main(["compile", "--fn", f"{STEPS}:small_step", "--args-from", f"{STEPS}:small_args", "--target",
                 "tpu-v5p", "--topology", "v5p-8", "--devices", "16", "--out", str(tmp_path / "y")]) == 2
    assert capsys.readouterr().err == ("hloscope: error: --topology v5p-8 is 4 devices of tpu-v5p, --devices says "
                                       "16\n")
    # MaxText's own step for a TPU (tests/compile/test_maxtext_tpu.py): a count that is no slice is one line
    # before MaxText or libtpu starts, on any Python
    assert main(["compile", "--maxtext", "base_emb_dim=256", "--target", "tpu-v5e", "--devices", "6"]) == 2
    assert capsys.readouterr().err.startswith("hloscope: error: --devices 6 is no tpu-v5e slice (1 device per chip)")


def test_the_api_compiles_for_a_tpu_target_by_alias() -> None:
    import hloscope
    from tests.compile.tpu_steps import small_args, small_step

    # "trillium" is tpu-v6e; 4 chips of one TensorCore each: libtpu's v6e:2x2
    result, report = hloscope.compile_step(small_step, *small_args(), target="trillium", devices=4)
    assert result.target == "tpu-v6e" and result.topology == "v6e:2x2 (v6e-4: 4 chips, topology 2x2, 1 device per chip)"
    d = report.to_dict()
    assert d["target"] == "tpu-v6e"
    moved: Counter[str] = Counter()
    for t in d["transfers"]:
        moved[t["direction"]] += t["bytes"] * t["executions"]
    # the small step's 2 layers of bf16[512,512] hidden (512 KiB each): 1 MiB each way per step. libtpu 0.0.50
    # unrolls the two layers and writes layer 1's twice (dynamic-update-slice-start.1 into the stack and
    # copy-start), reading back copy-start's and slot 0 of the stack (dynamic-slice-start): 1.5 MiB to host
    writes = {"0.0.42": 2, "0.0.50": 3}[_libtpu()]
    assert moved == {"to_host": writes * 512 * 512 * 2, "to_device": 2 * 512 * 512 * 2}


def test_v4_per_core_compiles_two_devices_a_chip_each_with_one_cores_hbm(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from hloscope.cli.main import main

    monkeypatch.chdir(ROOT)
    out = tmp_path / "v4-8"
    # Given v4-8 (4 chips, 8 TensorCores) per core: 8 devices (megacore would be 4)
    assert main(["compile", "--fn", f"{STEPS}:small_step", "--args-from", f"{STEPS}:small_args", "--target",
                 "tpu-v4", "--topology", "v4-8", "--per-core", "--out", str(out), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["topology"] == "v4:2x2x1 (v4-8: 4 chips, topology 2x2x1, 2 devices per chip)" and manifest["devices"] == 8
    assert manifest["request"]["per_core"] is True
    # each device compiled for what libtpu lets one TensorCore use (tests/compile/test_tpu_hbm.py)
    assert manifest["memory"]["device_memory_size"] == round(15.25 * 2**30)
    assert d["memory"]["hbm_bytes"] == round(15.25 * 2**30)
    # --per-core on v5p: libtpu shows its chips as one device either way; one line, exit 2
    assert main(["compile", "--fn", f"{STEPS}:small_step", "--args-from", f"{STEPS}:small_args", "--target",
                 "tpu-v5p", "--devices", "8", "--per-core", "--out", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.startswith("hloscope: error: --per-core: libtpu shows no tpu-v5p chip as two")


def test_a_v5p_compile_names_its_slice_as_cloud_tpu_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """64 v5p chips are Cloud TPU's v5p-128 (TensorCores): the header, the folder and the JSON say so."""
    import json

    from hloscope.cli.main import main

    monkeypatch.chdir(tmp_path)
    assert main(["compile", "--workload", "mlp", "--target", "tpu-v5p", "--devices", "64"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("hloscope report: hloscope-out/mlp-offload-v5p-128/optimized.hlo.txt: ")
    assert out[1] == "TPU slice: v5p-128 (64 chips, topology 4x4x4, 64 devices)"
    folder = tmp_path / "hloscope-out" / "mlp-offload-v5p-128"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["tpu_slice"]["name"] == "v5p-128" and manifest["tpu_slice"]["chips"] == 64
    # the folder read back: the same header line and the JSON's tpu_slice
    assert main(["analyze", str(folder), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["tpu_slice"] == {"name": "v5p-128", "accelerator_type": "v5p-128", "chips": 64, "topology": "4x4x4",
                              "devices": 64, "devices_per_chip": 1, "slices": 1, "libtpu_name": "v5:4x4x4"}
