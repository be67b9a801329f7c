"""What pricing differs by platform, in one small value chosen from the target: a cost profile.

The roofline (``hloscope.analysis.cost.roofline``) asks a :class:`CostProfile` what it
must not decide itself:

- ``peak_flops(element_type)``: the dense peak a matmul in that type runs at;
- ``matmul_efficiency(batch, m, n)``: the fraction of that peak a matmul with a
  ``batch x m x n`` output reaches;
- ``launch_us``: the fixed time every op adds;
- ``hbm_bandwidth`` and ``on_chip(memory_space)``: the memory an op's bytes are timed on,
  and the memory spaces that are on the chip (their bytes cost no HBM time);
- ``collective_us(kind, nbytes, group, devices)``: one execution of a collective.

:func:`cost_profile` is the one place that picks the profile from the target:

- :class:`GpuCostProfile`: the peak by type of the GPU's datasheet, the SM tile waves of
  ``kernels.gemm_efficiency``, ``Target.kernel_launch_us`` per kernel, HBM only, NCCL rings
  over NVLink or the network (``collectives.collective_time_us``).
- :class:`TpuCostProfile`: the MXU at the bf16 peak for every matmul (dots and convolutions)
  whose inputs are narrower than 32 bits, at the fp32 peak for f32/f64 ones, each peak and HBM at the
  share of it the chip achieves (``TpuTarget.mxu_efficiency``, ``hbm_efficiency``: measured on v5e,
  1.0 on chips nobody measured), no waves (efficiency 1 by shape), no launch term, HBM-bound
  elementwise, ``S(1)`` (VMEM) and ``S(2)`` (SMEM) on the chip, a fused matmul chain's input in HBM
  re-read at ``TpuTarget.chain_input_rate`` (``hloscope.analysis.cost.chains``), collectives a ring over ICI at the
  bandwidth it is given (no NCCL launch, no NVLink domains).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from hloscope.analysis.cost.collectives import collective_time_us, ring_steps, ring_traffic
from hloscope.analysis.cost.kernels import gemm_efficiency
from hloscope.targets import GpuTarget, Platform, Target, TpuTarget, gpu_only

__all__ = ["TPU_ON_CHIP_SPACES", "CostProfile", "GpuCostProfile", "TpuCostProfile", "TpuFigures", "cost_profile"]

#: TPU memory spaces on the chip: ``S(1)`` VMEM, ``S(2)`` SMEM (``S(5)`` is host memory).
TPU_ON_CHIP_SPACES = frozenset({1, 2})
#: The edge of a TPU MXU's systolic array (128 x 128 on v2-v5; docs/cost-model.md): a matmul contracting
#: over a multiple of it fills the array's passes.
MXU_EDGE = 128


class CostProfile(Protocol):
    """What the roofline asks of a platform (module docstring)."""

    @property
    def platform(self) -> str:
        """``gpu`` or ``tpu``: the family this profile prices."""

    @property
    def launch_us(self) -> float:
        """Fixed time per op, µs."""

    @property
    def hbm_bandwidth(self) -> float:
        """Device memory bandwidth, bytes/s."""

    def peak_flops(self, element_type: str) -> float:
        """Dense peak FLOP/s for math in ``element_type``."""

    def matmul_efficiency(self, batch: int, m: int, n: int) -> float:
        """Fraction of :meth:`peak_flops` a matmul with a ``batch x m x n`` output reaches."""

    def on_chip(self, memory_space: int) -> bool:
        """Whether bytes in ``memory_space`` stay on the chip (no HBM time)."""

    def on_chip_us(self, nbytes: int) -> float:
        """The time to stream ``nbytes`` through the chip's own memory, µs (0: not priced)."""

    def contraction_efficiency(self, k: int) -> float:
        """The share of a matmul's rate left when it contracts over ``k`` elements (1: no penalty)."""

    @property
    def chain_input_rate(self) -> float:
        """Bytes/s at which a fused matmul chain re-reads its first matmul's input from HBM (0: not
        priced; ``hloscope.analysis.cost.chains``)."""

    def chain_input_us(self, nbytes: int) -> float:
        """The time a fused matmul chain adds for ``nbytes`` of re-read input in HBM, µs (0: not priced)."""

    def collective_us(self, kind: str, nbytes: int, group: tuple[int, ...], devices: int) -> float:
        """One execution of a collective of ``kind`` over ``group`` moving a ``nbytes`` buffer, µs."""


