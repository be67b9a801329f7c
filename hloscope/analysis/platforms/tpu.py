"""The TPU's analysis room: one in-order TensorCore, DMA queues without streams, VMEM and SMEM on the chip.

One TensorCore runs the schedule in order (a megacore chip's two cores as one device, TPU7x's two
cores as two devices); async ops have no streams: a host DMA (``dynamic-update-slice-start`` into
``S(5)``, ``dynamic-slice-start`` out of it, ``copy-start`` to or from it) starts when the TensorCore
issues it and moves on the chip's DMA engines, one direction's DMAs sharing the PCIe link
(``host_copy_engines``); on-chip copies (``copy-start`` into ``S(1)`` VMEM) are not host transfers.
The TPU runtime publishes no pinned-host limit. A module with no target named is judged on the chip
its dump names, else on the default TPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.cost.profile import TPU_ON_CHIP_SPACES
from hloscope.analysis.structure.backend import CompiledFor
from hloscope.targets import DEFAULT_TPU_TARGET, Platform, Target, TargetOrigin, get_target, target_for_tpu


@dataclass(frozen=True)
class TpuBackend:
    """A TPU (:class:`~hloscope.analysis.platforms.base.PlatformBackend`)."""

    platform: Platform = Platform.TPU
    xla_streams: bool = False
    on_chip_spaces: frozenset[int] = TPU_ON_CHIP_SPACES

    def default_target(self, found: CompiledFor) -> tuple[Target, TargetOrigin]:
        chip = target_for_tpu(found.tpu_version, found.tpu_variant)
        if chip is not None:
            return chip, TargetOrigin.DUMP
        return get_target(DEFAULT_TPU_TARGET), TargetOrigin.PLATFORM

    def host_pool_bytes(self, asked: int) -> int:
        return 0


TPU = TpuBackend()
