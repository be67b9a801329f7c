"""An nsys-jax archive is opened once per ``hloscope analyze`` (issue 35: it was opened 7 times:
the CLI's archive test, the profile's sniff and read, the module's sniff and read, the target's
device lookup), and what is read of it is what the archive holds.

Read by hand (``unzip -l fixtures/measured/pax_fsdp4_proc0.nsys.zip``, the step's module of the
A100 run kept, fixtures/measured/README.md): one optimized module under ``dump/``,
``module_0040.pjit__wrapped_step_fn.sm_8.0_gpu_after_optimizations.hlo.pb.xz`` (408,064 bytes);
its ``gpu_target_config.pbtxt.xz`` says ``device_description_str: "NVIDIA A100-SXM4-40GB"``;
the projected trace is 138,008 bytes.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from hloscope.errors import HloscopeError
from hloscope.hlo.archive import known_archive, nsys_archive

ARCHIVE = Path(__file__).resolve().parents[2] / "fixtures" / "measured" / "pax_fsdp4_proc0.nsys.zip"
STEP = "dump/module_0040.pjit__wrapped_step_fn.sm_8.0_gpu_after_optimizations.hlo.pb.xz"


def test_the_archive_is_read_as_unzip_lists_it(tmp_path: Path) -> None:
    copy = tmp_path / "a.zip"
    shutil.copy(ARCHIVE, copy)
    assert known_archive(copy) is None  # nothing read yet
    a = nsys_archive(copy)
    assert a is not None and a.is_nsys
    assert (a.module_member, a.module_count, len(a.module)) == (STEP, 1, 408_064)
    assert a.device == "NVIDIA A100-SXM4-40GB"
    assert a.trace is not None and len(a.trace) == 138_008
    assert a.module_notes() == ()
    assert known_archive(copy) is a
    # A changed file is read again, not taken from what was read before
    os.utime(copy, ns=(1, 1))
    assert known_archive(copy) is None


def test_text_folders_and_missing_paths_are_not_archives(tmp_path: Path) -> None:
    (tmp_path / "m.hlo.txt").write_text("HloModule m\n")
    assert nsys_archive(tmp_path / "m.hlo.txt") is None
    assert nsys_archive(tmp_path) is None
    assert nsys_archive(tmp_path / "missing.zip") is None


def test_a_truncated_zip_is_one_line(tmp_path: Path) -> None:
    cut = tmp_path / "cut.zip"
    cut.write_bytes(ARCHIVE.read_bytes()[:5000])
    with pytest.raises(HloscopeError) as e:
        nsys_archive(cut)
    assert str(e.value).startswith(f"{cut}: not a readable .zip archive") and "truncated" in str(e.value)


def test_analyze_opens_the_archive_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyarrow")
    from hloscope.cli.main import main

    copy = (tmp_path / "run.zip").resolve()
    shutil.copy(ARCHIVE, copy)
    opened: list[str] = []

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event == "open" and args and isinstance(args[0], str | os.PathLike) and \
                os.path.abspath(os.fsdecode(args[0])) == str(copy):  # type: ignore[arg-type]
            opened.append(event)

    sys.addaudithook(hook)  # stays for the process; it only counts opens of this test's copy
    assert main(["analyze", str(copy), "-o", str(tmp_path / "r.txt")]) == 0
    assert len(opened) == 1
    # and the report is the archive's: its step module, its A100, its measured profile
    text = (tmp_path / "r.txt").read_text()
    assert "pjit__wrapped_step_fn" in text and "a100" in text.lower()
