"""A small GQA transformer block's training step, for deviceless compiles of both of XLA's printings.

8 query heads and 2 KV heads of 128 (``jnp.repeat`` shares each KV head with 4 query heads), d 1024,
an MLP of 4096, 4 layers under ``jax.lax.scan``, each under ``jax.checkpoint`` offloading its Q, K and V
projections (``checkpoint_name`` query_proj / key_proj / value_proj) to ``pinned_host``; an SGD step.
``args(seq)``: the stacked weights and a batch of 2 x ``seq`` tokens (bf16). Issue 52's figures were
measured on ``args(2048)`` for tpu-v5e; tests/xla/test_two_printings_vs_xla.py compiles ``args(512)``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

B, D, HQ, HKV, HD, FF, L = 2, 1024, 8, 2, 128, 4096, 4
_POLICY = jax.checkpoint_policies.save_and_offload_only_these_names(
    names_which_can_be_saved=[], names_which_can_be_offloaded=["query_proj", "key_proj", "value_proj"],
    offload_src="device", offload_dst="pinned_host")


def _layer(x: Any, w: Any) -> tuple[Any, None]:
    wq, wk, wv, wo, w1, w2 = w
    q = checkpoint_name(jnp.einsum("bsd,dhk->bshk", x, wq), "query_proj")
    k = checkpoint_name(jnp.einsum("bsd,dhk->bshk", x, wk), "key_proj")
    v = checkpoint_name(jnp.einsum("bsd,dhk->bshk", x, wv), "value_proj")
    k = jnp.repeat(k, HQ // HKV, axis=2)
    v = jnp.repeat(v, HQ // HKV, axis=2)
    s = jnp.einsum("bqhk,bshk->bhqs", q, k) / jnp.sqrt(HD).astype(x.dtype)
    a = jnp.einsum("bhqs,bshk->bqhk", jax.nn.softmax(s, axis=-1), v)
    x = x + jnp.einsum("bqhk,hkd->bqd", a, wo)
    return x + jnp.tanh(x @ w1) @ w2, None


def _loss(params: Any, x: Any) -> Any:
    y, _ = jax.lax.scan(jax.checkpoint(_layer, policy=_POLICY, prevent_cse=False), x, params)
    return jnp.mean(y.astype(jnp.float32) ** 2)


def step(params: Any, x: Any) -> Any:
    loss, grads = jax.value_and_grad(_loss)(params, x)
    return loss, jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads)


def args(seq: int = 2048) -> tuple[Any, Any]:
    bf = jnp.bfloat16
    sd = jax.ShapeDtypeStruct
    return ((sd((L, D, HQ, HD), bf), sd((L, D, HKV, HD), bf), sd((L, D, HKV, HD), bf), sd((L, HQ, HD, D), bf),
             sd((L, D, FF), bf), sd((L, FF, D), bf)), sd((B, seq, D), bf))
