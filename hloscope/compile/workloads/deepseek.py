"""``deepseek``: a DeepSeek-V3-style MoE decoder with multi-head latent attention (MLA),
written after MaxText's ``deepseek`` decoder block (``layers/attention_mla.py``, ``layers/moe.py``).

- **MLA**: ``mla_q`` is the low-rank query ``q_norm(wq_a(x))`` [B,S,q_lora_rank], ``mla_kv``
  the normalized latent ``kv_norm(wkv_a(x)[..., :kv_lora_rank])`` [B,S,kv_lora_rank], as
  MaxText names them; rotary embedding on the 64 rope dims of q and the shared k; the
  attention output projection is ``out_proj``.
- **MoE** (the layers after ``dense_layers``): sigmoid scores, top-k chosen on scores plus a
  per-expert bias, weights taken from the scores without bias, normalized and scaled by
  ``routed_scaling`` (MaxText ``routed_scaling_factor``); dropless (every token reaches its
  ``top_k`` experts, no capacity). The token copies are sorted by expert (``argsort``) per
  sequence, pass the grouped matmuls, and are unsorted and combined. The grouped matmul's
  outputs are ``moe_mlpwi_0`` / ``moe_mlpwi_1`` [B*S*K, moe_ffn] and ``moe_mlpwo``
  [B*S*K, dim]. ``moe_impl`` chooses how the grouped matmul is written:

  - ``sorted`` (default): one batched matmul over ``experts`` equal row blocks of the
    sorted copies ([B, E, S*K/E, D] x [E, D, F]). A grouped GEMM over the real group sizes
    computes sum_g m_g * D * F = S*K * D * F per sequence whatever the sizes, so this has the
    FLOPs and bytes of MaxText's dropless grouped matmul (without per-group tile padding);
    rows go to experts by sorted position, which is the true routing when the load is balanced.
  - ``ragged``: ``jax.lax.ragged_dot`` with the real group sizes, per device under
    ``shard_map`` (MaxText's GPU path).
    XLA (jaxlib 0.10.2) expands it (RaggedDotRewriter) into a masked copy of the input per
    group and one dense matmul over all groups: ``experts`` x the FLOPs and an
    [M, experts, D] temporary; use it for small cells.
- **Remat**: the per-tensor switches (``mla_q=offload`` ...; values ``remat``, ``device``,
  ``offload``) are MaxText's ``remat_policy: custom``; ``policy=offload`` uses them as
  switched, ``policy=remat`` is MaxText's ``full``, ``policy=save`` keeps every switched
  tensor in HBM.
- ``weight_dtype`` is the parameters' dtype (MaxText's DeepSeek default ``float32``); the
  layers compute in bf16.
- ``ep`` > 1: expert parallelism over a second mesh axis ``expert`` of that size; each
  device holds ``experts/ep`` experts and the sorted token copies travel by ``all_to_all``.
- ``attention``: ``chunked`` (XLA attention, ``attention_chunk`` queries at a time) or
  ``flash`` (the Pallas GPU flash-attention kernel, a Triton custom call).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from hloscope.compile.workloads import common

#: The tensors with a remat switch, in layer order.
SWITCHED = ("mla_q", "mla_kv", "out_proj", "mlpwi_0", "mlpwi_1", "mlpwo", "moe_mlpwi_0", "moe_mlpwi_1",
            "moe_mlpwo")

MOE_IMPLS = ("sorted", "ragged")


@dataclass(frozen=True)
class DeepSeekConfig:
    """Shapes of the model and step. ``batch`` is per device."""

    layers: int = 3
    dense_layers: int = 1
    dim: int = 256
    heads: int = 4
    q_lora_rank: int = 128
    kv_lora_rank: int = 64
    qk_nope_dim: int = 32
    qk_rope_dim: int = 16
    v_head_dim: int = 32
    ffn: int = 512
    moe_ffn: int = 128
    experts: int = 8
    shared_experts: int = 1
    top_k: int = 2
    routed_scaling: float = 2.5
    moe_impl: str = "sorted"
    ep: int = 1
    vocab: int = 1024
    batch: int = 1
    seq: int = 128
    policy: str = "offload"
    scan: bool = True
    attention: str = "chunked"
    attention_chunk: int = 0  # >0: query-chunked attention with recomputed scores (flash-like memory)
    weight_dtype: str = "bfloat16"
    mla_q: str = "offload"
    mla_kv: str = "offload"
    out_proj: str = "remat"
    mlpwi_0: str = "remat"
    mlpwi_1: str = "remat"
    mlpwo: str = "remat"
    moe_mlpwi_0: str = "offload"
    moe_mlpwi_1: str = "offload"
    moe_mlpwo: str = "remat"

    @property
    def switches(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in SWITCHED}

    @property
    def offloaded_names(self) -> tuple[str, ...]:
        return tuple(n for n, s in self.switches.items() if s == "offload")

    def problem(self) -> str:
        """Why this config cannot build a step ("" when it can)."""
        for name, value in self.switches.items():
            if value not in common.SWITCHES:
                return f"{name}={value} must be one of {', '.join(common.SWITCHES)}"
        if self.moe_impl not in MOE_IMPLS:
            return f"moe_impl={self.moe_impl} must be one of {', '.join(MOE_IMPLS)}"
        if self.attention not in common.ATTENTION:
            return f"attention={self.attention} must be one of {', '.join(common.ATTENTION)}"
        if self.weight_dtype not in ("bfloat16", "float32"):
            return f"weight_dtype={self.weight_dtype} must be bfloat16 or float32"
        if self.layers > self.dense_layers and (self.seq * self.top_k) % self.experts:
            return (f"seq*top_k={self.seq * self.top_k} must be a multiple of experts={self.experts} "
                    "(the sorted token copies split into equal expert blocks)")
        if self.experts % self.ep:
            return f"experts={self.experts} must be a multiple of ep={self.ep}"
        if self.ep > 1 and self.moe_impl == "ragged":
            return "moe_impl=ragged has no expert-parallel form (ep=1 only)"
        return ""

    def model_flops_per_device(self) -> float:
        """Model FLOPs of one training step on one device, counted as MaxText's
        ``calculate_tflops_training_per_device`` counts a ``deepseek`` block with MLA: weight
        matmuls x3 (forward + backward), causal attention at half, no recomputation, routed
        experts as ``top_k`` dense FFNs of ``moe_ffn`` plus the router, embedding as one matmul."""
        bl = self.batch * self.seq
        qk = self.qk_nope_dim + self.qk_rope_dim
        q = 2 * bl * (self.dim * self.q_lora_rank + self.q_lora_rank * self.heads * qk)
        kv = 2 * bl * (self.dim * (self.kv_lora_rank + self.qk_rope_dim)
                       + self.kv_lora_rank * self.heads * (self.qk_nope_dim + self.v_head_dim))
        attention = 2 * bl * self.seq * self.heads * (qk + self.v_head_dim) / 2
        projection = 2 * bl * self.dim * self.heads * self.v_head_dim

        def ffn(width: int) -> int:
            return 2 * bl * width * self.dim * 2 + 2 * bl * width * self.dim  # gate + up, down

        moe_layers = self.layers - self.dense_layers
        router = 2 * bl * self.dim * self.experts
        total_ffn = (ffn(self.ffn) * self.dense_layers
                     + (router + ffn(self.moe_ffn) * (self.shared_experts + self.top_k)) * moe_layers)
        embedding = 2 * bl * self.dim * self.vocab
        weights = (total_ffn + (q + kv + projection) * self.layers + embedding) * 3
        return float(weights + attention * self.layers * 3)

    def split_settings(self) -> dict[str, tuple[str, ...]]:
        """Mesh axis -> the settings whose size the step's arguments split over it (``build``'s
        shardings: the weights split D on ``fsdp``, wq_b and wkv_b their low ranks, the routed
        experts E on ``expert`` when ep > 1; the batch scales with the devices)."""
        return {"fsdp": ("dim", "q_lora_rank", "kv_lora_rank"), **({"expert": ("experts",)} if self.ep > 1 else {})}

    def mesh_axes(self, devices: int) -> list[tuple[str, int]] | None:
        """The mesh this config needs over ``devices`` (None: the default one ``fsdp`` axis)."""
        if self.ep <= 1:
            return None
        return [("fsdp", devices // self.ep), ("expert", self.ep)]


ROLES = {"mla_q": "MLA low-rank query (q_norm(wq_a(x)))", "mla_kv": "MLA normalized KV latent",
         "out_proj": "attention output projection", "mlpwi_0": "dense FFN gate projection",
         "mlpwi_1": "dense FFN up projection", "mlpwo": "dense FFN down projection",
         "moe_mlpwi_0": "routed experts' gate projection (grouped matmul)",
         "moe_mlpwi_1": "routed experts' up projection (grouped matmul)",
         "moe_mlpwo": "routed experts' down projection (grouped matmul)"}

#: ``deepseek3-671b.yml`` (maxtext e591f30c): sizes, 3 dense layers, 256 experts top 8, one shared
#: expert, routed_scaling_factor 2.5, vocab 129,280, ``weight_dtype: float32`` (base.yml); flash
#: attention, as MaxText runs on GPU (cuDNN there, the Pallas kernel here).
V3_671B = DeepSeekConfig(
    layers=61, dense_layers=3, dim=7168, heads=128, q_lora_rank=1536, kv_lora_rank=512,
    qk_nope_dim=128, qk_rope_dim=64, v_head_dim=128, ffn=18432, moe_ffn=2048, experts=256,
    shared_experts=1, top_k=8, routed_scaling=2.5, vocab=129280, batch=1, seq=4096, attention="flash",
    attention_chunk=512, weight_dtype="float32")

PRESETS = {
    "deepseek-tiny": DeepSeekConfig(),
    "deepseek-v3-671b": V3_671B,
    "deepseek-v3-671b-flash": V3_671B,  # the name the comparison page's commands use
    "deepseek-v3-671b-chunked": dataclasses.replace(V3_671B, attention="chunked"),
}


@dataclass(frozen=True)
class _Step:
    """What every part of one traced step shares: the config, the mesh's axes and the global sizes."""

    cfg: DeepSeekConfig
    mesh: Any
    fsdp: str
    expert_axis: str | None
    batch_axes: Any
    act: Any  # constrains an activation to the batch sharding (common.batch_sharded)
    B: int  # global batch
    S: int
    D: int
    H: int
    QK: int  # query/key head dim: nope + rope
    E: int
    K: int
    F: int  # one expert's FFN width
    M: int  # token copies per sequence: S * K


