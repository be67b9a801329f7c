"""``deepseek``: a DeepSeek-style MoE decoder with multi-head latent attention (MLA).

The first ``dense_layers`` layers have a dense SwiGLU FFN; the rest route each
token to ``top_k`` of ``experts`` routed experts (GShard-style dispatch with a
capacity per sequence) plus ``shared_experts`` always-on experts. Under
``policy=offload`` the MLA query and key/value projection intermediates
(``mla_q``, ``mla_kv``) and the MoE up-projection intermediates (``moe_up``,
``moe_gate``) are offloaded to pinned host memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hloscope.compile.workloads import common


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
    capacity_factor: float = 1.25
    vocab: int = 1024
    batch: int = 1
    seq: int = 128
    policy: str = "offload"
    scan: bool = True
    attention_chunk: int = 0  # >0: query-chunked attention with recomputed scores (flash-like memory)

    @property
    def offloaded_names(self) -> tuple[str, ...]:
        return ("mla_q", "mla_kv", "moe_up", "moe_gate")

    @property
    def capacity(self) -> int:
        return max(1, math.ceil(self.top_k * self.seq / self.experts * self.capacity_factor))


ROLES = {"mla_q": "MLA query projection", "mla_kv": "MLA latent KV projection",
         "moe_up": "MoE up-projection", "moe_gate": "MoE gate projection"}

PRESETS = {
    "deepseek-tiny": DeepSeekConfig(),
    "deepseek-v3-671b": DeepSeekConfig(
        layers=61, dense_layers=3, dim=7168, heads=128, q_lora_rank=1536, kv_lora_rank=512,
        qk_nope_dim=128, qk_rope_dim=64, v_head_dim=128, ffn=18432, moe_ffn=2048, experts=256,
        shared_experts=1, top_k=8, vocab=129280, batch=1, seq=4096, attention_chunk=512),
}


def build(cfg: DeepSeekConfig, mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    import jax
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name

    fsdp = mesh.axis_names[0]
    n_dev = mesh.size
    B, S, D, H = cfg.batch * n_dev, cfg.seq, cfg.dim, cfg.heads
    QK = cfg.qk_nope_dim + cfg.qk_rope_dim
    E, C, K = cfg.experts, cfg.capacity, cfg.top_k
    act = common.batch_sharded(mesh, fsdp)
    policy = common.checkpoint_policy(cfg.policy, cfg.offloaded_names)

    def mla(x: Any, p: Any) -> Any:
        h = common.rms_norm(x, p["attn_norm"])
        cq = common.rms_norm(act(h @ p["wq_a"]), p["q_norm"])
        q = checkpoint_name(act(jnp.einsum("bsr,rhk->bshk", cq, p["wq_b"])), "mla_q")
        ckv = checkpoint_name(act(h @ p["wkv_a"]), "mla_kv")
        c, k_rope = ckv[..., : cfg.kv_lora_rank], ckv[..., cfg.kv_lora_rank :]
        kv = act(jnp.einsum("bsr,rhk->bshk", common.rms_norm(c, p["kv_norm"]), p["wkv_b"]))
        k_nope, v = kv[..., : cfg.qk_nope_dim], kv[..., cfg.qk_nope_dim :]
        k = jnp.concatenate([k_nope, jnp.broadcast_to(k_rope[:, :, None, :], (*k_nope.shape[:3], cfg.qk_rope_dim))], -1)
        a = act(common.causal_attention(q, k, v, cfg.attention_chunk))
        return x + act(jnp.einsum("bshk,hkd->bsd", a, p["wo"]))

    def dense_ffn(x: Any, p: Any) -> Any:
        h = common.rms_norm(x, p["ffn_norm"])
        return act(x + (jax.nn.silu(h @ p["w_gate"]) * (h @ p["w_up"])) @ p["w_down"])

    def moe_ffn(x: Any, p: Any) -> Any:
        h = common.rms_norm(x, p["ffn_norm"])
        probs = jax.nn.sigmoid((h @ p["router"]).astype(jnp.float32))  # [B,S,E]
        top_w, top_i = jax.lax.top_k(probs, K)
        top_w = top_w / jnp.sum(top_w, -1, keepdims=True)
        onehot = jax.nn.one_hot(top_i, E, dtype=jnp.int32)  # [B,S,K,E]
        # Position of each token in its expert's buffer, per sequence (group).
        flat = onehot.reshape(B, S * K, E)
        pos = (jnp.cumsum(flat, axis=1) - 1).reshape(B, S, K, E)
        keep = (pos < C) & (onehot > 0)
        slot = jax.nn.one_hot(jnp.where(keep, pos, C), C, dtype=h.dtype)  # [B,S,K,E,C]
        dispatch = act(jnp.sum(slot * keep[..., None].astype(h.dtype), axis=2))  # [B,S,E,C]
        combine = act(jnp.sum(slot * (keep * top_w[..., None])[..., None].astype(h.dtype), axis=2))
        xe = act(jnp.einsum("bsec,bsd->becd", dispatch, h))
        up = checkpoint_name(act(jnp.einsum("becd,edf->becf", xe, p["e_up"])), "moe_up")
        gate = checkpoint_name(act(jnp.einsum("becd,edf->becf", xe, p["e_gate"])), "moe_gate")
        ye = act(jnp.einsum("becf,efd->becd", jax.nn.silu(gate) * up, p["e_down"]))
        routed = jnp.einsum("bsec,becd->bsd", combine, ye)
        shared = (jax.nn.silu(h @ p["s_gate"]) * (h @ p["s_up"])) @ p["s_down"]
        return act(x + routed + shared)

    dense_layer = jax.checkpoint(lambda x, p: dense_ffn(mla(x, p), p), policy=policy)
    moe_layer = jax.checkpoint(lambda x, p: moe_ffn(mla(x, p), p), policy=policy)

    def loss(params: Any, batch: Any) -> Any:
        tokens, labels = batch
        x = act(jnp.take(params["embed"], tokens, axis=0))
        if cfg.dense_layers:
            x = common.apply_layers(dense_layer, x, params["dense"], cfg.scan)
        if cfg.layers > cfg.dense_layers:
            x = common.apply_layers(moe_layer, x, params["moe"], cfg.scan)
        x = common.rms_norm(x, params["final_norm"])
        return common.cross_entropy(x @ params["unembed"], labels)

    def w(shape: tuple[int, ...], spec: tuple[str | None, ...]) -> Any:
        return common.abstract(mesh, shape, jnp.bfloat16, spec)

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
    Fs = cfg.moe_ffn * cfg.shared_experts
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
            e_up=w((nm, E, D, cfg.moe_ffn), (None, None, fsdp, None)),
            e_gate=w((nm, E, D, cfg.moe_ffn), (None, None, fsdp, None)),
            e_down=w((nm, E, cfg.moe_ffn, D), (None, None, None, fsdp)),
            s_gate=w((nm, D, Fs), (None, fsdp, None)),
            s_up=w((nm, D, Fs), (None, fsdp, None)),
            s_down=w((nm, Fs, D), (None, None, fsdp)),
        )
    tokens = common.abstract(mesh, (B, S), jnp.int32, (fsdp, None))
    labels = common.abstract(mesh, (B, S), jnp.int32, (fsdp, None))
    return common.adam_step(loss), (*common.adam_args(mesh, params), (tokens, labels))
