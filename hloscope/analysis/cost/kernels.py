"""What one GPU kernel can reach: GEMM efficiency by shape (waves of output tiles over the SMs).

A GEMM kernel splits its ``batch x M x N`` output into tiles, one thread block per tile,
and runs them in *waves* of one tile per SM. A GEMM whose tiles do not fill the SMs (or
whose last wave is partly empty) runs at the tile rate of the waves, not the chip's
peak: ``efficiency = tiles / (waves * SMs)``, ``waves = ceil(tiles / SMs)``. With
``TILE = 128`` (a 128 x 128 output tile per thread block, the common size of cuBLAS and
CUTLASS Hopper/Blackwell BF16 kernels) a ``[256, 512]`` output is 8 tiles on 132 SMs:
6 % of peak. Large GEMMs approach 1. The curve is a bound from the tiling alone, not a
fit: it is not tuned to XLA's measured tables nor to any published throughput (those
are compared on docs/cost-model.md).
"""

from __future__ import annotations

import re

__all__ = ["TILE", "attention_flops", "dot_dims", "gemm_efficiency"]

#: Output tile edge of one thread block (elements).
TILE = 128

_DIMS = {key: re.compile(rf"(?:^|, ){key}=\{{([^}}]*)\}}") for key in
         ("lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims")}


def _ints(text: str, key: str) -> tuple[int, ...]:
    m = _DIMS[key].search(text)
    if m is None:
        return ()
    return tuple(int(d) for d in m.group(1).split(",") if d.strip().isdigit())


def dot_dims(attr_text: str, lhs_dims: tuple[int, ...], result_elements: int) -> tuple[int, int, int]:
    """(batch, M, N) of a ``dot`` from its dimension numbers, its lhs dims and its result size."""
    batch_ix = _ints(attr_text, "lhs_batch_dims")
    contract_ix = set(_ints(attr_text, "lhs_contracting_dims"))
    batch = 1
    m = 1
    for i, d in enumerate(lhs_dims):
        if i in batch_ix:
            batch *= d
        elif i not in contract_ix:
            m *= d
    n = result_elements // max(1, batch * m)
    return batch, m, max(1, n)


def gemm_efficiency(batch: int, m: int, n: int, cores: int | None, tile: int = TILE) -> float:
    """Fraction of peak a GEMM's output tiling can use on ``cores`` SMs (0 < e <= 1); 1 where there
    are no SM waves to fill (``cores`` None: a TPU's MXUs, taken at peak)."""
    if cores is None:
        return 1.0
    tiles = max(1, batch) * -(-max(1, m) // tile) * -(-max(1, n) // tile)
    waves = -(-tiles // max(1, cores))
    return tiles / (waves * max(1, cores))


_TRITON_NAME = re.compile(r'\bname = "([\w.-]+)"')
#: Pallas GPU flash-attention kernels (jax.experimental.pallas.ops.gpu.attention) by their
#: backend_config name: the attention matmuls each computes, in units of ``2*b*H*Sq*Sk*D``
#: (one ``Sq x Sk x D`` matmul per head): the forward pass QK^T and PV (2), the backward
#: pass recomputes QK^T and forms dV, dP, dQ and dK (5); the preprocessing step is
#: elementwise (none).
_PALLAS_MATMULS = {"mha_forward": 2, "mha_backward": 5, "mha_preprocess_backward": 0}


def attention_flops(target: str, attr_text: str, operands: list[tuple[int, ...]],
                    backend_config: dict[str, object]) -> float | None:
    """FLOPs of a fused attention custom call from its q and k shapes, None if it is not one.

    Pallas Triton flash attention (``__gpu$xla.gpu.triton`` named ``mha_*``) and cuDNN's
    fused attention (``__cudnn$fmha*``) take q and k as ``[b, S, H, D]``: one ``Sq x Sk x
    D`` matmul per head is ``2 * b*H*Sq * Sk * D = 2 * elements(q) * Sk`` FLOPs. The
    forward pass runs 2 of them, the backward 5. A cuDNN call whose backend_config says
    ``mask_type`` ``CAUSAL`` computes about half; a Triton kernel's mask is inside its IR,
    not readable here, so it is counted whole (an upper bound: a causal kernel skips
    about half).
    """
    if len(operands) < 2 or len(operands[0]) != 4 or len(operands[1]) != 4:
        return None
    q, k = operands[0], operands[1]
    q_elements = q[0] * q[1] * q[2] * q[3]
    one = 2.0 * q_elements * k[1]
    if target == "__gpu$xla.gpu.triton":
        m = _TRITON_NAME.search(attr_text)
        matmuls = _PALLAS_MATMULS.get(m.group(1)) if m else None
        return None if matmuls is None else matmuls * one
    if target.startswith("__cudnn$fmha"):
        cfg = backend_config.get("cudnn_fmha_backend_config")
        causal = isinstance(cfg, dict) and "CAUSAL" in str(cfg.get("mask_type", "")).upper()
        matmuls = 5 if "backward" in target.lower() else 2
        return matmuls * one * (0.5 if causal else 1.0)
    return None
