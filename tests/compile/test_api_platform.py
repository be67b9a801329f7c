"""compile_step from a plain user script: imports jax first, unsharded args, never a CPU report."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from hloscope.compile.seam.jaxcompat import jaxlib_at_least

SCRIPT = textwrap.dedent('''
    import jax
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name
    import hloscope

    def layer(x, w):
        h = checkpoint_name(jnp.tanh(x @ w), "hidden_act")
        return jnp.sum(jnp.tanh(h @ w.T))

    policy = jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=[], names_which_can_be_offloaded=["hidden_act"],
        offload_src="device", offload_dst="pinned_host")

    def step(x, w):
        return jax.grad(jax.checkpoint(layer, policy=policy), argnums=1)(x, w)

    x = jax.ShapeDtypeStruct((256, 512), jnp.bfloat16)
    w = jax.ShapeDtypeStruct((512, 1024), jnp.bfloat16)
    result, report = hloscope.compile_step(step, x, w, target="h100-sxm", devices=1)
    d = report.to_dict()
    print("TARGET", d["target"], type(result.compiled).__name__)
    print("TRANSFERS", [(t["direction"], t["bytes"], t["checkpoint_name"], t["source"].rsplit("/", 1)[-1])
                        for t in d["transfers"]])
    print("GPU", '"operation_queue_id"' in result.optimized_hlo)
    print(report)
    cpu = jax.jit(step).lower(jax.numpy.zeros((256, 512), jnp.bfloat16), jax.numpy.zeros((512, 1024), jnp.bfloat16))
    try:
        hloscope.analyze(cpu.compile())
    except hloscope.HloscopeError as e:
        print("CPU REFUSED", e)
''')


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_PLATFORMS", "JAX_SKIP_CUDA_CONSTRAINTS_CHECK")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return env


def test_a_user_script_that_imports_jax_first_gets_a_gpu_report(tmp_path: Path) -> None:
    script = tmp_path / "user_step.py"
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=_clean_env(),
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "TARGET h100-sxm Compiled" in out
    assert "GPU True" in out
    # h = tanh(x @ w) is bf16[256,1024] = 512 KiB, out to host and back, named and placed on line 8.
    assert "('to_host', 524288, 'hidden_act', 'user_step.py:8')" in out
    assert "('to_device', 524288, 'hidden_act', 'user_step.py:8')" in out
    assert "hidden_act" in out.split("TRANSFERS", 1)[1]  # the table shows the name too
    assert "CPU REFUSED" in out and "not a GPU" in out
    # The CUDA plugin's no-GPU chatter from hloscope's own calls stays off stderr (the user's own
    # `import jax` may still print it once, before hloscope runs).
    bare = subprocess.run([sys.executable, "-c", "import jax"], capture_output=True, text=True, env=_clean_env(),
                          timeout=300)
    assert proc.stderr.count("cudart_stub") <= bare.stderr.count("cudart_stub"), proc.stderr


QUIET = textwrap.dedent('''
    import hloscope.compile.seam.environment
    hloscope.compile.seam.environment.prepare()  # before the script's first jax import (docs/compile.md)
    import jax
    import jax.numpy as jnp
    import hloscope

    args = (jax.ShapeDtypeStruct((1024, 1024), jnp.bfloat16), jax.ShapeDtypeStruct((256, 1024), jnp.bfloat16))
    for target in ("gb200", "h100-sxm"):
        result, report = hloscope.compile_step(lambda w, x: jnp.sum(jnp.tanh(x @ w)), *args, target=target)
    print(float(jnp.ones(3).sum()))  # the user's own computation, on the CPU
''')


def test_no_plugin_chatter_from_compile_step_or_the_users_own_computation(tmp_path: Path) -> None:
    # Issue 21: without a GPU the CUDA plugin prints absl's 'Could not find cuda drivers' when it
    # loads and, for a jax computation in a process that did not pick the CPU, a 26-line 'Jax
    # plugin configuration error' traceback. With prepare() first, stderr stays empty.
    script = tmp_path / "quiet.py"
    script.write_text(QUIET)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=_clean_env(),
                          timeout=600)
    assert proc.returncode == 0 and proc.stdout == "3.0\n"
    assert proc.stderr == ""
    # What the same computation prints without it (the user's code, documented in docs/compile.md).
    bare = subprocess.run([sys.executable, "-c", "import jax.numpy as jnp; print(float(jnp.ones(3).sum()))"],
                          capture_output=True, text=True, env=_clean_env(), timeout=300)
    assert "Jax plugin configuration error" in bare.stderr
    # jaxlib 0.10.2's plugin fails its check on the missing driver; 0.12.0.1's (with no cuDNN wheel, as
    # jax[cuda12-local] installs it) on cuDNN first: "RuntimeError: Unable to load cuDNN. Is it installed?"
    if not jaxlib_at_least(0, 12):
        assert "Could not find cuda drivers" in bare.stderr


def test_cli_compile_in_process_prints_no_plugin_chatter(tmp_path: Path) -> None:
    env = _clean_env() | {"HLOSCOPE_IN_PROCESS": "1"}
    proc = subprocess.run([sys.executable, "-m", "hloscope", "compile", "--workload", "mlp", "--set", "layers=2",
                           "--out", str(tmp_path / "a")], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0 and proc.stderr == ""