@dataclass(frozen=True)
class GpuCostProfile:
    """A GPU: tile waves over its SMs, a launch per kernel, NCCL rings (module docstring)."""

    target: GpuTarget
    platform: str = "gpu"

    @property
    def launch_us(self) -> float:
        return self.target.kernel_launch_us

    @property
    def hbm_bandwidth(self) -> float:
        return self.target.hbm_bandwidth

    def peak_flops(self, element_type: str) -> float:
        return self.target.peak_flops(element_type)

    def matmul_efficiency(self, batch: int, m: int, n: int) -> float:
        return gemm_efficiency(batch, m, n, self.target.core_count)

    def on_chip(self, memory_space: int) -> bool:
        return False

    def on_chip_us(self, nbytes: int) -> float:
        return 0.0

    def contraction_efficiency(self, k: int) -> float:
        return 1.0

    @property
    def chain_input_rate(self) -> float:
        return 0.0

    def chain_input_us(self, nbytes: int) -> float:
        return 0.0

    def collective_us(self, kind: str, nbytes: int, group: tuple[int, ...], devices: int) -> float:
        return collective_time_us(kind, nbytes, group, self.target, devices)

    @classmethod
    def of(cls, target: Target) -> GpuCostProfile:
        """The profile of a GPU target."""
        return cls(gpu_only(target, "the GPU cost model"))


class TpuFigures(Protocol):
    """The figures a TPU's roofline reads from its target (bytes/s, FLOP/s)."""

    @property
    def hbm_bandwidth(self) -> float: ...

    @property
    def peak_bf16_flops(self) -> float: ...

    @property
    def peak_fp32_flops(self) -> float: ...


@dataclass(frozen=True)
class TpuCostProfile:
    """A TPU TensorCore: the MXU and HBM at the rates the chip achieves, no waves, no launch,
    collectives over ICI.

    figures: the chip's peaks and HBM bandwidth. hbm_efficiency / mxu_efficiency: the share of the
    bandwidth and of each peak the chip achieves (``TpuTarget``'s; 1.0: the figures as they are).
    ici_bandwidth: bytes/s one chip sends into a ring collective (the ICI links one ring uses);
    ici_hop_us: the latency of one ring step, µs.
    """

    figures: TpuFigures
    ici_bandwidth: float
    ici_hop_us: float = 0.0
    platform: str = "tpu"
    launch_us: float = 0.0
    hbm_efficiency: float = 1.0
    mxu_efficiency: float = 1.0
    vmem_bandwidth: float = 0.0
    unaligned_contraction_efficiency: float = 1.0
    chain_input_rate: float = 0.0

    @property
    def hbm_bandwidth(self) -> float:
        return self.figures.hbm_bandwidth * self.hbm_efficiency

    def on_chip_us(self, nbytes: int) -> float:
        return nbytes / self.vmem_bandwidth * 1e6 if self.vmem_bandwidth > 0 and nbytes else 0.0

    def contraction_efficiency(self, k: int) -> float:
        return 1.0 if k % MXU_EDGE == 0 else self.unaligned_contraction_efficiency

    def chain_input_us(self, nbytes: int) -> float:
        return nbytes / self.chain_input_rate * 1e6 if self.chain_input_rate > 0 and nbytes else 0.0

    def peak_flops(self, element_type: str) -> float:
        if element_type in ("f32", "f64", "c64", "c128"):
            return self.figures.peak_fp32_flops * self.mxu_efficiency
        return self.figures.peak_bf16_flops * self.mxu_efficiency

    def matmul_efficiency(self, batch: int, m: int, n: int) -> float:
        return 1.0

    def on_chip(self, memory_space: int) -> bool:
        return memory_space in TPU_ON_CHIP_SPACES

    def collective_us(self, kind: str, nbytes: int, group: tuple[int, ...], devices: int) -> float:
        n = len(group)
        return ring_steps(kind, n) * self.ici_hop_us + ring_traffic(kind, nbytes, n) / self.ici_bandwidth * 1e6

    @classmethod
    def of(cls, target: Target) -> TpuCostProfile:
        """The profile of a TPU target: its per-op time its ``kernel_launch_us`` (0 on the built-in TPUs:
        the v5e runs' TensorCore sat idle 0.02 ms of a 187 ms step between its ~180 ops), its ring
        figures its ICI's, its achieved shares of HBM and of the MXU's peak its ``hbm_efficiency`` and
        ``mxu_efficiency``, its on-chip rate and unaligned-contraction share its ``vmem_bandwidth`` and
        ``unaligned_contraction_efficiency``, a fused matmul chain's re-read rate its ``chain_input_rate``."""
        assert isinstance(target, TpuTarget)  # chosen by its platform (cost_profile)
        return cls(target, target.interconnect_bandwidth, target.ici_hop_us, launch_us=target.kernel_launch_us,
                   hbm_efficiency=target.hbm_efficiency, mxu_efficiency=target.mxu_efficiency,
                   vmem_bandwidth=target.vmem_bandwidth,
                   unaligned_contraction_efficiency=target.unaligned_contraction_efficiency,
                   chain_input_rate=target.chain_input_rate)


#: Each platform's profile, built from its target: the cost model's room per platform.
_PROFILES: dict[Platform, Callable[[Target], CostProfile]] = {Platform.GPU: GpuCostProfile.of,
                                                              Platform.TPU: TpuCostProfile.of}


def cost_profile(target: Target) -> CostProfile:
    """The profile that prices ops on ``target``: the one place a platform's cost model is chosen
    (by the target's :class:`~hloscope.targets.Platform`; each profile's ``of`` builds it)."""
    return _PROFILES[target.platform](target)
