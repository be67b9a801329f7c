"""``hloscope analyze`` through ``main(argv)``: output, JSON contract, exit codes, errors."""

from __future__ import annotations

import io
import json
import sys

import pytest

from hloscope.cli.main import main
from tests.conftest import FIXTURES

LLAMA = str(FIXTURES / "llama_offload.hlo.txt")


def test_table_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", LLAMA]) == 0
    out = capsys.readouterr().out
    assert "dynamic-slice-start.3" in out and "EXPOSED" in out and "HIDDEN" in out
    assert "to host 768.0 KiB/step" in out
    assert "estimate" in out


def test_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", LLAMA, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {"schema", "module", "scheduled", "target", "transfers", "async_pairs", "summary"} <= set(d)
    keys = {"name", "done", "computation", "direction", "op", "bytes", "executions", "async", "crosses_iteration",
            "overlapped_compute", "overlapped_collectives", "overlaps_compute", "overlaps_collectives",
            "est_transfer_us", "est_hidden_us", "verdict"}
    assert all(keys <= set(t) for t in d["transfers"]) and len(d["transfers"]) == 9
    assert {"to_host_bytes_per_step", "to_device_bytes_per_step", "by_verdict"} <= set(d["summary"])
    assert d["target"] == "h100-sxm" and d["scheduled"] is True


def test_dump_folder_and_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["analyze", str(FIXTURES / "dump_mlp_offload"), "--json"]) == 0
    from_dump = json.loads(capsys.readouterr().out)
    assert from_dump["summary"]["transfers"] == 3
    monkeypatch.setattr(sys, "stdin", io.StringIO((FIXTURES / "mlp_offload.hlo.txt").read_text()))
    assert main(["analyze", "-", "--format", "json"]) == 0
    from_stdin = json.loads(capsys.readouterr().out)
    assert from_stdin["summary"]["by_verdict"] == from_dump["summary"]["by_verdict"]


def test_output_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "r.json"
    assert main(["analyze", LLAMA, "--json", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["summary"]["transfers"] == 9
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


@pytest.mark.parametrize("verdicts, code", [("exposed", 1), ("sync", 0), ("sync,partial", 1), ("hidden", 1)])
def test_fail_on(verdicts: str, code: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", LLAMA, "--fail-on", verdicts]) == code


def test_fail_on_with_no_transfers_cannot_pass_by_accident(capsys: pytest.CaptureFixture[str]) -> None:
    # llama_remat recomputes instead of offloading: no host transfer to judge, so a gate exits 8
    # (nothing to check) unless the user says an empty module is fine.
    argv = ["analyze", str(FIXTURES / "llama_remat.hlo.txt"), "--fail-on", "exposed,sync,partial"]
    assert main(argv) == 8
    assert "nothing to check: no host transfer" in capsys.readouterr().err
    assert main([*argv, "--allow-empty"]) == 0


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["analyze", "/no/such/file.hlo"], 2, "no such file or directory"),
        (["analyze", LLAMA, "--target", "tpu-v9"], 3, "unknown target 'tpu-v9'; choose one of: h100-sxm"),
        # Unknown names (format, verdict, target, ...) share exit code 3, as docs/cli.md says.
        (["analyze", LLAMA, "--format", "xml"], 3, "unknown format 'xml'; choose one of: table, json"),
        (["analyze", LLAMA, "--fail-on", "slow"], 3, "unknown verdict(s) slow"),
        (["frobnicate"], 2, "invalid choice"),
    ],
)
def test_errors_are_one_line(argv: list[str], code: int, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == code
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and err.startswith("hloscope: error: ")
    assert "Traceback" not in err


def test_malformed_file_reports_position(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.hlo"
    text = (FIXTURES / "mlp_offload.hlo.txt").read_text().replace("fusion-done(", "fusion-done((", 1)
    bad.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "fusion-done((" in ln)
    assert main(["analyze", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"hloscope: error: {bad}:{line}:") and "\n" not in err


def test_binary_file_is_rejected(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "blob.bin"
    f.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    assert main(["analyze", str(f)]) == 2
    err = capsys.readouterr().err
    assert "binary data (a NUL byte at byte 8), not HLO text" in err and err.count("\n") == 1


def test_unwritable_output_is_an_error(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    assert main(["analyze", LLAMA, "-o", str(tmp_path / "missing" / "r.txt")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_targets_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["targets"]) == 0
    out = capsys.readouterr().out
    for name in ("h100-sxm", "h200", "b200", "gh200", "gb200"):
        assert name in out


def test_user_target_file(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "slow.toml"
    f.write_text('base = "h100-sxm"\nname = "slow-link"\nhost_link_to_host = 1e9\nhost_link_to_device = 1e9\n')
    assert main(["analyze", LLAMA, "--target", str(f), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["target"] == "slow-link"
    q = next(t for t in d["transfers"] if t["name"] == "dynamic-slice-start.3")
    assert abs(q["est_transfer_us"] - (2.0 + 262144 / 1e9 * 1e6)) < 0.01  # the base's 2 us DMA setup + bytes
    bad = tmp_path / "bad.toml"
    bad.write_text('base = "h100-sxm"\nhost_lnk = 3\n')
    assert main(["analyze", LLAMA, "--target", str(bad)]) == 2
    assert "unknown target field(s): host_lnk" in capsys.readouterr().err


def test_dump_folder_with_several_modules_names_its_choice(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    import shutil

    small = next((FIXTURES / "dump_mlp_offload").glob("*after_optimizations.txt"))
    shutil.copy(small, tmp_path / small.name)
    shutil.copy(LLAMA, tmp_path / "module_0002.jit_x.sm_9.0a_gpu_after_optimizations.txt")
    assert main(["analyze", str(tmp_path), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["summary"]["transfers"] == 9  # the larger (llama) module
    assert "2 modules" in captured.err and "module_0002" in captured.err


def test_empty_dump_folder(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    assert main(["analyze", str(tmp_path)]) == 2
    assert "no '*after_optimizations.txt'" in capsys.readouterr().err


def test_artifact_folder_reads_its_optimized_hlo(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    import shutil

    shutil.copy(LLAMA, tmp_path / "optimized.hlo.txt")
    shutil.copy(FIXTURES / "llama_offload.before_optimizations.hlo.txt", tmp_path / "unoptimized.hlo.txt")
    assert main(["analyze", str(tmp_path), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["scheduled"] is True and d["summary"]["transfers"] == 9
