"""Estimates that cannot be: an op slower than its shapes allow at a small fraction of peak, a step of days.

An op's estimate is *implausible* when it exceeds

``ceiling_us = max(flops_ceiling / (FRACTION * peak), hbm_bytes / (FRACTION * hbm_bandwidth)) + launch_us``

- ``flops_ceiling``: the most FLOPs the op's operand and result shapes allow, read
  without its dimension numbers (so a misread ``dim_labels`` or contracting dimension
  cannot hide itself): a matmul (a ``dot``, a GEMM custom call, a ``convolution`` whose
  window is 1 everywhere) does at most ``sqrt(|lhs| * |rhs| * |out|)`` multiply-adds (the
  Loomis-Whitney inequality: each one is a distinct (lhs, rhs, out) element triple, and
  every loop index is in two of the three), a convolution with a window at most
  ``|out| * |rhs|`` (each output element meets each kernel element once at most). Each is
  divided by the fraction of peak the platform's profile gives that matmul (the GPU's SM
  tile waves, at least 1/SMs), as the estimate is: the check is about counts, not about
  the efficiency model. Other ops (fused attention kernels, counted from q and k alone)
  are bounded by the model's own count.
- ``FRACTION`` = 1 % of both peaks: the roofline is a lower bound, and measured kernels
  run within a few times of it (TPU v5e matmul fusions at 0.91-0.98 of it, docs/cost-model.md);
  an estimate 100x over the bound of its shapes is a miscount of FLOPs or bytes, not a
  slow kernel. The miscount this catches: MaxText's Llama 3.1 405B ``fusion.47``
  (``dim_labels=0bf_io0->0bf``) was priced at 2.3e10 us, its 2.9e13 FLOPs counted
  53,248-fold (the kernel's output features taken as contracted) at the fp32 peak.
- A simulated step of :data:`STEP_LIMIT_US` (one day) or more is implausible whatever its
  ops: no training step the tool is meant for runs a day (that 405B step came out at
  427,372 s, five days).

A measured time is never implausible (it was measured). :class:`ImplausibleOp` is the
flag as data; the summary lists them (``Summary.implausible``) and the renderers say so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["FRACTION", "STEP_LIMIT_US", "Implausible", "ImplausibleOp", "ceiling_us", "matmul_flops_ceiling"]

#: The fraction of both peaks below which an estimate cannot be (module docstring).
FRACTION = 0.01
#: A simulated step this long or longer cannot be (one day, µs).
STEP_LIMIT_US = 86_400e6


@dataclass(frozen=True)
class ImplausibleOp:
    """An op whose estimate exceeds what its shapes allow (module docstring).

    instruction, computation: where it is. us: the model's estimate of one execution.
    ceiling_us: the most its FLOP ceiling and bytes allow at :data:`FRACTION` of peak.
    flops: the model's count; flops_ceiling: the most its shapes allow. hbm_bytes: bytes
    it moves.
    """

    instruction: str
    computation: str
    us: float
    ceiling_us: float
    flops: float
    flops_ceiling: float
    hbm_bytes: int


@dataclass(frozen=True)
class Implausible:
    """The step's implausible estimates: ops (largest estimate first), and the simulated step
    when it is :data:`STEP_LIMIT_US` or longer (else None)."""

    ops: tuple[ImplausibleOp, ...]
    step_us: float | None


def matmul_flops_ceiling(lhs_elements: int, rhs_elements: int, out_elements: int) -> float:
    """The most FLOPs a matmul of these operand and result sizes can do (2 per multiply-add)."""
    return 2.0 * math.sqrt(float(lhs_elements) * float(rhs_elements) * float(out_elements))


def ceiling_us(flops_ceiling: float, hbm_bytes: int, peak_flops: float, hbm_bandwidth: float,
               launch_us: float) -> float:
    """The longest a plausible estimate of one execution can be, µs (module docstring);
    ``flops_ceiling`` already divided by each matmul's efficiency."""
    compute = flops_ceiling / (FRACTION * peak_flops) * 1e6
    memory = hbm_bytes / (FRACTION * hbm_bandwidth) * 1e6
    return max(compute, memory) + launch_us