def _step(cfg: DeepSeekConfig, mesh: Any) -> _Step:
    names = common.slice_axes(mesh)
    fsdp = common.fsdp_axis(mesh)
    expert_axis = "expert" if cfg.ep > 1 else None
    if cfg.ep > 1 and (names != ("fsdp", "expert") or mesh.shape["expert"] != cfg.ep):
        raise ValueError(f"ep={cfg.ep} needs the mesh (fsdp, expert={cfg.ep}); got {dict(mesh.shape)}")
    batch_axes: Any = common.batch_axes(mesh, fsdp, expert_axis) if expert_axis else common.batch_axes(mesh)
    return _Step(cfg, mesh, fsdp, expert_axis, batch_axes, common.batch_sharded(mesh, batch_axes),
                 B=cfg.batch * mesh.size, S=cfg.seq, D=cfg.dim, H=cfg.heads, QK=cfg.qk_nope_dim + cfg.qk_rope_dim,
                 E=cfg.experts, K=cfg.top_k, F=cfg.moe_ffn, M=cfg.seq * cfg.top_k)


def _mla(z: _Step, x: Any, p: Any) -> Any:
    """Multi-head latent attention, with its residual: ``mla_q``, ``mla_kv`` and ``out_proj`` named."""
    import jax.numpy as jnp  # lazy: jax, only when tracing
    from jax.ad_checkpoint import checkpoint_name  # lazy: jax, only when tracing

    cfg, act = z.cfg, z.act
    h = common.rms_norm(x, p["attn_norm"])
    cq = checkpoint_name(act(common.rms_norm(act(h @ p["wq_a"]), p["q_norm"])), "mla_q")
    q = act(jnp.einsum("bsr,rhk->bshk", cq, p["wq_b"]))
    q = jnp.concatenate([q[..., : cfg.qk_nope_dim], common.rope(q[..., cfg.qk_nope_dim :])], -1)
    low = act(h @ p["wkv_a"])
    c = checkpoint_name(act(common.rms_norm(low[..., : cfg.kv_lora_rank], p["kv_norm"])), "mla_kv")
    k_rope = common.rope(low[..., None, cfg.kv_lora_rank :])  # [B,S,1,rope]
    kv = act(jnp.einsum("bsr,rhk->bshk", c, p["wkv_b"]))
    k_nope, v = kv[..., : cfg.qk_nope_dim], kv[..., cfg.qk_nope_dim :]
    k = jnp.concatenate([k_nope, jnp.broadcast_to(k_rope, (*k_nope.shape[:3], cfg.qk_rope_dim))], -1)
    a = act(common.attention(cfg.attention, q, k, v, cfg.attention_chunk, z.mesh, z.batch_axes))
    return x + checkpoint_name(act(jnp.einsum("bshk,hkd->bsd", a, p["wo"])), "out_proj")


