"""TPU memory from an XLA dump folder (issue 53 item 3), read as a TPU user reads it.

The fixture is the shared v5e run's dump (fixtures/tpu_v5e/dump_offload_scan/: the step's
buffer assignment, live ranges and memory report copied unchanged). Facts read by hand from
those files and from the chip's ``compiled.memory_analysis()``
(fixtures/measured/tpu_v5e/big/facts.json, the same compile: its memory report is byte for byte
the dump's):

- arguments: three ``parameter`` allocations, 268,435,456 + 268,435,456 + 33,554,432
  = 570,425,344 B: the chip's ``argument_bytes``;
- host temporaries: one ``color 5, preallocated-temp`` allocation of 1,073,741,824 B: the
  chip's ``host_temp_bytes``;
- device temporaries: one space-0 ``preallocated-temp`` allocation of 570,737,152 B;
- outputs: two 268,435,456 B and two 512 B ``maybe-live-out`` allocations, 536,871,936 B;
- VMEM: ``allocation 25: size 33554432, color 1`` (``fusion.68``, ``wide.arg_tuple.0{1}`` live
  at the peak, 32 MiB each); SMEM: 16 B (``color 2``);
- XLA's live-range peak, schedule point 54: 2,113,929,378 B, of them 1 GiB host
  (``dynamic_update_slice.18``), 64 MiB VMEM and a 4 B SMEM semaphore.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.analysis.memory import memory_facts
from hloscope.artifact import load_report
from hloscope.cli.main import main
from hloscope.hlo.shape import HOST_MEMORY_SPACE
from hloscope.hlo.xla_dumps import allocation_figures
from hloscope.targets import get_target
from tests.conftest import FIXTURES

DUMP = FIXTURES / "tpu_v5e" / "dump_offload_scan"
STEM = "module_0044.jit_step.cl_933746096.after_optimizations"
TPU_ON_CHIP = frozenset({1, 2})


def _text(suffix: str) -> str:
    return (DUMP / f"{STEM}{suffix}").read_text()


def test_the_buffer_assignment_gives_the_chips_arguments_and_host_temporaries() -> None:
    # Given: the step's buffer assignment; When: its allocations are summed per space
    figures = allocation_figures(_text("-buffer-assignment.txt"), HOST_MEMORY_SPACE, TPU_ON_CHIP)
    chip = json.loads((FIXTURES / "measured/tpu_v5e/big/facts.json").read_text())["memory"]["memory_analysis"]
    # Then: what the chip's memory_analysis() reported, and the dump's own temporaries and outputs
    assert figures["argument_size_in_bytes"] == chip["argument_bytes"] == 570_425_344
    assert figures["host_temp_size_in_bytes"] == chip["host_temp_bytes"] == 1_073_741_824
    assert figures["temp_size_in_bytes"] == 570_737_152
    assert figures["output_size_in_bytes"] == 536_871_936
    assert figures["alias_size_in_bytes"] == 0 and figures["host_argument_size_in_bytes"] == 0
    # VMEM and SMEM counted as device memory would add their 33,554,432 + 16 B to the temporaries
    as_device = allocation_figures(_text("-buffer-assignment.txt"), HOST_MEMORY_SPACE)
    assert as_device["temp_size_in_bytes"] == 570_737_152 + 33_554_432 + 16


def test_vmem_values_live_at_the_peak_are_never_among_the_largest_device_buffers() -> None:
    figures = allocation_figures(_text("-buffer-assignment.txt"), HOST_MEMORY_SPACE, TPU_ON_CHIP)
    args = (figures, get_target("tpu-v5e"), _text("-memory-usage-report.txt"), _text("-buffer-assignment.txt"),
            None, _text("-live-range.txt"))
    # Given the platform's on-chip spaces, the two 32 MiB VMEM values are left out of the device list
    tpu = memory_facts(*args, on_chip=TPU_ON_CHIP)
    assert {b.memory_space for b in tpu.top_buffers} == {0}
    assert tpu.on_chip_bytes == {1: 33_554_432, 2: 16}
    # two 32 MiB VMEM values and the DUS's 4 B SMEM semaphore (dynamic-update-slice-start{2}, u32[]{:S(2)})
    assert tpu.on_chip_live_at_peak_bytes == 2 * 33_554_432 + 4
    assert tpu.live_at_peak is not None and tpu.live_at_peak.total_bytes == 2_113_929_378
    assert tpu.host_live_at_peak_bytes == 1 << 30
    assert tpu.live_at_peak_device_bytes == 2_113_929_378 - (1 << 30) - 2 * 33_554_432 - 4
    # Without them (a GPU's reading), S(1) values would be listed as device buffers
    plain = memory_facts(*args)
    assert 1 in {b.memory_space for b in plain.top_buffers}


def test_analyze_of_a_tpu_dump_folder_prints_its_memory(capsys: pytest.CaptureFixture[str]) -> None:
    # When: a TPU user analyzes the dump folder with no flags
    assert main(["analyze", str(DUMP)]) == 0
    out = capsys.readouterr().out
    # Then: HBM (device) and host, arguments, temporaries, outputs, the fit on v5e's 15.75 GiB,
    # the peak, and VMEM/SMEM apart from HBM
    assert ("memory per device: device allocation 1.6 GiB (fits in 15.7 GiB of HBM; arguments 544.0 MiB + "
            "temporaries 544.3 MiB + outputs not aliased 512.0 MiB), host 1.0 GiB") in out
    assert ("  XLA's live ranges peak at schedule point 54: 2.0 GiB live: 928.0 MiB device, 64.0 MiB on-chip "
            "scratch, 1.0 GiB host") in out
    assert "  on-chip scratch, not HBM (not in the figures above): VMEM S(1) 32.0 MiB, SMEM S(2) 16 B" in out
    largest = out.split("largest device buffers live at the peak:\n", 1)[1].split("\nall *us", 1)[0]
    assert "S(1)" not in largest and "params_0_.1{}" in largest


def test_the_json_report_of_a_tpu_dump_folder_has_its_memory(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(DUMP), "--json"]) == 0
    memory = json.loads(capsys.readouterr().out)["memory"]
    assert memory["device_allocation_bytes"] == 570_425_344 + 570_737_152 + 536_871_936
    assert memory["host_bytes"] == 1_073_741_824 and memory["hbm_bytes"] == 16_909_336_064 and memory["fits"]
    assert memory["on_chip_bytes"] == {"1": 33_554_432, "2": 16}


def test_a_gpu_dump_folder_without_a_buffer_assignment_is_as_before() -> None:
    # The H100 dump has a memory report but no buffer assignment: no memory section, no on-chip keys
    report = load_report(str(FIXTURES / "dump_mlp_offload"))
    assert report.memory is None


@pytest.mark.xla
def test_a_compiled_tpu_step_keeps_vmem_out_of_its_device_buffers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # Given: the measured run's step (tests/compile/tpu_steps.py), compiled deviceless for one v5e chip
    from hloscope.compile.tpu.runtime import libtpu_version

    if libtpu_version() is None:
        pytest.skip("needs libtpu: pip install 'hloscope[tpu]'")
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    code = main(["compile", "--fn", "tests.compile.tpu_steps:step", "--args-from", "tests.compile.tpu_steps:big_args",
                 "--target", "tpu-v5e", "--devices", "1", "--out", str(tmp_path / "art")])
    out = capsys.readouterr().out
    assert code == 0, out
    # Then: VMEM and SMEM are named apart from HBM, never among the largest device buffers, and XLA's
    # peak (2.0 GiB) is read as the host heap's, not as HBM's
    assert "  on-chip scratch, not HBM (not in the figures above): VMEM S(1) 32.0 MiB, SMEM S(2) 16 B" in out
    largest = out.split("largest device buffers live at the peak:\n", 1)[1].split("\nall *us", 1)[0]
    assert "S(1)" not in largest and "S(2)" not in largest
    assert "XLA's peak_memory_in_bytes counts pinned-host buffers" in out
    assert "host 1.0 GiB" in out and "arguments 544.0 MiB" in out
