"""Install weight: analysis needs no JAX; compiling without the compile extra says what to install."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import FIXTURES


def test_compile_without_jax_says_what_to_install(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Given a Python where 'jax' cannot be imported (a package first on the path that refuses
    # to import, as for a plain `pip install hloscope`; compiles run in a child process, which
    # inherits the path), analyze works and compile fails in one line naming the extra (exit 7).
    shadow = tmp_path / "shadow" / "jax"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'jax'\", name='jax')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(shadow.parent), os.environ.get("PYTHONPATH")])))
    hlo = str(FIXTURES / "mlp_offload.hlo.txt")
    ok = subprocess.run([sys.executable, "-m", "hloscope.cli", "analyze", hlo, "-o", os.devnull], env=env,
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    proc = subprocess.run([sys.executable, "-m", "hloscope.cli", "compile", "--workload", "mlp", "--out",
                           str(tmp_path / "a")], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 7, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("hloscope: error: cannot import jax")
    assert "pip install 'hloscope[compile]'" in proc.stderr
    assert not (tmp_path / "a").exists()
