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
from hloscope.analysis.measured.compare import OpClassName
from hloscope.analysis.platforms.base import A100_CALIBRATED_ERRORS, A100_DATASHEET_ERRORS
from hloscope.analysis.structure.backend import CompiledFor
from hloscope.targets import DEFAULT_TPU_TARGET, Platform, Target, TargetOrigin, get_target, target_for_tpu

#: The margins' errors on a TPU, measured on the v5e runs (fixtures/measured/tpu_v5e*/; ``benchmarks/tpu_accuracy.py
#: --class-errors``): per op class, the largest error of ``--measured`` over the 17 transformer-block runs held out of
#: every fit, with the datasheet tpu-v5e (GEMMs -2.9% on `mha_off`, other kernels +6.3% on `gqa_dev`). Until the
#: blocks were priced they were `big`'s alone (GEMMs +0.1%, other kernels -30.0%, before the on-chip rate). A
#: calibrated TPU target takes the same: on v5e every run's fit lies within the spread, so none was measured
#: calibrated. No TPU run has a collective: a TPU's collectives take the A100's errors.
TPU_DATASHEET_ERRORS: dict[OpClassName, float] = {OpClassName.GEMM: -0.029, OpClassName.KERNEL: 0.063}
TPU_CALIBRATED_ERRORS: dict[OpClassName, float] = dict(TPU_DATASHEET_ERRORS)


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

    def class_errors(self, calibrated: bool) -> dict[OpClassName, float]:
        own = TPU_CALIBRATED_ERRORS if calibrated else TPU_DATASHEET_ERRORS
        return {**(A100_CALIBRATED_ERRORS if calibrated else A100_DATASHEET_ERRORS), **own}

    def host_pool_bytes(self, asked: int) -> int:
        return 0


TPU = TpuBackend()
