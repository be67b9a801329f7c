"""Pieces shared by the built-in workloads: remat policies, sharding, the optimizer.

Every workload is a full training step: forward, backward (``jax.grad``) and an
Adam update, on abstract inputs. ``POLICIES`` names how activations tagged with
``checkpoint_name`` are treated:

- ``offload``: saved to pinned host memory in the forward pass, fetched back for
  the backward pass (``save_and_offload_only_these_names``);
- ``remat``: nothing saved, everything recomputed (``nothing_saveable``);
- ``save``: the same tagged activations kept in device memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

POLICIES = ("offload", "remat", "save")


def checkpoint_policy(policy: str, names: Sequence[str]) -> Any:
    import jax

    cp = jax.checkpoint_policies
    if policy == "offload":
        return cp.save_and_offload_only_these_names(
            names_which_can_be_saved=[], names_which_can_be_offloaded=list(names),
            offload_src="device", offload_dst="pinned_host",
        )
    if policy == "remat":
        return cp.nothing_saveable
    if policy == "save":
        return cp.save_only_these_names(*names)
    raise ValueError(f"unknown policy {policy!r}")


def abstract(mesh: Any, shape: Sequence[int], dtype: Any, spec: Sequence[str | None]) -> Any:
    """A ShapeDtypeStruct sharded over ``mesh`` by ``spec`` (a PartitionSpec tuple)."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    return jax.ShapeDtypeStruct(tuple(shape), dtype, sharding=NamedSharding(mesh, PartitionSpec(*spec)))


def adam_step(loss_fn: Any, lr: float = 1e-4, b1: float = 0.9, b2: float = 0.95, eps: float = 1e-8) -> Any:
    """A training step ``(params, m, v, batch) -> (loss, params, m, v)`` with Adam."""
    import jax
    import jax.numpy as jnp

    def step(params: Any, m: Any, v: Any, batch: Any) -> Any:
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        m = jax.tree.map(lambda a, g: b1 * a + (1 - b1) * g.astype(jnp.float32), m, grads)
        v = jax.tree.map(lambda a, g: b2 * a + (1 - b2) * jnp.square(g.astype(jnp.float32)), v, grads)
        params = jax.tree.map(
            lambda p, a, b: (p.astype(jnp.float32) - lr * a / (jnp.sqrt(b) + eps)).astype(p.dtype),
            params, m, v)
        return loss, params, m, v

    return step


def adam_args(mesh: Any, params: Any) -> tuple[Any, Any, Any]:
    """(params, m, v) abstract trees; moments in f32 with the params' sharding."""
    import jax
    import jax.numpy as jnp

    def moment(p: Any) -> Any:
        return jax.ShapeDtypeStruct(p.shape, jnp.float32, sharding=p.sharding)

    return params, jax.tree.map(moment, params), jax.tree.map(moment, params)


def batch_sharded(mesh: Any, axis: str) -> Any:
    """A function constraining an activation to be sharded on its batch (first) dim."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    def constrain(x: Any) -> Any:
        spec = PartitionSpec(axis, *([None] * (x.ndim - 1)))
        return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))

    return constrain


def rms_norm(x: Any, w: Any) -> Any:
    import jax.numpy as jnp

    xf = x.astype(jnp.float32)
    y = xf * jnp.reciprocal(jnp.sqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + 1e-6))
    return (y * w.astype(jnp.float32)).astype(x.dtype)


def causal_attention(q: Any, k: Any, v: Any, chunk: int = 0) -> Any:
    """q [B,S,H,D], k/v [B,S,KV,D] with H a multiple of KV (grouped-query).

    With ``chunk`` > 0 the queries are processed ``chunk`` at a time and each
    chunk's scores are recomputed in the backward pass (``jax.checkpoint``), the
    memory behaviour of a flash-attention kernel written in plain JAX: the
    [S, S] score matrix is never held whole.
    """
    import jax
    import jax.numpy as jnp

    b, s, h, d = q.shape
    kv = k.shape[2]

    def block(qc: Any, offset: Any) -> Any:
        c = qc.shape[1]
        qg = qc.reshape(b, c, kv, h // kv, d)
        scores = jnp.einsum("bqkgd,bskd->bkgqs", qg, k).astype(jnp.float32) / jnp.sqrt(float(d))
        rows = offset + jnp.arange(c)[:, None]
        mask = rows >= jnp.arange(s)[None, :]
        scores = jnp.where(mask, scores, -1e30)
        probs = jax.nn.softmax(scores, axis=-1).astype(v.dtype)
        out = jnp.einsum("bkgqs,bskd->bqkgd", probs, v)
        return out.reshape(b, c, h, v.shape[-1])

    if chunk <= 0 or chunk >= s or s % chunk:
        return block(q, 0)
    n = s // chunk
    blk = jax.checkpoint(block, policy=jax.checkpoint_policies.nothing_saveable)
    qs = q.reshape(b, n, chunk, h, d).swapaxes(0, 1)
    outs = jax.lax.map(lambda args: blk(args[0], args[1] * chunk), (qs, jnp.arange(n)))
    return outs.swapaxes(0, 1).reshape(b, s, h, v.shape[-1])


def cross_entropy(logits: Any, labels: Any) -> Any:
    import jax
    import jax.numpy as jnp

    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))


def apply_layers(layer: Any, x: Any, stacked: Any, scan: bool) -> Any:
    """Run ``layer(x, p)`` over a stack of layer params, scanned or unrolled."""
    import jax

    if scan:
        x, _ = jax.lax.scan(lambda c, p: (layer(c, p), None), x, stacked)
        return x
    n = jax.tree.leaves(stacked)[0].shape[0]
    for i in range(n):
        x = layer(x, jax.tree.map(lambda a: a[i], stacked))
    return x
