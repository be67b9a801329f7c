"""Inputs are found once (issue 52, STYLE.md point 17): ``analyze`` and ``check`` of an XLA dump
folder list it once and open each of its files at most once, whoever reads them (the step pick,
the platform read, the module before optimizations).

An audit hook (``sys.addaudithook``: the ``os.listdir``/``os.scandir`` and ``open`` events) counts
what the CLI's ``main`` does to the folder, in a child process (a hook cannot be removed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[2]

_CHILD = r"""
import collections, contextlib, io, json, os, sys
folder = os.path.abspath(sys.argv[2])
seen = collections.Counter()

def hook(event, args):
    if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes, os.PathLike)):
        p = os.path.abspath(os.fsdecode(args[0]))
        if p == folder or p.startswith(folder + os.sep):
            seen[event.removeprefix("os.") + " " + os.path.relpath(p, folder)] += 1

from hloscope.cli.main import main
sys.addaudithook(hook)
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main([sys.argv[1], folder])
print(json.dumps({"code": code, "seen": seen}))
"""

#: Dump folders as XLA wrote them: (folder, the step's module file, the files read beside it).
FOLDERS = {
    # a v5e run: three modules (the step ranked first by its S(5) transfers), target_arguments.txt
    "tpu-v5e-three-modules": ("tpu_v5e/dump_offload_scan", "module_0044.jit_step.cl_933746096.after_optimizations.txt"),
    # MaxText's 405B step on v5p: one module, its target_arguments.txt and memory report
    "tpu-maxtext-405b": ("tpu_maxtext405b", "module_0000.jit_train_step.cl_1004524046.after_optimizations.txt"),
    # an H100 compile's dump: one module and its memory report
    "gpu-mlp-offload": ("dump_mlp_offload", "module_6045.jit_step.sm_9.0a_gpu_after_optimizations.txt"),
}


def audit(command: str, folder: Path) -> tuple[int, dict[str, int]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("HLOSCOPE_DEBUG", None)
    done = subprocess.run([sys.executable, "-c", _CHILD, command, str(folder)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.splitlines()[-1])
    return out["code"], out["seen"]


@pytest.mark.parametrize("command", ["analyze", "check"])
@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_a_dump_folder_is_listed_once_and_each_file_opened_once(command: str, name: str) -> None:
    # Given: an XLA dump folder
    sub, step = FOLDERS[name]
    folder = FIXTURES / sub
    # When: the CLI analyzes or checks it
    code, seen = audit(command, folder)
    # Then: it reported (0 or a check's failure), listed the folder once, never opened it as a file,
    # and opened the step's module once and no file twice
    assert code in (0, 1), seen
    listings = {k: n for k, n in seen.items() if k.startswith(("listdir", "scandir"))}
    assert listings in ({"scandir .": 1}, {"listdir .": 1}), seen
    assert "open ." not in seen, seen
    assert seen.get(f"open {step}") == 1, seen
    assert all(n == 1 for n in seen.values()), seen
    # (the platform read is among them: a TPU dump's target_arguments.txt, read once)
    if name.startswith("tpu"):
        assert any(k.endswith(".target_arguments.txt") for k in seen), seen


def test_check_reads_the_module_before_optimizations_from_the_same_listing() -> None:
    # Given: the v5e dump, whose step has a *before_optimizations.txt beside it
    folder = FIXTURES / "tpu_v5e/dump_offload_scan"
    # When: check reads it (its rules compare the module before optimizations)
    _, seen = audit("check", folder)
    # Then: that file was opened once, with no second listing
    assert seen.get("open module_0044.jit_step.cl_933746096.before_optimizations.txt") == 1, seen
    assert sum(n for k, n in seen.items() if not k.startswith("open")) == 1, seen
