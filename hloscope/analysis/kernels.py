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

__all__ = ["TILE", "dot_dims", "gemm_efficiency"]

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


def gemm_efficiency(batch: int, m: int, n: int, cores: int, tile: int = TILE) -> float:
    """Fraction of peak a GEMM's output tiling can use on ``cores`` SMs (0 < e <= 1)."""
    tiles = max(1, batch) * -(-max(1, m) // tile) * -(-max(1, n) // tile)
    waves = -(-tiles // max(1, cores))
    return tiles / (waves * max(1, cores))