def _dense_ffn(z: _Step, x: Any, p: Any) -> Any:
    import jax  # lazy: jax, only when tracing
    from jax.ad_checkpoint import checkpoint_name  # lazy: jax, only when tracing

    act = z.act
    h = common.rms_norm(x, p["ffn_norm"])
    g = checkpoint_name(act(h @ p["w_gate"]), "mlpwi_0")
    u = checkpoint_name(act(h @ p["w_up"]), "mlpwi_1")
    return act(x + checkpoint_name(act((jax.nn.silu(g) * u) @ p["w_down"]), "mlpwo"))


def _route(z: _Step, h: Any, p: Any) -> tuple[Any, Any]:
    """top-k expert ids [B,S,K] and their combine weights [B,S,K] (MaxText deepseek routing)."""
    import jax  # lazy: jax, only when tracing
    import jax.numpy as jnp  # lazy: jax, only when tracing

    scores = jax.nn.sigmoid((h @ p["router"]).astype(jnp.float32))  # [B,S,E]
    _, top_i = jax.lax.top_k(scores + p["router_bias"].astype(jnp.float32), z.K)
    top_w = jnp.take_along_axis(scores, top_i, axis=-1)
    top_w = top_w / (jnp.sum(top_w, -1, keepdims=True) + 1e-20) * z.cfg.routed_scaling
    return top_i, top_w


