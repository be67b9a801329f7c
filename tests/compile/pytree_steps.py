"""A training step as users write it: parameters, optimizer state and the batch as pytrees.

``hloscope compile --fn tests.compile.pytree_steps:train_step --args-from
tests.compile.pytree_steps:abstract_args`` compiles it with no wrapper (docs/ci.md).
The momentum lives in pinned host memory between steps (optimizer-state offloading as in
JAX's host-offloading guide): the step brings it to the device and puts it back.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec


def train_step(params: Any, opt_state: Any, batch: Any) -> Any:
    to_device, to_host = jax.memory.Space.Device, jax.memory.Space.Host

    def loss(p: Any) -> Any:
        h = jnp.tanh(batch["x"] @ p["layers"]["wq"])
        return jnp.mean((h @ p["layers"]["wo"] - batch["y"]) ** 2)

    grads = jax.grad(loss)(params)
    mu = jax.tree.map(lambda m, g: 0.9 * m + g, jax.device_put(opt_state["mu"], to_device), grads)
    params = jax.tree.map(lambda p, m: p - 0.01 * m, params, mu)
    return params, {"mu": jax.device_put(mu, to_host)}


def abstract_args(mesh: Any) -> tuple[Any, Any, Any]:
    """(params, opt_state, batch): the layer weights, their momentum in pinned host memory, one batch."""
    replicated = NamedSharding(mesh, PartitionSpec())
    host = NamedSharding(mesh, PartitionSpec(), memory_kind="pinned_host")

    def s(shape: tuple[int, ...], sharding: Any = replicated) -> Any:
        return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=sharding)

    params = {"layers": {"wq": s((512, 1024)), "wo": s((1024, 512))}}
    opt_state = {"mu": {"layers": {"wq": s((512, 1024), host), "wo": s((1024, 512), host)}}}
    batch = {"x": s((64, 512)), "y": s((64, 512))}
    return params, opt_state, batch
