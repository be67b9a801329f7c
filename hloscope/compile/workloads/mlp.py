"""``mlp``: a tiny scanned MLP whose hidden activation is tagged ``hidden``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hloscope.compile.workloads import common


@dataclass(frozen=True)
class MlpConfig:
    """batch: per-device batch; width / hidden: feature sizes; layers: scanned layers."""

    batch: int = 8
    width: int = 512
    hidden: int = 1024
    layers: int = 4
    policy: str = "offload"
    scan: bool = True

    @property
    def offloaded_names(self) -> tuple[str, ...]:
        return ("hidden",)

    def split_settings(self) -> dict[str, tuple[str, ...]]:
        """Mesh axis -> the settings whose size the step's arguments split over it (``build``'s
        shardings: w_in [L, W, H] and w_out [L, H, W] split W on ``fsdp``; the batch scales with it)."""
        return {"fsdp": ("width",)}


ROLES = {"hidden": "MLP hidden activation"}

PRESETS = {"mlp-tiny": MlpConfig()}


def build(cfg: MlpConfig, mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    import jax  # lazy: jax, only when tracing
    import jax.numpy as jnp  # lazy: jax, only when tracing
    from jax.ad_checkpoint import checkpoint_name  # lazy: jax, only when tracing

    axis = common.fsdp_axis(mesh)

    def layer(x: Any, p: Any) -> Any:
        h = checkpoint_name(jnp.tanh(x @ p["w_in"]), "hidden")
        return x + jnp.tanh(h @ p["w_out"])

    layer_fn = jax.checkpoint(layer, policy=common.checkpoint_policy(cfg.policy, cfg.offloaded_names))

    def loss(params: Any, batch: Any) -> Any:
        y = common.apply_layers(layer_fn, batch, params, cfg.scan)
        return jnp.mean(jnp.square(y.astype(jnp.float32)))

    L, W, H = cfg.layers, cfg.width, cfg.hidden
    params = {
        "w_in": common.abstract(mesh, (L, W, H), jnp.bfloat16, (None, axis, None)),
        "w_out": common.abstract(mesh, (L, H, W), jnp.bfloat16, (None, None, axis)),
    }
    batch = common.abstract(mesh, (cfg.batch * mesh.size, W), jnp.bfloat16, (common.batch_axes(mesh), None))
    return common.adam_step(loss), (*common.adam_args(mesh, params), batch)
