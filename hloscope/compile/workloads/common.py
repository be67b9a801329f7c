"""Pieces shared by the built-in workloads: remat policies, sharding, the optimizer.

Every workload is a full training step: forward, backward (``jax.grad``) and an
Adam update, on abstract inputs. ``POLICIES`` names how activations tagged with
``checkpoint_name`` are treated:

- ``offload``: saved to pinned host memory in the forward pass, fetched back for
  the backward pass (``save_and_offload_only_these_names``);
- ``remat``: nothing saved, everything recomputed (``nothing_saveable``);
- ``save``: the same tagged activations kept in device memory.

A workload whose tensors carry MaxText's per-tensor switches (``remat``, ``device``,
``offload``: MaxText ``remat_policy: custom``) builds its policy with
:func:`switched_policy` instead: ``offload`` is then MaxText's custom policy as
switched, ``remat`` its ``full`` policy, ``save`` the switched tensors all on device.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hloscope.request import DATA_AXIS, Policy

#: The policies' names, as ``--policy`` and ``--set policy=`` take them (:class:`Policy`).
POLICIES = tuple(p.value for p in Policy)

#: MaxText's per-tensor switches (``base.yml``, ``remat_policy: custom``).
SWITCHES = ("remat", "device", "offload")


def checkpoint_policy(policy: str, names: Sequence[str]) -> Any:
    import jax  # lazy: jax, only when tracing

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


def switched_policy(policy: str, switches: Mapping[str, str]) -> Any:
    """The checkpoint policy of ``policy`` over MaxText-style per-tensor ``switches``.

    ``offload``: the tensors switched ``offload`` go to pinned host memory and those switched
    ``device`` stay in HBM (``save_and_offload_only_these_names``, as MaxText builds its
    ``custom`` policy); ``remat``: nothing saved (MaxText ``full``: only the scanned layer's
    carry is kept); ``save``: every tensor not switched ``remat`` stays in HBM.
    """
    import jax  # lazy: jax, only when tracing

    cp = jax.checkpoint_policies
    offload = [n for n, s in switches.items() if s == "offload"]
    device = [n for n, s in switches.items() if s == "device"]
    if policy == "offload":
        return cp.save_and_offload_only_these_names(
            names_which_can_be_saved=device, names_which_can_be_offloaded=offload,
            offload_src="device", offload_dst="pinned_host")
    if policy == "remat":
        return cp.nothing_saveable
    if policy == "save":
        return cp.save_only_these_names(*device, *offload)
    raise ValueError(f"unknown policy {policy!r}")


def abstract(mesh: Any, shape: Sequence[int], dtype: Any, spec: Sequence[str | None]) -> Any:
    """A ShapeDtypeStruct sharded over ``mesh`` by ``spec`` (a PartitionSpec tuple)."""
    import jax  # lazy: jax, only when tracing
    from jax.sharding import NamedSharding, PartitionSpec  # lazy: jax, only when tracing

    return jax.ShapeDtypeStruct(tuple(shape), dtype, sharding=NamedSharding(mesh, PartitionSpec(*spec)))


def adam_step(loss_fn: Any, lr: float = 1e-4, b1: float = 0.9, b2: float = 0.95, eps: float = 1e-8) -> Any:
    """A training step ``(params, m, v, batch) -> (loss, params, m, v)`` with Adam."""
    import jax  # lazy: jax, only when tracing
    import jax.numpy as jnp  # lazy: jax, only when tracing

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
    import jax  # lazy: jax, only when tracing
    import jax.numpy as jnp  # lazy: jax, only when tracing

    def moment(p: Any) -> Any:
        return jax.ShapeDtypeStruct(p.shape, jnp.float32, sharding=p.sharding)

    return params, jax.tree.map(moment, params), jax.tree.map(moment, params)


def batch_sharded(mesh: Any, axis: Any) -> Any:
    """A function constraining an activation to be sharded on its batch (first) dim."""
    import jax  # lazy: jax, only when tracing
    from jax.sharding import NamedSharding, PartitionSpec  # lazy: jax, only when tracing

    def constrain(x: Any) -> Any:
        spec = PartitionSpec(axis, *([None] * (x.ndim - 1)))
        return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))

    return constrain


def rms_norm(x: Any, w: Any) -> Any:
    import jax.numpy as jnp  # lazy: jax, only when tracing

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
    import jax  # lazy: jax, only when tracing
    import jax.numpy as jnp  # lazy: jax, only when tracing

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


#: Attention implementations a preset can choose (``--set attention=...``).
ATTENTION = ("chunked", "flash")


def flash_attention(q: Any, k: Any, v: Any, mesh: Any, axis: Any) -> Any:
    """Causal attention by JAX's Pallas GPU flash-attention kernel (a Triton custom call).

    q [B,S,H,D], k [B,S,KV,D], v [B,S,KV,Dv] with B sharded over ``axis``. The kernel takes
    one head count and one head dim, so grouped K/V heads are repeated to H and a narrower V
    (MLA: 128 beside a 192-wide query) is zero-padded to D; the kernel pads D to a power of
    two itself. It runs per device under ``shard_map`` (XLA cannot partition a custom call),
    forward and backward as Triton kernels (``mha_forward``, ``mha_backward``).
    """
    import jax  # lazy: jax, only when tracing
    import jax.numpy as jnp  # lazy: jax, only when tracing
    from jax.experimental.pallas.ops.gpu import attention as pallas_attention  # lazy: jax, only when tracing
    from jax.sharding import PartitionSpec  # lazy: jax, only when tracing

    h, d = q.shape[2], q.shape[3]
    kv, dv = k.shape[2], v.shape[-1]
    if kv != h:
        k, v = jnp.repeat(k, h // kv, axis=2), jnp.repeat(v, h // kv, axis=2)
    if dv < d:
        v = jnp.pad(v, ((0, 0), (0, 0), (0, 0), (0, d - dv)))
    padded = 1 << (d - 1).bit_length()
    blocks, stages = pallas_attention.BlockSizes.get_default(), 2
    if padded > 128:  # the default 128x128 tiles of a 256-wide head overflow shared memory (measured)
        blocks = pallas_attention.BlockSizes(block_q=64, block_k=64, block_q_dkv=32, block_kv_dkv=32,
                                             block_q_dq=32, block_kv_dq=32)
        stages = 1

    def kernel(q: Any, k: Any, v: Any) -> Any:
        return pallas_attention.mha(q, k, v, None, sm_scale=1.0 / float(d) ** 0.5, causal=True,
                                    block_sizes=blocks, num_stages=stages)

    spec = PartitionSpec(axis)
    out = jax.shard_map(kernel, mesh=mesh, in_specs=(spec, spec, spec), out_specs=spec, check_vma=False)(q, k, v)
    return out[..., :dv]


def attention(kind: str, q: Any, k: Any, v: Any, chunk: int, mesh: Any, axis: Any) -> Any:
    """``kind`` ``flash``: :func:`flash_attention`; ``chunked``: :func:`causal_attention`."""
    if kind == "flash":
        return flash_attention(q, k, v, mesh, axis)
    return causal_attention(q, k, v, chunk)


def rope(x: Any, base: float = 10_000.0) -> Any:
    """Rotary position embedding of x [B,S,H,D] over its last dim (positions 0..S-1)."""
    import jax.numpy as jnp  # lazy: jax, only when tracing

    s, d = x.shape[1], x.shape[-1]
    inv = 1.0 / (base ** (jnp.arange(0, d, 2, dtype=jnp.float32) / d))
    ang = jnp.arange(s, dtype=jnp.float32)[:, None] * inv[None, :]  # [S, D/2]
    cos, sin = jnp.cos(ang)[None, :, None, :], jnp.sin(ang)[None, :, None, :]
    x1, x2 = jnp.split(x.astype(jnp.float32), 2, axis=-1)
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).astype(x.dtype)


def cross_entropy(logits: Any, labels: Any) -> Any:
    import jax  # lazy: jax, only when tracing
    import jax.numpy as jnp  # lazy: jax, only when tracing

    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))


def apply_layers(layer: Any, x: Any, stacked: Any, scan: bool) -> Any:
    """Run ``layer(x, p)`` over a stack of layer params, scanned or unrolled."""
    import jax  # lazy: jax, only when tracing

    if scan:
        x, _ = jax.lax.scan(lambda c, p: (layer(c, p), None), x, stacked)
        return x
    n = jax.tree.leaves(stacked)[0].shape[0]
    for i in range(n):
        x = layer(x, jax.tree.map(lambda a: a[i], stacked))
    return x


def parse_custom(text: str, names: Sequence[str]) -> dict[str, str]:
    """``custom`` (``name:choice,...``) as name -> switch; raises ValueError naming what is wrong."""
    out: dict[str, str] = {}
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        name, colon, choice = item.partition(":")
        if not colon or name not in names or choice not in SWITCHES:
            raise ValueError(f"custom wants NAME:CHOICE items with NAME one of {', '.join(names)} and CHOICE one of "
                             f"{', '.join(SWITCHES)}, got '{item}'")
        out[name] = choice
    return out


def custom_problem(text: str, names: Sequence[str]) -> str:
    """Why ``custom`` cannot be read ("" when it can)."""
    try:
        parse_custom(text, names)
    except ValueError as e:
        return str(e)
    return ""


def custom_policy(policy: str, names: Sequence[str], custom: str) -> Any:
    """:func:`checkpoint_policy` of ``policy`` over ``names``; with ``custom`` under ``offload``,
    :func:`switched_policy` over the names, each switched as ``custom`` says (unlisted: ``offload``).

    ``custom`` (``query_proj:offload,key_proj:device``) is how a workload with one policy over its
    tagged names takes MaxText-style per-name switches: what ``hloscope tune`` compiles."""
    if not custom or policy != "offload":
        return checkpoint_policy(policy, names)
    return switched_policy(policy, {n: "offload" for n in names} | parse_custom(custom, names))


def slice_axes(mesh: Any) -> tuple[str, ...]:
    """The mesh's axes inside one slice: all but ``data`` (across slices)."""
    return tuple(str(n) for n in mesh.axis_names if n != DATA_AXIS)


def fsdp_axis(mesh: Any) -> str:
    """The mesh axis the weights are split over: the first, or the first after ``data`` (across slices)."""
    names = tuple(mesh.axis_names)
    return str(names[1] if names[0] == DATA_AXIS and len(names) > 1 else names[0])


def batch_axes(mesh: Any, *inner: str) -> Any:
    """The mesh axes the batch is split over: ``inner`` (default the fsdp axis), after ``data`` when the
    mesh spans slices (one name alone, else a tuple, as a ``PartitionSpec`` entry takes them)."""
    axes = (*((DATA_AXIS,) if DATA_AXIS in mesh.axis_names else ()), *(inner or (fsdp_axis(mesh),)))
    return axes[0] if len(axes) == 1 else axes
