"""Profile files are read on the sources side, once, their form told by content.

Read by hand: fixtures/measured/cpu_step/step.trace.json.gz is a gzip stream (``1f 8b``) of a
Chrome trace whose first key is ``traceEvents``; step.xplane.pb is a serialized XSpace (its first
byte ``0a`` opens the planes field, a plane named ``/host:metadata`` follows); the nsys-jax archive is a
zip (``PK\\x03\\x04``) holding ``nvtx_gpu_proj_trace/trace.parquet``.
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.profile_files import ProfileForm, read_measured_file, read_profile_file
from tests.conftest import FIXTURES

CPU = FIXTURES / "measured" / "cpu_step"
PGLE = 'costs { name: "dot" cost_us: 41.5 }\n'

FORMS = {
    "gzip'd Chrome trace": (CPU / "step.trace.json.gz", ProfileForm.TRACE),
    "XSpace by its name": (CPU / "step.xplane.pb", ProfileForm.XPLANE),
    "nsys-jax archive": (FIXTURES / "measured" / "pax_fsdp4_proc0.nsys.zip", ProfileForm.NSYS),
}


@pytest.mark.parametrize("name", FORMS)
def test_the_form_is_told_by_content(name: str) -> None:
    path, form = FORMS[name]
    f = read_measured_file(path)
    assert (f.source, f.form) == (str(path), form)
    if form is ProfileForm.NSYS:
        assert f.data == b"" and f.archive is not None and f.archive.is_nsys
    else:
        assert f.archive is None and f.data


def test_content_not_the_name_decides(tmp_path: Path) -> None:
    # Given an XSpace and a Chrome trace under names that say nothing
    plane = tmp_path / "run.bin"
    plane.write_bytes((CPU / "step.xplane.pb").read_bytes())
    trace = tmp_path / "trace.json"
    trace.write_bytes(gzip.decompress((CPU / "step.trace.json.gz").read_bytes()))
    pgle = tmp_path / "profile.txt"
    pgle.write_text(PGLE)
    # Then each is read as what it holds; the trace's bytes are the JSON itself
    assert read_measured_file(plane).form is ProfileForm.XPLANE
    got = read_measured_file(trace)
    assert got.form is ProfileForm.TRACE and got.data == trace.read_bytes()
    assert read_measured_file(pgle).form is ProfileForm.PGLE
    assert read_profile_file(pgle).data == PGLE.encode()


def test_bad_files_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    with pytest.raises(HloscopeError, match="not a usable measured profile: the file is empty") as e:
        read_measured_file(empty)
    assert e.value.exit_code == EXIT_BAD_INPUT
    with pytest.raises(HloscopeError, match="cannot read profile"):
        read_profile_file(tmp_path / "missing.pbtxt")
    hlo = str(CPU / "step.hlo.txt")
    assert main(["analyze", hlo, "--measured", str(tmp_path / "missing.json")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith("missing.json: cannot read profile: No such file or directory")


def test_analyze_opens_the_measured_trace_once(tmp_path: Path) -> None:
    copy = (tmp_path / "step.trace.json.gz").resolve()
    shutil.copy(CPU / "step.trace.json.gz", copy)
    opened: list[str] = []

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event == "open" and args and isinstance(args[0], str | os.PathLike) and \
                os.path.abspath(os.fsdecode(args[0])) == str(copy):  # type: ignore[arg-type]
            opened.append(event)

    sys.addaudithook(hook)  # stays for the process; it only counts opens of this test's copy
    assert main(["analyze", str(CPU / "step.hlo.txt"), "--measured", str(copy), "-o", str(tmp_path / "r.txt")]) == 0
    assert len(opened) == 1
    assert "coverage: 4 of 4 measured ops" in (tmp_path / "r.txt").read_text()


# -- a folder jax.profiler.trace wrote (a newcomer gives the folder, not the file) ----------------------

V5E = FIXTURES / "measured" / "tpu_v5e"


def test_a_profile_folder_is_read_as_its_one_xplane() -> None:
    # fixtures/measured/tpu_v5e/small/profile holds step.xplane.pb and step.trace.json.gz (the same run)
    f = read_measured_file(V5E / "small" / "profile")
    assert (f.source, f.form) == (str(V5E / "small" / "profile" / "step.xplane.pb"), ProfileForm.XPLANE)


def test_jax_profilers_own_layout_is_found(tmp_path: Path) -> None:
    # jax.profiler.trace(DIR) writes DIR/plugins/profile/<run>/<host>.xplane.pb
    run = tmp_path / "plugins" / "profile" / "2026_12_06_06_30_00"
    run.mkdir(parents=True)
    shutil.copy(CPU / "step.trace.json.gz", run / "host.trace.json.gz")
    assert read_measured_file(tmp_path).form is ProfileForm.TRACE  # no XSpace: the one trace
    shutil.copy(CPU / "step.xplane.pb", run / "host.xplane.pb")
    f = read_measured_file(tmp_path)
    assert (f.source, f.form) == (str(run / "host.xplane.pb"), ProfileForm.XPLANE)


def test_a_folder_with_several_profiles_or_none_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(HloscopeError) as several:
        read_measured_file(V5E)
    assert several.value.exit_code == EXIT_BAD_INPUT
    assert str(several.value).startswith(f"{V5E}: 12 profiles (*.xplane.pb) in this folder (big/profile/")
    assert str(several.value).endswith("give one of them")
    deep = tmp_path / "a" / "b" / "c" / "d" / "e"
    deep.mkdir(parents=True)
    shutil.copy(CPU / "step.xplane.pb", deep / "x.xplane.pb")  # five levels down: not looked for
    with pytest.raises(HloscopeError, match=r"a folder with no jax\.profiler profile") as none:
        read_measured_file(tmp_path)
    assert none.value.exit_code == EXIT_BAD_INPUT


def test_analyze_measured_takes_the_folder(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["analyze", str(V5E / "small" / "step.hlo.txt"), "--measured", str(V5E / "small" / "profile")])
    out = capsys.readouterr().out
    assert code == 0
    assert f"measured (xplane): {V5E / 'small' / 'profile' / 'step.xplane.pb'}" in out
