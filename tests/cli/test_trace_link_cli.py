"""analyze --trace writes the simulated step for Perfetto; --link chooses the host link figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.cli.main import main
from tests.conftest import FIXTURES

LLAMA = str(FIXTURES / "llama_offload_nopipe.hlo.txt")


def test_trace_file_has_one_track_per_resource_and_transfer_slices(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "step.json"
    assert main(["analyze", LLAMA, "--target", "gb200", "--trace", str(trace), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    doc = json.loads(trace.read_text())
    procs = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    assert {"compute", "host link D->H", "host link H->D"} <= procs
    # Every host transfer of the report appears as a slice on a host link track, with its verdict.
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    names = {e["name"] for e in slices}
    for t in report["transfers"]:
        assert t["name"] in names
    step_us = report["summary"]["simulated_step"]["step_us"]
    assert all(e["ts"] >= 0 and e["ts"] + e["dur"] <= step_us + 1e-3 for e in slices)


def test_trace_refuses_an_unscheduled_module(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "step.json"
    code = main(["analyze", str(FIXTURES / "mlp_offload.before_optimizations.hlo.txt"), "--trace", str(trace)])
    assert code == 2 and not trace.exists()
    assert "no simulated step" in capsys.readouterr().err


def test_link_peak_is_faster_than_achieved(capsys: pytest.CaptureFixture[str]) -> None:
    # H100's PCIe Gen5 x16: 64 GB/s peak per direction, about 55 achieved (docs/targets.md).
    def xfer_us(link: str) -> float:
        assert main(["analyze", LLAMA, "--link", link, "--json"]) == 0
        d = json.loads(capsys.readouterr().out)
        assert d["summary"]["simulated_step"]["link_mode"] == link
        # each transfer's 2 us DMA setup does not depend on the link's bandwidth
        return float(sum(t["est_transfer_us"] - 2.0 for t in d["transfers"]))

    peak, achieved = xfer_us("peak"), xfer_us("achieved")
    assert achieved / peak == pytest.approx(64 / 55, rel=0.01)


def test_unknown_link_mode_is_an_unknown_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", LLAMA, "--link", "fast"]) == 3
    err = capsys.readouterr().err
    # issue 46 item 9: the values as a user types them, not <LinkMode.ACHIEVED: 'achieved'>
    assert err.strip() == ("hloscope: error: analyze: argument --link: invalid choice: 'fast' "
                           "(choose from 'achieved', 'peak')"), err


def test_report_names_the_file_read_and_notes_which_module_of_a_folder(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # Given a dump folder with two optimized modules (the real mlp dump and the llama fixture),
    # both moving data to and from host memory, when analyze reads the folder, it reads the larger,
    # says which and why on stderr, and the report's first line names the file it read.
    import shutil

    dump = tmp_path / "dump"
    shutil.copytree(FIXTURES / "dump_mlp_offload", dump)
    shutil.copy(LLAMA, dump / "module_9.jit_step.sm_9.0a_gpu_after_optimizations.txt")
    assert main(["analyze", str(dump)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].startswith(f"hloscope report: {dump / 'module_9.jit_step.sm_9.0a_gpu_after_optimizations.txt'}:")
    assert f"hloscope: note: 2 modules in {dump}; reading jit_step (module_9): it moves data to or from host " \
           "memory (so does jit_step (module_6045); the largest is read); --module NAME reads another" in err
    # The library itself prints nothing: the note is data on the report.
    import hloscope.hlo.loader as loader

    module, notes = loader.load_module_with_notes(str(dump))
    assert module.name == "jit_step" and len(notes) == 1 and "2 modules" in notes[0]