def _grouped(z: _Step, xs: Any, w0: Any, w1: Any, wo: Any) -> Any:
    """xs [B, M, D] sorted by expert per sequence -> [B, M, D] through the experts' SwiGLU,
    as one batched matmul over E equal row blocks."""
    import jax  # lazy: jax, only when tracing
    import jax.numpy as jnp  # lazy: jax, only when tracing
    from jax.ad_checkpoint import checkpoint_name  # lazy: jax, only when tracing

    B, M, D, E, act = z.B, z.M, z.D, z.E, z.act

    def tagged(y: Any, name: str) -> Any:
        """``y`` [B, ..., W] as MaxText's flat [B*S*K, W] grouped-matmul output, named ``name``."""
        flat = checkpoint_name(act(y.reshape(B * M, y.shape[-1])), name)
        return flat.reshape(y.shape)

    blocks = xs.reshape(B, E, M // E, D)
    g0 = tagged(act(jnp.einsum("bemd,edf->bemf", blocks, w0)), "moe_mlpwi_0")
    g1 = tagged(act(jnp.einsum("bemd,edf->bemf", blocks, w1)), "moe_mlpwi_1")
    y = tagged(act(jnp.einsum("bemf,efd->bemd", jax.nn.silu(g0) * g1, wo)), "moe_mlpwo")
    return y.reshape(B, M, D)


def _ragged(z: _Step, h: Any, top_i: Any, w0: Any, w1: Any, wo: Any) -> Any:
    """``moe_impl=ragged``: per device (``shard_map``, as MaxText's sparse matmul runs), the
    device's b*S*K copies sorted by expert and grouped by the real group sizes in
    ``jax.lax.ragged_dot`` -> [B, S, K, D]."""
    import jax  # lazy: jax, only when tracing
    import jax.numpy as jnp  # lazy: jax, only when tracing
    from jax.ad_checkpoint import checkpoint_name  # lazy: jax, only when tracing
    from jax.sharding import PartitionSpec  # lazy: jax, only when tracing

    S, D, E, K, M, fsdp = z.S, z.D, z.E, z.K, z.M, z.fsdp

    def local(h: Any, top_i: Any, a: Any, b: Any, c: Any) -> Any:
        a, b = (jax.lax.all_gather(t, fsdp, axis=1, tiled=True) for t in (a, b))
        c = jax.lax.all_gather(c, fsdp, axis=2, tiled=True)
        bl = h.shape[0]
        flat_e = top_i.reshape(bl * M)
        order = jnp.argsort(flat_e)
        xs = jnp.take(h.reshape(bl * S, D), order // K, axis=0)  # [b*M, D]
        sizes = jnp.sum(jax.nn.one_hot(flat_e, E, dtype=jnp.int32), axis=0)  # [E]
        g0 = checkpoint_name(jax.lax.ragged_dot(xs, a, sizes), "moe_mlpwi_0")
        g1 = checkpoint_name(jax.lax.ragged_dot(xs, b, sizes), "moe_mlpwi_1")
        y = checkpoint_name(jax.lax.ragged_dot(jax.nn.silu(g0) * g1, c, sizes), "moe_mlpwo")
        return jnp.take(y, jnp.argsort(order), axis=0).reshape(bl, S, K, D)

    batch = PartitionSpec(z.batch_axes)
    return jax.shard_map(
        local, mesh=z.mesh, check_vma=False,
        in_specs=(batch, batch, PartitionSpec(None, fsdp, None), PartitionSpec(None, fsdp, None),
                  PartitionSpec(None, None, fsdp)),
        out_specs=batch)(h, top_i, w0, w1, wo)


def _experts_ep(z: _Step, xs: Any, w0: Any, w1: Any, wo: Any) -> Any:
    """Expert parallelism: each device's sorted copies go to the expert shards by all_to_all."""
    import jax  # lazy: jax, only when tracing
    import jax.numpy as jnp  # lazy: jax, only when tracing
    from jax.ad_checkpoint import checkpoint_name  # lazy: jax, only when tracing
    from jax.sharding import PartitionSpec  # lazy: jax, only when tracing

    D, E, M, fsdp, expert_axis = z.D, z.E, z.M, z.fsdp, z.expert_axis
    ep = z.cfg.ep
    el = E // ep

    def local(x: Any, a: Any, b: Any, c: Any) -> Any:
        # x [b, M, D]: this device's sequences; a/b/c: its experts, D (or F) split over fsdp.
        a, b = (jax.lax.all_gather(t, fsdp, axis=1, tiled=True) for t in (a, b))
        c = jax.lax.all_gather(c, fsdp, axis=2, tiled=True)
        bl = x.shape[0]
        send = x.reshape(bl, ep, M // ep, D).swapaxes(0, 1)  # copies for shard j: experts j*el..
        got = jax.lax.all_to_all(send, "expert", 0, 0, tiled=False)  # [ep (source), bl, M/ep, D]
        blocks = got.reshape(ep, bl, el, M // E, D)
        g0 = checkpoint_name(jnp.einsum("jbemd,edf->jbemf", blocks, a), "moe_mlpwi_0")
        g1 = checkpoint_name(jnp.einsum("jbemd,edf->jbemf", blocks, b), "moe_mlpwi_1")
        y = checkpoint_name(jnp.einsum("jbemf,efd->jbemd", jax.nn.silu(g0) * g1, c), "moe_mlpwo")
        back = jax.lax.all_to_all(y.reshape(ep, bl, M // ep, D), "expert", 0, 0, tiled=False)
        return back.swapaxes(0, 1).reshape(bl, M, D)

    batch = PartitionSpec(z.batch_axes)
    return jax.shard_map(
        local, mesh=z.mesh, check_vma=False,
        in_specs=(batch, PartitionSpec(expert_axis, fsdp, None), PartitionSpec(expert_axis, fsdp, None),
                  PartitionSpec(expert_axis, None, fsdp)),
        out_specs=batch)(xs, w0, w1, wo)


def _moe_ffn(z: _Step, x: Any, p: Any) -> Any:
    """Routed experts (``moe_impl``, ``ep``) and the shared expert, with the residual."""
    import jax  # lazy: jax, only when tracing
    import jax.numpy as jnp  # lazy: jax, only when tracing

    cfg, act, B, S, K, D, M = z.cfg, z.act, z.B, z.S, z.K, z.D, z.M
    h = common.rms_norm(x, p["ffn_norm"])
    top_i, top_w = _route(z, h, p)
    if cfg.moe_impl == "ragged" and cfg.ep == 1:
        y = _ragged(z, h, top_i, p["e_gate"], p["e_up"], p["e_down"])
    else:
        order = jnp.argsort(top_i.reshape(B, M), axis=-1)  # copies sorted by expert, per sequence
        xs = act(jnp.take_along_axis(h, (order // K)[..., None], axis=1))  # [B, M, D]
        if cfg.ep > 1:
            ys = _experts_ep(z, xs, p["e_gate"], p["e_up"], p["e_down"])
        else:
            ys = _grouped(z, xs, p["e_gate"], p["e_up"], p["e_down"])
        y = act(jnp.take_along_axis(ys, jnp.argsort(order, axis=-1)[..., None], axis=1)).reshape(B, S, K, D)
    routed = jnp.einsum("bskd,bsk->bsd", y, top_w.astype(jnp.bfloat16))
    shared = (jax.nn.silu(h @ p["s_gate"]) * (h @ p["s_up"])) @ p["s_down"]
    return act(x + routed + shared)


def _params(z: _Step) -> dict[str, Any]:
    """The abstract weights (``weight_dtype``), sharded over fsdp (and the experts over ``expert``)."""
    import jax.numpy as jnp  # lazy: jax, only when tracing

    cfg, mesh, fsdp, expert_axis, D, H, QK, E, F = z.cfg, z.mesh, z.fsdp, z.expert_axis, z.D, z.H, z.QK, z.E, z.F
    wdt = jnp.float32 if cfg.weight_dtype == "float32" else jnp.bfloat16

    def w(shape: tuple[int, ...], spec: tuple[str | None, ...]) -> Any:
        return common.abstract(mesh, shape, wdt, spec)

    def attn_params(n: int) -> dict[str, Any]:
        return {
            "attn_norm": w((n, D), (None, None)),
            "ffn_norm": w((n, D), (None, None)),
            "q_norm": w((n, cfg.q_lora_rank), (None, None)),
            "kv_norm": w((n, cfg.kv_lora_rank), (None, None)),
            "wq_a": w((n, D, cfg.q_lora_rank), (None, fsdp, None)),
            "wq_b": w((n, cfg.q_lora_rank, H, QK), (None, fsdp, None, None)),
            "wkv_a": w((n, D, cfg.kv_lora_rank + cfg.qk_rope_dim), (None, fsdp, None)),
            "wkv_b": w((n, cfg.kv_lora_rank, H, cfg.qk_nope_dim + cfg.v_head_dim), (None, fsdp, None, None)),
            "wo": w((n, H, cfg.v_head_dim, D), (None, None, None, fsdp)),
        }

    nd, nm = cfg.dense_layers, cfg.layers - cfg.dense_layers
    Fs = F * cfg.shared_experts
    params: dict[str, Any] = {
        "embed": w((cfg.vocab, D), (None, fsdp)),
        "unembed": w((D, cfg.vocab), (fsdp, None)),
        "final_norm": w((D,), (None,)),
    }
    if nd:
        params["dense"] = dict(attn_params(nd), w_gate=w((nd, D, cfg.ffn), (None, fsdp, None)),
                               w_up=w((nd, D, cfg.ffn), (None, fsdp, None)),
                               w_down=w((nd, cfg.ffn, D), (None, None, fsdp)))
    if nm:
        params["moe"] = dict(
            attn_params(nm),
            router=w((nm, D, E), (None, fsdp, None)),
            router_bias=common.abstract(mesh, (nm, E), jnp.float32, (None, None)),
            e_gate=w((nm, E, D, F), (None, expert_axis, fsdp, None)),
            e_up=w((nm, E, D, F), (None, expert_axis, fsdp, None)),
            e_down=w((nm, E, F, D), (None, expert_axis, None, fsdp)),
            s_gate=w((nm, D, Fs), (None, fsdp, None)),
            s_up=w((nm, D, Fs), (None, fsdp, None)),
            s_down=w((nm, Fs, D), (None, None, fsdp)),
        )
    return params


def build(cfg: DeepSeekConfig, mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    import jax  # lazy: jax, only when tracing
    import jax.numpy as jnp  # lazy: jax, only when tracing

    z = _step(cfg, mesh)
    bf16 = jnp.bfloat16
    policy = common.switched_policy(cfg.policy, cfg.switches)

    def compute(p: Any) -> Any:
        return jax.tree.map(lambda a: a.astype(bf16), p)

    def dense_layer(x: Any, p: Any) -> Any:
        p = compute(p)
        return _dense_ffn(z, _mla(z, x, p), p)

    def moe_layer(x: Any, p: Any) -> Any:
        bias = p["router_bias"]
        p = dict(compute(p), router_bias=bias)
        return _moe_ffn(z, _mla(z, x, p), p)

    dense_fn = jax.checkpoint(dense_layer, policy=policy)
    moe_fn = jax.checkpoint(moe_layer, policy=policy)

    def loss(params: Any, batch: Any) -> Any:
        tokens, labels = batch
        x = z.act(jnp.take(params["embed"].astype(bf16), tokens, axis=0))
        if cfg.dense_layers:
            x = common.apply_layers(dense_fn, x, params["dense"], cfg.scan)
        if cfg.layers > cfg.dense_layers:
            x = common.apply_layers(moe_fn, x, params["moe"], cfg.scan)
        x = common.rms_norm(x, params["final_norm"].astype(bf16))
        return common.cross_entropy(x @ params["unembed"].astype(bf16), labels)

    params = _params(z)
    tokens = common.abstract(mesh, (z.B, z.S), jnp.int32, (z.batch_axes, None))
    labels = common.abstract(mesh, (z.B, z.S), jnp.int32, (z.batch_axes, None))
    return common.adam_step(loss), (*common.adam_args(mesh, params), (tokens, labels))
