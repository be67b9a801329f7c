"""Bad input: one-line errors before the app starts (CLI), or the error screen for text that fails to parse."""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.errors import HloscopeError
from hloscope.tui.load import Source, check_source, load_source
from tests.conftest import FIXTURES


@pytest.mark.parametrize("make, expect", [
    (lambda d: d / "missing.hlo.txt", "no such file"),
    (lambda d: d, "no '*after_optimizations.txt'"),
    (lambda d: (d / "notes.txt").write_text("hello\n") and d / "notes.txt", "not HLO text"),
    (lambda d: (d / "empty.hlo.txt").write_text("") or d / "empty.hlo.txt", "empty file"),
    (lambda d: (d / "bin.hlo.txt").write_bytes(b"HloModule\0\1\2") and d / "bin.hlo.txt", "not HLO text"),
], ids=["missing file", "empty folder", "not HLO", "empty file", "binary"])
def test_bad_paths_are_one_line_errors_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    make, expect) -> None:  # type: ignore[no-untyped-def]
    path = make(tmp_path)
    assert main(["tui", str(path)]) == 2
    err = capsys.readouterr().err
    assert expect in err and err.count("\n") == 1 and err.startswith("hloscope: error: ")


def test_neither_path_nor_workload_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tui"]) == 2
    assert "give a PATH, --workload NAME or --maxtext ... (one of them)" in capsys.readouterr().err
    assert main(["tui", "some.hlo", "--maxtext", "model_name=llama2-7b"]) == 2  # two sources
    assert "(one of them)" in capsys.readouterr().err


def test_unknown_target_is_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tui", str(FIXTURES / "mlp_offload.hlo.txt"), "--target", "no-such-gpu"]) == 3


def test_a_truncated_module_passes_the_quick_check_and_fails_to_load_with_a_position(tmp_path: Path) -> None:
    text = (FIXTURES / "mlp_offload.hlo.txt").read_text()
    cut = tmp_path / "cut.hlo.txt"
    cut.write_text(text[: len(text) // 2])
    source = Source(str(cut))
    check_source(source)
    with pytest.raises(HloscopeError) as e:
        load_source(source)
    assert str(e.value).startswith(str(cut)) and "\n" not in str(e.value)


def test_a_dump_folder_and_an_artifact_style_folder_load(tmp_path: Path) -> None:
    loaded = load_source(Source(str(FIXTURES / "dump_mlp_offload")))
    assert loaded.report.verdicts and loaded.file.endswith("after_optimizations.txt")
    assert loaded.memory is None  # a bare dump has no compile figures


# HLO XLA's authors wrote without a header: hlo_parser_test's ParseMultiComputationsWithEntry ("ENTRY comp1 {").
HEADERLESS = FIXTURES / "xla-tests" / "hlo_parser" / "ParseMultiComputationsWithEntry.hlo"


def test_a_headerless_module_that_analyze_opens_the_tui_opens(capsys: pytest.CaptureFixture[str]) -> None:
    # Given a module with no HloModule line, which analyze reads (its module is named after the entry)
    assert b"HloModule" not in HEADERLESS.read_bytes()
    assert main(["analyze", str(HEADERLESS), "--json"]) == 0
    analyzed = capsys.readouterr().out
    # When the TUI checks and loads it
    source = Source(str(HEADERLESS))
    check_source(source)
    loaded = load_source(source)
    # Then it is the same module, through the same loader, with its text for line lookups
    assert loaded.report.module.name == "module_comp1" and '"module_comp1"' in analyzed
    root = loaded.report.module.entry.instructions[-1]
    assert loaded.report.module.entry_name == "comp1" and loaded.hlo_line(root.line).strip().startswith("ROOT root")
    assert loaded.file == str(HEADERLESS)


def test_the_tui_reads_each_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An artifact-style folder: the optimized module, the manifest, XLA's memory texts beside it.
    import shutil

    art = tmp_path / "art"
    shutil.copytree(FIXTURES / "memory" / "mlp_offload", art)
    reads: list[str] = []
    real_bytes, real_text = Path.read_bytes, Path.read_text

    def read_bytes(self: Path) -> bytes:
        reads.append(str(self))
        return real_bytes(self)

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        reads.append(str(self))
        return real_text(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    monkeypatch.setattr(Path, "read_text", read_text)
    loaded = load_source(Source(str(art)))
    assert loaded.report.verdicts and loaded.text
    repeated = sorted({r for r in reads if reads.count(r) > 1})
    assert repeated == [] and str(art / "optimized.hlo.txt") in reads


def _tui_without_terminal(stderr: int | None = None) -> tuple[int, str]:
    """``hloscope tui FIXTURE`` as a script or CI runs it: stdin /dev/null, no controlling terminal."""
    import os
    import subprocess
    import sys

    root = FIXTURES.parent
    proc = subprocess.run([sys.executable, "-m", "hloscope", "tui", str(FIXTURES / "mlp_offload.hlo.txt")],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=stderr if stderr is not None else subprocess.PIPE,
                          env={**os.environ, "PYTHONPATH": str(root)}, cwd=root, timeout=60, start_new_session=True)
    return proc.returncode, proc.stderr.decode() if proc.stderr is not None else ""


def test_with_no_terminal_the_tui_says_so_in_one_line_instead_of_waiting() -> None:
    # issue 36 item 4: with stdin from /dev/null and no terminal it waited until killed (the timeout fails it)
    code, err = _tui_without_terminal()
    assert code == 2 and err == ("hloscope: error: tui needs a terminal: standard error, where it draws, is not one "
                                 "(in a script or CI, hloscope analyze prints the same report)\n"), err


def test_drawing_on_a_terminal_with_no_keys_to_read_is_one_line_too() -> None:
    # stderr is a terminal (a pty), stdin /dev/null and no controlling terminal to read keys from
    import os

    main_fd, child_fd = os.openpty()
    try:
        code, _ = _tui_without_terminal(stderr=child_fd)
        os.close(child_fd)
        child_fd = -1
        err = b""
        while True:
            try:
                chunk = os.read(main_fd, 4096)
            except OSError:  # EIO: the child side is closed
                break
            if not chunk:
                break
            err += chunk
    finally:
        if child_fd >= 0:
            os.close(child_fd)
        os.close(main_fd)
    text = err.decode().replace("\r\n", "\n")
    assert code == 2 and text == ("hloscope: error: tui needs a terminal: standard input is not one and there is no "
                                  "terminal to read keys from (in a script or CI, hloscope analyze prints the same "
                                  "report)\n"), text
