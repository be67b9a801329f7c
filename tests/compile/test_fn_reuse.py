"""Rerunning an unchanged ``--fn`` compile reads its artifact folder back; an edit compiles again
without ``--force`` (issue 36, item 8: every rerun of the user's own step needed ``--force``, while
built-in workloads were reused)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.xla

ROOT = Path(__file__).resolve().parents[2]
STEP = "import jax.numpy as jnp\n\n\ndef step(w, x):\n    return jnp.tanh(x @ w) * SCALE\n"


def _compile(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HLOSCOPE_CACHE_DIR": str(cwd / "cache")}
    return subprocess.run([sys.executable, "-m", "hloscope", "compile", "--fn", "mystep:step", "--args",
                           "f32[256,256]; f32[64,256]", "--devices", "1", "--out", "out"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_an_unchanged_fn_is_read_back_and_an_edited_one_compiles_again(tmp_path: Path) -> None:
    (tmp_path / "mystep.py").write_text(STEP.replace("SCALE", "2.0"))
    first = _compile(tmp_path)
    assert first.returncode == 0, first.stderr
    assert "constant(2)" in (tmp_path / "out" / "unoptimized.hlo.txt").read_text()
    # When nothing changed, Then the folder is read back (no compile)
    again = _compile(tmp_path)
    assert again.returncode == 0 and "holds this compile" in again.stderr, again.stderr
    assert "(reused)" in again.stdout
    # When the step's module changes, Then it compiles again and replaces its own folder, no --force
    (tmp_path / "mystep.py").write_text(STEP.replace("SCALE", "3.0"))
    edited = _compile(tmp_path)
    assert edited.returncode == 0, edited.stderr
    assert "holds this request compiled from other inputs" in edited.stderr and "(reused)" not in edited.stdout
    assert "constant(3)" in (tmp_path / "out" / "unoptimized.hlo.txt").read_text()
    # A file beside the module (which it may import) is part of what is fingerprinted too
    (tmp_path / "helpers.py").write_text("FACTOR = 1\n")
    assert "holds this request compiled from other inputs" in _compile(tmp_path).stderr


def test_another_request_in_the_folder_still_needs_force(tmp_path: Path) -> None:
    (tmp_path / "mystep.py").write_text(STEP.replace("SCALE", "2.0"))
    assert _compile(tmp_path).returncode == 0
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HLOSCOPE_CACHE_DIR": str(tmp_path / "cache")}
    other = subprocess.run([sys.executable, "-m", "hloscope", "compile", "--fn", "mystep:step", "--args",
                            "f32[128,128]; f32[64,128]", "--devices", "1", "--out", "out"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert other.returncode == 2 and "an earlier hloscope compile is there; --force replaces it" in other.stderr
