"""``llama``: a dense Llama-style decoder (RMSNorm, GQA attention, SwiGLU), FSDP.

With ``policy=offload`` the Q, K and V projections of every layer are tagged
(``query_proj``, ``key_proj``, ``value_proj``) and offloaded to pinned host
memory, as in the published MaxText Llama 3.1 405B runs.

``attention``: ``chunked`` (XLA attention, ``attention_chunk`` queries at a time) or
``flash`` (the Pallas GPU flash-attention kernel, a Triton custom call).
``quantization``: ``""`` (bf16 matmuls), ``fp8`` (every layer matmul with float8_e4m3fn
operands and per-tensor current scaling, gradients in float8_e5m2, as MaxText's
``quantization: fp8`` recipes run), or ``nvfp4`` (fp8 as before, and the MLP weights in
NVFP4: float4_e2m1fn in blocks of 16 with float8_e4m3fn scales, dequantized for the matmul).
``recipe_flags``: compile with the XLA flags of the B200 Llama 3.1 405B recipe
(:data:`RECIPE_FLAGS`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from hloscope.compile.workloads import common

QUANTIZATIONS = ("", "fp8", "nvfp4")

#: XLA options of the B200 Llama 3.1 405B MaxText recipe (gpu-recipes a4 ``llama3-1-405b`` fp8):
#: LHS on, 16 GiB combine thresholds, pipelined all-gather / reduce-scatter / all-reduce, while-loop
#: double buffering, XLA's rematerialization pass off.
RECIPE_FLAGS: dict[str, Any] = {
    "xla_gpu_enable_latency_hiding_scheduler": True,
    "xla_gpu_all_gather_combine_threshold_bytes": 17179869184,
    "xla_gpu_reduce_scatter_combine_threshold_bytes": 17179869184,
    "xla_gpu_all_reduce_combine_threshold_bytes": 17179869184,
    "xla_gpu_enable_pipelined_all_gather": True,
    "xla_gpu_enable_pipelined_reduce_scatter": True,
    "xla_gpu_enable_pipelined_all_reduce": True,
    "xla_gpu_enable_while_loop_double_buffering": True,
    "xla_disable_hlo_passes": "rematerialization",
}


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
    attention: str = "chunked"
    quantization: str = ""
    recipe_flags: bool = False
    custom: str = ""  # per-name switches under policy=offload (common.custom_policy): query_proj:device,...

    @property
    def offloaded_names(self) -> tuple[str, ...]:
        return ("query_proj", "key_proj", "value_proj")

    def split_settings(self) -> dict[str, tuple[str, ...]]:
        """Mesh axis -> the settings whose size the step's arguments split over it (``build``'s
        shardings: every weight splits D on ``fsdp``; the batch scales with the devices)."""
        return {"fsdp": ("dim",)}

    def problem(self) -> str:
        """Why this config cannot build a step ("" when it can)."""
        if self.attention not in common.ATTENTION:
            return f"attention={self.attention} must be one of {', '.join(common.ATTENTION)}"
        if self.quantization not in QUANTIZATIONS:
            return f"quantization={self.quantization} must be one of fp8, nvfp4 (or empty)"
        return common.custom_problem(self.custom, self.offloaded_names)

    def xla_flags(self) -> dict[str, Any]:
        """XLA options this config compiles with (``--xla-flag`` overrides them). Quantized
        matmuls need ``xla_allow_excess_precision=false``: deviceless, XLA does not rewrite an
        FP8 dot into a cuBLASLt FP8 GEMM, and with excess precision allowed it folds the
        bf16 -> f8 -> bf16 round trip away, leaving a bf16 GEMM (measured, jaxlib 0.10.2)."""
        flags: dict[str, Any] = dict(RECIPE_FLAGS) if self.recipe_flags else {}
        if self.quantization:
            flags["xla_allow_excess_precision"] = False
        return flags

    def model_flops_per_device(self) -> float:
        """Model FLOPs of one training step on one device, counted as MaxText's
        ``calculate_tflops_training_per_device`` counts a dense decoder: weight matmuls x3
        (forward + backward), causal attention at half, no recomputation, embedding as one matmul."""
        bl = self.batch * self.seq
        qkv = 2 * bl * self.dim * (self.heads + 2 * self.kv_heads) * self.head_dim
        attention = 4 * bl * self.seq * self.heads * self.head_dim / 2
        projection = 2 * bl * self.dim * self.heads * self.head_dim
        ffn = 2 * bl * self.ffn * self.dim * 2 + 2 * bl * self.ffn * self.dim
        embedding = 2 * bl * self.dim * self.vocab
        return float(((ffn + qkv + projection) * self.layers + embedding) * 3 + attention * self.layers * 3)


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
#: The B200 recipe as run: FP8 matmuls, flash attention, its XLA flags.
PRESETS["llama3-405b-fp8"] = dataclasses.replace(PRESETS["llama3-405b"], quantization="fp8", attention="flash",
                                                 recipe_flags=True)
#: The published study's run: NVFP4 MLP matmuls, FP8 elsewhere, flash attention.
PRESETS["llama3-405b-nvfp4"] = dataclasses.replace(PRESETS["llama3-405b-fp8"], quantization="nvfp4",
                                                   recipe_flags=False)


def _quantize(a: Any, dtype: Any) -> tuple[Any, Any]:
    """``a`` scaled by its current absolute maximum into ``dtype``'s range: (quantized, f32 scale)."""
    import jax.numpy as jnp  # lazy: jax, only when tracing

    limit = float(jnp.finfo(dtype).max)
    scale = jnp.maximum(jnp.max(jnp.abs(a)).astype(jnp.float32), 1e-12) / limit
    return (a.astype(jnp.float32) / scale).astype(dtype), scale


