"""``llama``: a dense Llama-style decoder (RMSNorm, GQA attention, SwiGLU), FSDP.

With ``policy=offload`` the Q, K and V projections of every layer are tagged
(``query_proj``, ``key_proj``, ``value_proj``) and offloaded to pinned host
memory, as in the published MaxText Llama 3.1 405B runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hloscope.compile.workloads import common


@dataclass(frozen=True)
class LlamaConfig:
    """Shapes of the model and step. ``batch`` is per device; ``seq`` tokens per sample."""

    layers: int = 2
    dim: int = 512
    heads: int = 8
    kv_heads: int = 2
    head_dim: int = 64
    ffn: int = 1536
    vocab: int = 1024
    batch: int = 1
    seq: int = 256
    policy: str = "offload"
    scan: bool = True
    attention_chunk: int = 0  # >0: query-chunked attention with recomputed scores (flash-like memory)

    @property
    def offloaded_names(self) -> tuple[str, ...]:
        return ("query_proj", "key_proj", "value_proj")


ROLES = {"query_proj": "Q projection", "key_proj": "K projection", "value_proj": "V projection"}

PRESETS = {
    "llama-tiny": LlamaConfig(),
    "llama-small": LlamaConfig(layers=4, dim=1024, heads=16, kv_heads=4, head_dim=64, ffn=2816,
                               vocab=4096, batch=2, seq=512),
    "llama3-8b": LlamaConfig(layers=32, dim=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336,
                             vocab=128256, batch=2, seq=8192, attention_chunk=512),
    "llama3-405b": LlamaConfig(layers=126, dim=16384, heads=128, kv_heads=8, head_dim=128, ffn=53248,
                               vocab=128256, batch=2, seq=8192, attention_chunk=512),
}


def build(cfg: LlamaConfig, mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    import jax
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name

    fsdp = mesh.axis_names[0]
    n_dev = mesh.size
    B, S, D = cfg.batch * n_dev, cfg.seq, cfg.dim
    H, KV, HD, F, L, V = cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.ffn, cfg.layers, cfg.vocab

    act = common.batch_sharded(mesh, fsdp)

    def layer(x: Any, p: Any) -> Any:
        x = act(x)
        h = common.rms_norm(x, p["attn_norm"])
        q = checkpoint_name(act(jnp.einsum("bsd,dhk->bshk", h, p["wq"])), "query_proj")
        k = checkpoint_name(act(jnp.einsum("bsd,dhk->bshk", h, p["wk"])), "key_proj")
        v = checkpoint_name(act(jnp.einsum("bsd,dhk->bshk", h, p["wv"])), "value_proj")
        a = act(common.causal_attention(q, k, v, cfg.attention_chunk))
        x = x + act(jnp.einsum("bshk,hkd->bsd", a, p["wo"]))
        h = common.rms_norm(x, p["ffn_norm"])
        g = act(jax.nn.silu(h @ p["w_gate"]) * (h @ p["w_up"]))
        return act(x + g @ p["w_down"])

    layer_fn = jax.checkpoint(layer, policy=common.checkpoint_policy(cfg.policy, cfg.offloaded_names))

    def loss(params: Any, batch: Any) -> Any:
        tokens, labels = batch
        x = jnp.take(params["embed"], tokens, axis=0)
        x = common.apply_layers(layer_fn, x, params["layers"], cfg.scan)
        x = common.rms_norm(x, params["final_norm"])
        return common.cross_entropy(x @ params["unembed"], labels)

    bf16 = jnp.bfloat16

    def w(shape: tuple[int, ...], spec: tuple[str | None, ...]) -> Any:
        return common.abstract(mesh, shape, bf16, spec)

    params = {
        "embed": w((V, D), (None, fsdp)),
        "unembed": w((D, V), (fsdp, None)),
        "final_norm": w((D,), (None,)),
        "layers": {
            "attn_norm": w((L, D), (None, None)),
            "ffn_norm": w((L, D), (None, None)),
            "wq": w((L, D, H, HD), (None, fsdp, None, None)),
            "wk": w((L, D, KV, HD), (None, fsdp, None, None)),
            "wv": w((L, D, KV, HD), (None, fsdp, None, None)),
            "wo": w((L, H, HD, D), (None, None, None, fsdp)),
            "w_gate": w((L, D, F), (None, fsdp, None)),
            "w_up": w((L, D, F), (None, fsdp, None)),
            "w_down": w((L, F, D), (None, None, fsdp)),
        },
    }
    tokens = common.abstract(mesh, (B, S), jnp.int32, (fsdp, None))
    labels = common.abstract(mesh, (B, S), jnp.int32, (fsdp, None))
    return common.adam_step(loss), (*common.adam_args(mesh, params), (tokens, labels))
