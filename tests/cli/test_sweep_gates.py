"""Gates of ``hloscope sweep`` and ``hloscope compile`` that must not pass by accident.

- ``sweep --require-fit`` exits 1 and names every cell whose device allocation is over
  the target's HBM (a user target file with 1 MB of HBM: the mlp step's weights alone,
  2 x 4 x 512 x 1024 bf16 = 8 MiB before sharding, 1 MiB per device, plus optimizer
  state, do not fit).
- A sweep whose cells fail exits 5 and names each failed cell with its error: ``width=12``
  passes the early validation (a positive integer) but the weights' model dimension is
  sharded over 8 devices, which JAX refuses when the cell traces it.
- ``compile --fail-on exposed`` of a step with no host transfer (``--policy remat``) exits
  8 (nothing to check) unless ``--allow-empty``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.errors import EXIT_CHECK_FAILED, EXIT_COMPILE_FAILED, EXIT_NOTHING_TO_CHECK

pytestmark = pytest.mark.xla

CELLS = ("remat scheduler=lhs pipelined=on", "remat scheduler=lhs pipelined=off",
         "remat scheduler=none pipelined=on", "remat scheduler=none pipelined=off")


def test_sweep_require_fit_names_the_cells_over_hbm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a target with 1 MB of HBM (decimal), as docs/targets.md describes user target files
    target = tmp_path / "h100-1mb.toml"
    target.write_text('base = "h100-sxm"\nname = "h100-1mb"\ndevice_memory_size = 1000000\n')
    out = tmp_path / "sweep.json"
    # When the sweep is asked to require a fit
    code = main(["sweep", "mlp", "--policies", "remat", "--schedulers", "lhs,none", "--target", str(target),
                 "--jobs", "2", "--require-fit",
                 "--json", "-o", str(out)])
    # Then it exits 1, the report is still written, and every cell over HBM is named
    assert code == EXIT_CHECK_FAILED
    rows = json.loads(out.read_text())["rows"]
    assert [r["error"] for r in rows] == ["", "", "", ""]
    assert all(r["device_allocation_bytes"] > 1_000_000 and r["fits"] is False for r in rows)
    err = capsys.readouterr().err
    assert "4 cell(s) do not fit in HBM (--require-fit)" in err
    for cell in CELLS:
        assert f"policy={cell}" in err


def test_sweep_with_failed_cells_exits_5_naming_them(capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # A sweep whose every compile fails in XLA: a misspelt flag left in the environment, which XLA
    # refuses when the compile process starts (a --set that cannot split over the devices is refused
    # before anything compiles now: tests/cli/test_refused_early.py).
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_no_such_flag=1")
    code = main(["sweep", "mlp", "--policies", "remat", "--schedulers", "lhs,none", "--set", "layers=2",
                 "--devices", "8", "--jobs", "2", "--no-cache", "--csv"])
    assert code == EXIT_COMPILE_FAILED
    out = capsys.readouterr()
    assert "4 of 4 cell(s) failed" in out.err
    for cell in CELLS:
        assert f"policy={cell} (" in out.err
    # Each cell's one-line error is the compile process's end (XLA quits at its flag parse, exit 1).
    assert "the XLA compiler process exited with status 1" in out.err
    rows = out.out.splitlines()
    assert rows[0].split(",")[-3:] == ["fingerprint", "identical_to", "error"]
    assert len(rows) == 5 and all("exited with status 1" in r for r in rows[1:])


def test_compile_fail_on_with_no_transfer_is_nothing_to_check(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["compile", "--workload", "mlp", "--set", "layers=2", "--policy", "remat", "--fail-on", "exposed"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == EXIT_NOTHING_TO_CHECK
    assert "no host transfer" in capsys.readouterr().err
    # The folder was written: the gate judged a real compile, it did not fail before it.
    assert ":S(5)" not in (tmp_path / "a" / "optimized.hlo.txt").read_text()
    assert main([*argv, "--allow-empty", "--out", str(tmp_path / "b")]) == 0


def test_compile_require_fit_and_what_if_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given the 1 MB target: --require-fit exits 1 naming both sizes, and --what-if-memory 1
    # (decimal GB) compiles again with 1 GB, where the same step fits.
    target = tmp_path / "h100-1mb.toml"
    target.write_text('base = "h100-sxm"\nname = "h100-1mb"\ndevice_memory_size = 1000000\n')
    code = main(["compile", "--preset", "mlp-tiny", "--set", "layers=2", "--target", str(target), "--require-fit",
                 "--what-if-memory", "1", "--out", str(tmp_path / "a")])
    assert code == EXIT_CHECK_FAILED
    out = capsys.readouterr()
    assert "the step does not fit: device allocation" in out.err
    assert "> 976.6 KiB of HBM (--require-fit)" in out.err
    what_if = next(line for line in out.out.splitlines() if line.startswith("what if the GPU had 1 GB"))
    assert "instead of 976.6 KiB" in what_if
    assert "(fits)" in out.out
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["target"] == "h100-1mb"


@pytest.mark.parametrize("argv, code, words", [
    (["--policies", "custom", "--maxtext", "model_name=llama2-7b"], 2, "hloscope tune --maxtext"),
    (["--policies", "full,no such", "--maxtext", "model_name=llama2-7b"], 3, "'no such' is not a MaxText remat_policy"),
    (["--maxtext", "remat_policy=full"], 2, "the sweep sets remat_policy from --policies"),
    (["--batch-sizes", "2", "--maxtext", "per_device_batch_size=1"], 2, "per_device_batch_size from --batch-sizes"),
    (["llama", "--maxtext", "model_name=llama2-7b"], 2, "both name the step"),
    (["--set", "layers=2", "--maxtext", "model_name=llama2-7b"], 2, "MaxText's own KEY=VALUE settings"),
])
def test_sweep_maxtext_bad_input_is_one_line_before_compiling(argv: list[str], code: int, words: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from hloscope.cli.main import main

    assert main(["sweep", *argv]) == code
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err