def _fp8_matmul() -> Any:
    """x [..., K] @ w [K, N] as a dot of float8_e4m3fn operands (per-tensor current scaling,
    the scales applied to the bf16 product); the backward pass quantizes the incoming gradient
    to float8_e5m2 and computes both gradients as FP8 dots too."""
    import jax  # lazy: jax, only when tracing
    import jax.numpy as jnp  # lazy: jax, only when tracing

    e4m3, e5m2, bf16 = jnp.float8_e4m3fn, jnp.float8_e5m2, jnp.bfloat16

    def dot(a: Any, b: Any, dims: Any) -> Any:
        return jax.lax.dot_general(a, b, (dims, ((), ())), preferred_element_type=bf16)

    @jax.custom_vjp
    def matmul(x: Any, w: Any) -> Any:
        return fwd(x, w)[0]

    def fwd(x: Any, w: Any) -> tuple[Any, Any]:
        (xq, sx), (wq, sw) = _quantize(x, e4m3), _quantize(w, e4m3)
        y = dot(xq, wq, ((x.ndim - 1,), (0,))) * (sx * sw).astype(bf16)
        return y, (xq, sx, wq, sw)

    def bwd(res: Any, g: Any) -> tuple[Any, Any]:
        xq, sx, wq, sw = res
        gq, sg = _quantize(g, e5m2)
        dx = dot(gq, wq, ((g.ndim - 1,), (1,))) * (sg * sw).astype(bf16)
        lead = tuple(range(g.ndim - 1))
        dw = dot(xq, gq, (lead, lead)) * (sx * sg).astype(bf16)
        return dx, dw

    matmul.defvjp(fwd, bwd)
    return matmul


