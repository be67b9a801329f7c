"""The step of a measured TPU run, as a ``--fn`` module: ``../shared/measured/tpu-v5e/offload_scan_8x128MiB``.

Its ``program.py`` (the ``big`` case, ``big:4:2048:2048:8192:8:offload``), run on one TPU v5e chip:
a jitted training step over ``jax.lax.scan`` of 8 MLP layers (tokens 8192 = batch 4 x seq 2048,
d 2048, ff 8192, bf16), each under ``jax.checkpoint(prevent_cse=False)`` with the tanh activation
``hidden`` (bf16[8192,8192], 128 MiB a layer) offloaded to ``pinned_host``. The chip's compile
reported temporaries 839,506,432 B and host temporaries 1,073,741,824 B.

``hloscope compile --fn tests.compile.tpu_steps:step --args-from tests.compile.tpu_steps:big_args
--target tpu-v5e --devices 1``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

BATCH, SEQ, D, FF, LAYERS = 4, 2048, 2048, 8192, 8

_OFFLOAD = jax.checkpoint_policies.save_and_offload_only_these_names(
    names_which_can_be_saved=[], names_which_can_be_offloaded=["hidden"],
    offload_src="device", offload_dst="pinned_host")


def _layer(x: Any, w: Any) -> tuple[Any, None]:
    w1, w2 = w
    h = jnp.tanh(x @ w1)
    h = checkpoint_name(h, "hidden")
    return x + h @ w2, None


def _loss(params: Any, x: Any) -> Any:
    body = jax.checkpoint(_layer, policy=_OFFLOAD, prevent_cse=False)
    y, _ = jax.lax.scan(body, x, params)
    return jnp.mean(y.astype(jnp.float32) ** 2)


def step(params: Any, x: Any) -> Any:
    """One training step: the loss and the parameters after an SGD update (as the program's ``step``)."""
    loss, grads = jax.value_and_grad(_loss)(params, x)
    return loss, jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads)


def big_args() -> tuple[Any, Any]:
    """(params, x) of the ``big`` case: (w1, w2) stacked over the layers, and the tokens."""
    w1 = jax.ShapeDtypeStruct((LAYERS, D, FF), jnp.bfloat16)
    w2 = jax.ShapeDtypeStruct((LAYERS, FF, D), jnp.bfloat16)
    return (w1, w2), jax.ShapeDtypeStruct((BATCH * SEQ, D), jnp.bfloat16)


def small_step(params: Any, x: Any) -> Any:
    """The same step at a small size (:func:`small_args`), for compiles that test the slice and options."""
    return step(params, x)


def small_args() -> tuple[Any, Any]:
    """(params, x): 2 layers of d 256, ff 512, 512 tokens."""
    return ((jax.ShapeDtypeStruct((2, 256, 512), jnp.bfloat16), jax.ShapeDtypeStruct((2, 512, 256), jnp.bfloat16)),
            jax.ShapeDtypeStruct((512, 256), jnp.bfloat16))


def _outer(x: Any, ws: Any) -> tuple[Any, None]:
    body = jax.checkpoint(_layer_one, policy=_OFFLOAD, prevent_cse=False)
    y, _ = jax.lax.scan(body, x, ws)
    return y, None


def _layer_one(x: Any, w: Any) -> tuple[Any, None]:
    h = checkpoint_name(jnp.tanh(x @ w), "hidden")
    return x + h, None


def nested_step(ws: Any, x: Any) -> Any:
    """An offloaded name in a scan inside a checkpointed scan (the shape of AI-Hypercomputer/maxtext#4995):
    TPU XLA fails it, "async-start expects the shape of operand 0 ... S(5)" (libtpu 0.0.42)."""

    def loss(ws: Any) -> Any:
        y, _ = jax.lax.scan(jax.checkpoint(_outer, policy=_OFFLOAD, prevent_cse=False), x, ws)
        return jnp.mean(y ** 2)

    return jax.grad(loss)(ws)


def nested_args() -> tuple[Any, Any]:
    """(ws, x): 2 x 2 layers of 256 x 256, 128 tokens (f32)."""
    return jax.ShapeDtypeStruct((2, 2, 256, 256), jnp.float32), jax.ShapeDtypeStruct((128, 256), jnp.float32)
