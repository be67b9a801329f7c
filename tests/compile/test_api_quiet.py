"""The README's Python API block, run as a plain script, writes nothing to stderr (issue 27).

On this machine (no GPU) jax's own import loads the CUDA plugin, whose library prints
absl's "Could not find cuda drivers on your machine" three times straight to file
descriptor 2 (two lines each: absl's pre-InitializeLog preamble and the message). The
README imports hloscope before jax, which makes that first import quiet.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from xla_versions import NEWEST

from hloscope.compile.seam.jaxcompat import jaxlib_at_least

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.xla


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("JAX_PLATFORMS", "JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "TF_CPP_MIN_LOG_LEVEL")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def test_readme_api_block_prints_nothing_on_stderr(tmp_path: Path) -> None:
    block = re.search(r"## Python API\n\n```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block is not None
    script = tmp_path / "readme_api.py"
    script.write_text(block.group(1))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=_env(), cwd=tmp_path,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "hidden_act" in proc.stdout
    assert proc.stderr == ""
    # Without hloscope first, the same first import prints the plugin's lines (what the test guards).
    bare = subprocess.run([sys.executable, "-c", "import jax"], capture_output=True, text=True, env=_env(),
                          timeout=300)
    # 3 lines from jaxlib 0.10.2's plugin; 4 from 0.9.2's (the oldest-JAX CI run, .ci/run); none from
    # 0.12.0.1's, which prints nothing on import (the Python 3.12 CI run)
    expected = 0 if jaxlib_at_least(0, 12) else 3 if NEWEST else 4
    assert bare.stderr.count("Could not find cuda drivers on your machine") == expected
    then = subprocess.run([sys.executable, "-c", "import hloscope, jax, jax.numpy; print(jax.__loader__.__class__.__name__)"],
                          capture_output=True, text=True, env=_env(), timeout=300)
    assert then.stderr == "" and then.stdout == "SourceFileLoader\n"  # jax's own loader is put back


AFTER_A_COMPUTATION = '''
import hloscope
import jax
import jax.numpy as jnp

print(float(jnp.ones(3).sum()))  # the user's own computation first, on the CPU
args = (jax.ShapeDtypeStruct((256, 256), jnp.float32),)
result, report = hloscope.compile_step(lambda x: jnp.tanh(x @ x), *args, target="h100-sxm", devices=1)
print(report.module.name, report.summary.step is not None)
'''


def test_compile_step_after_a_jax_computation_prints_nothing_and_compiles(tmp_path: Path) -> None:
    # issue 36 item 9: the computation made the CUDA plugin fail its version check (a 26-line traceback
    # on stderr), and compile_step then raised with a Python traceback before its one line
    script = tmp_path / "after.py"
    script.write_text(AFTER_A_COMPUTATION)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=_env(), cwd=tmp_path,
                          timeout=600)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-2000:]
    assert proc.stdout.splitlines()[0] == "3.0" and proc.stdout.splitlines()[1].endswith(" True")


def test_with_jax_imported_first_a_computation_does_not_stop_compile_step(tmp_path: Path) -> None:
    # jax's own import and computation come before hloscope can set anything: jax logs the plugin's
    # failed version check itself; compile_step then registers the plugin and compiles
    script = tmp_path / "jax_first.py"
    script.write_text("import jax\nimport jax.numpy as jnp\nprint(float(jnp.ones(3).sum()))\n"
                      + AFTER_A_COMPUTATION.replace("import hloscope\nimport jax\nimport jax.numpy as jnp\n", "import hloscope\n")
                      .replace("print(float(jnp.ones(3).sum()))  # the user's own computation first, on the CPU\n", ""))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=_env(), cwd=tmp_path,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[1].endswith(" True")
    assert proc.stderr.count("Traceback") == proc.stderr.count("Jax plugin configuration error") * 2  # jax's own only
