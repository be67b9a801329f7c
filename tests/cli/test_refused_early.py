"""Bad compile input is one line before JAX starts, for every command that compiles (issue 36, items 2, 3, 7).

Each case runs the CLI in a fresh interpreter, as a user's shell does, and checks the exit code, the one
line, and that ``jax`` was never imported (before: ``--devices 0`` and an ``--fn`` without a colon took
3-11 s to be refused, after JAX started; ``sweep --devices 0`` compiled 18 cells, each failing, then
exited 5; ``--devices 7`` on mlp ended in JAX's IndivisibleError, exit 4).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hloscope.cli.main import build_parser, main
from hloscope.compile.step.cache import ENV_OFF

ROOT = Path(__file__).resolve().parents[2]
_RUN = ("import json, sys; from hloscope.cli.main import main; rc = main(sys.argv[1:]); "
        "print(json.dumps([rc, 'jax' in sys.modules]))")
MLP_TAKES = "1, 2, 4, 8, 16, 32, 64, 128, 256, 512 devices"


def _cli(*argv: str, cwd: Path = ROOT) -> tuple[int, bool, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _RUN, *argv], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120, stdin=subprocess.DEVNULL)
    rc, jax_imported = json.loads(proc.stdout.strip().splitlines()[-1])
    return rc, jax_imported, proc.stderr


@pytest.mark.parametrize("argv, words", [
    (["compile", "--workload", "mlp", "--devices", "0"], "--devices must be at least 1, got 0"),
    (["compile", "--workload", "mlp", "--devices", "7"], f"--devices 7: workload mlp splits width=512 over the "
                                                         f"fsdp axis, so it takes {MLP_TAKES}"),
    (["compile", "--workload", "llama", "--devices", "12"], "--devices above 8 must be a multiple of 8 for h100-sxm"),
    (["compile", "--fn", "nocolon", "--args", "f32[8]"], "--fn wants package.module:function, got 'nocolon'"),
    (["compile", "--fn", "mod:step"], "--fn needs --args describing its abstract arguments"),
    (["compile", "--workload", "mlp", "--set", "layers=three"], "setting 'layers' wants a whole number, got 'three'"),
    (["check", "--workload", "mlp", "--devices", "7", "--no-config"], f"so it takes {MLP_TAKES}"),
    (["check", "--fn", "nocolon", "--args", "f32[8]", "--no-config"], "--fn wants package.module:function"),
    # issue 46 item 9: a module that is nowhere was exit 4 after 13 s (JAX started, then the import failed)
    (["compile", "--fn", "nomodule:f", "--args", "f32[8]"], "--fn nomodule:f: no module named 'nomodule' to "
                                                            "import (looked in the working folder "),
    (["check", "--fn", "nomodule.sub:f", "--args", "f32[8]", "--no-config"], "no module named 'nomodule' to import"),
    (["sweep", "mlp", "--devices", "0"], "--devices must be at least 1, got 0"),
    (["sweep", "mlp", "--devices", "7"], f"so it takes {MLP_TAKES}"),
    (["sweep", "deepseek", "--set", "ep=2", "--devices", "6"], "splits dim=256, q_lora_rank=128, kv_lora_rank=64 "
                                                               "over the fsdp axis; experts=8 over the expert axis"),
    (["tui", "--workload", "mlp", "--devices", "0"], "--devices must be at least 1, got 0"),
    (["tui", "--workload", "mlp", "--devices", "7"], f"so it takes {MLP_TAKES}"),
], ids=lambda x: " ".join(x) if isinstance(x, list) else None)
def test_refused_in_one_line_before_jax_starts(argv: list[str], words: str, tmp_path: Path) -> None:
    rc, jax_imported, err = _cli(*argv, "--target", "h100-sxm", cwd=tmp_path)
    assert rc == 2 and not jax_imported, (rc, err)
    assert err.count("\n") == 1 and err.startswith("hloscope: error: ") and words in err, err


@pytest.mark.parametrize("command", [["compile"], ["check", "--workload", "mlp"], ["sweep", "mlp"],
                                     ["tui", "--workload", "mlp"]], ids=lambda c: c[0])
def test_every_compiling_command_takes_no_cache(command: list[str]) -> None:
    # docs/cli.md: every compile goes through the compile cache, --no-cache bypasses it (before: compile,
    # check and tui answered "unrecognized arguments: --no-cache", exit 2)
    args = build_parser(command[0]).parse_args([*command, "--no-cache"])
    assert args.no_cache is True


def test_compile_no_cache_turns_the_cache_off_for_the_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    from hloscope.cli.compile import CompileCommand

    seen: list[str | None] = []
    monkeypatch.delenv(ENV_OFF, raising=False)
    monkeypatch.setattr(CompileCommand, "_start", lambda self, args: seen.append(os.environ.get(ENV_OFF)) or 0)
    assert main(["compile", "--workload", "mlp", "--no-cache"]) == 0
    assert main(["compile", "--workload", "mlp"]) == 0
    assert seen == ["1", None] and ENV_OFF not in os.environ  # and put back after


def test_the_api_names_its_own_argument() -> None:
    # issue 36 item 13: compile_step(devices=0) named the CLI flag --devices
    from hloscope.api import compile_step
    from hloscope.errors import HloscopeError

    with pytest.raises(HloscopeError) as e:
        compile_step(lambda x: x, target="h100-sxm", devices=0)
    assert str(e.value) == "compile_step's devices must be at least 1, got 0" and "--devices" not in str(e.value)
