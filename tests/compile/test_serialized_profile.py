"""The serialized profile on the step whose host copies drain one after another, compiled here.

The JAX host-offloading guide's optimizer-state offload (Adam moments in pinned host memory),
as ``fixtures/generate_streams.py`` compiles it (h100-sxm, 8 GPUs). Its eight D->H write-backs
drain in series (``tests/unit/test_drain.py``). Given to XLA as its profile with those copies
priced as they run behind each other, the second compile must be scheduled with it (XLA's log
names the file) and must still hold every write-back; what the schedule becomes is printed by
``compile --what-if-profile`` and measured in docs/simulation.md, not asserted here.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from xla_versions import MEMORY_KINDS

pytestmark = pytest.mark.xla


def _step_and_args() -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from hloscope.compile.deviceless import make_mesh

    n = 4
    mesh = make_mesh("h100-sxm", 8)
    dev = NamedSharding(mesh, P("fsdp"), memory_kind="device")
    host = NamedSharding(mesh, P("fsdp"), memory_kind="pinned_host")

    def loss(ws: list[Any], x: Any) -> Any:
        for w in ws:
            x = jnp.tanh(x @ w)
        return jnp.mean(x * x)

    def step(ws: list[Any], ms: list[Any], vs: list[Any], x: Any) -> Any:
        g = jax.grad(loss)(ws, x)
        ms = [jax.device_put(m, dev) for m in ms]
        vs = [jax.device_put(v, dev) for v in vs]
        ms = [0.9 * m + 0.1 * gi for m, gi in zip(ms, g, strict=True)]
        vs = [0.999 * v + 0.001 * gi * gi for v, gi in zip(vs, g, strict=True)]
        ws = [w - 1e-3 * m / (jnp.sqrt(v) + 1e-8) for w, m, v in zip(ws, ms, vs, strict=True)]
        return ws, [jax.device_put(m, host) for m in ms], [jax.device_put(v, host) for v in vs]

    def weights(s: Any) -> list[Any]:
        return [jax.ShapeDtypeStruct((4096, 4096), jnp.float32, sharding=s) for _ in range(n)]

    x = jax.ShapeDtypeStruct((1024, 4096), jnp.float32, sharding=NamedSharding(mesh, P()))
    kw = {"mesh": mesh, "target": "h100-sxm", "out_shardings": ([dev] * n, [host] * n, [host] * n),
          "donate_argnums": (0, 1, 2)}
    return step, (weights(dev), weights(host), weights(host), x), kw


@MEMORY_KINDS
def test_xla_schedules_with_the_serialized_profile(tmp_path: Path) -> None:
    import hloscope
    from hloscope.render.pgle import write_profile

    step, args, kw = _step_and_args()
    _, before = hloscope.compile_step(step, *args, **kw)
    assert before.drains, "the write-backs drain in series in this compile too"
    buf = io.StringIO()
    write_profile(before, buf, serialized=True)
    path = tmp_path / "model-profile-serialized.pbtxt"
    path.write_text(buf.getvalue(), encoding="utf-8")
    _, after = hloscope.compile_step(step, *args, flags={"xla_gpu_pgle_profile_file_or_directory_path": str(path)},
                                     **kw)
    assert after.xla is not None and after.xla.profile is not None and Path(after.xla.profile) == path
    written = {s for d in before.drains if d.direction.value == "to_host" for s in d.starts}
    assert sum(t.direction.value == "to_host" for t in after.transfers) == len(written) == 8