def _nvfp4_matmul() -> Any:
    """x [..., K] @ w [K, N] with NVFP4 weights: float4_e2m1fn values in blocks of 16 along K,
    each block with a float8_e4m3fn scale, dequantized to bf16 for the matmul (what XLA makes
    of ``jax.nn.scaled_dot_general``'s ``__op$block_scaled_dot`` when it cannot call a
    block-scaled GEMM; that function itself needs devices present, which a deviceless compile
    has not). Named ``nvfp4`` in op_name so a cost model can charge the FP4 rate."""
    import jax  # lazy: jax, only when tracing
    import jax.numpy as jnp  # lazy: jax, only when tracing

    f4, e4m3, bf16 = jnp.float4_e2m1fn, jnp.float8_e4m3fn, jnp.bfloat16

    def matmul(x: Any, w: Any) -> Any:
        with jax.named_scope("nvfp4"):
            k, n = w.shape
            blocks = w.astype(jnp.float32).reshape(k // 16, 16, n)
            scale = (jnp.max(jnp.abs(blocks), axis=1, keepdims=True) / 6.0).astype(e4m3)
            values = (blocks / jnp.maximum(scale.astype(jnp.float32), 1e-12)).astype(f4)
            dequant = (values.astype(bf16) * scale.astype(bf16)).reshape(k, n)
            return x @ dequant

    return matmul


def build(cfg: LlamaConfig, mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    import jax  # lazy: jax, only when tracing
    import jax.numpy as jnp  # lazy: jax, only when tracing
    from jax.ad_checkpoint import checkpoint_name  # lazy: jax, only when tracing

    fsdp, batch_axes = common.fsdp_axis(mesh), common.batch_axes(mesh)
    n_dev = mesh.size
    B, S, D = cfg.batch * n_dev, cfg.seq, cfg.dim
    H, KV, HD, F, L, V = cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.ffn, cfg.layers, cfg.vocab

    act = common.batch_sharded(mesh, batch_axes)
    fp8 = _fp8_matmul() if cfg.quantization else None
    mlp_matmul = _nvfp4_matmul() if cfg.quantization == "nvfp4" else fp8

    def proj(h: Any, w: Any, matmul: Any) -> Any:
        """h [B,S,X] times a weight [X, ...] by ``matmul`` on [X, N]."""
        return matmul(h, w.reshape(w.shape[0], -1)).reshape(*h.shape[:2], *w.shape[1:])

    def layer(x: Any, p: Any) -> Any:
        x = act(x)
        h = common.rms_norm(x, p["attn_norm"])
        if fp8 is None:
            q = checkpoint_name(act(jnp.einsum("bsd,dhk->bshk", h, p["wq"])), "query_proj")
            k = checkpoint_name(act(jnp.einsum("bsd,dhk->bshk", h, p["wk"])), "key_proj")
            v = checkpoint_name(act(jnp.einsum("bsd,dhk->bshk", h, p["wv"])), "value_proj")
        else:
            q = checkpoint_name(act(proj(h, p["wq"], fp8)), "query_proj")
            k = checkpoint_name(act(proj(h, p["wk"], fp8)), "key_proj")
            v = checkpoint_name(act(proj(h, p["wv"], fp8)), "value_proj")
        a = act(common.attention(cfg.attention, q, k, v, cfg.attention_chunk, mesh, batch_axes))
        if fp8 is None:
            x = x + act(jnp.einsum("bshk,hkd->bsd", a, p["wo"]))
        else:
            x = x + act(proj(a.reshape(*a.shape[:2], H * HD), p["wo"].reshape(H * HD, D), fp8))
        h = common.rms_norm(x, p["ffn_norm"])
        if mlp_matmul is None:
            g = act(jax.nn.silu(h @ p["w_gate"]) * (h @ p["w_up"]))
            return act(x + g @ p["w_down"])
        g = act(jax.nn.silu(proj(h, p["w_gate"], mlp_matmul)) * proj(h, p["w_up"], mlp_matmul))
        return act(x + proj(g, p["w_down"], mlp_matmul))

    layer_fn = jax.checkpoint(layer, policy=common.custom_policy(cfg.policy, cfg.offloaded_names, cfg.custom))

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
    tokens = common.abstract(mesh, (B, S), jnp.int32, (batch_axes, None))
    labels = common.abstract(mesh, (B, S), jnp.int32, (batch_axes, None))
    return common.adam_step(loss), (*common.adam_args(mesh, params), (tokens, labels))
