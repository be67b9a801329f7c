"""The interface every platform's analysis room fills: how a step runs on it (docs/targets.md, "Platforms").

The core never asks "is this a GPU?": a pass or a loader that depends on the platform reads the
step's :class:`PlatformBackend`, which :func:`hloscope.analysis.platforms.backend_for` picks once from
the target's :class:`~hloscope.targets.Platform`. Each platform is one room beside this module
(``gpu.py``, ``tpu.py``); a third platform is one more room and one more row of the registry.
"""

from __future__ import annotations

from typing import Protocol

from hloscope.analysis.measured.compare import OpClassName
from hloscope.analysis.structure.backend import CompiledFor
from hloscope.targets import Platform, Target, TargetOrigin


class PlatformBackend(Protocol):
    """What differs by platform in reading and judging a step.

    platform: the family. xla_streams: XLA assigns execution streams that the simulation follows
    (GPU); False: async ops run beside the in-order core with no streams (TPU). on_chip_spaces:
    memory spaces that are the chip's own scratch, never its HBM (a TPU's VMEM ``S(1)`` and SMEM
    ``S(2)``); a GPU's ``S(1)`` (collective memory) is device memory.
    """

    @property
    def platform(self) -> Platform: ...

    @property
    def xla_streams(self) -> bool: ...

    @property
    def on_chip_spaces(self) -> frozenset[int]: ...

    def default_target(self, found: CompiledFor) -> tuple[Target, TargetOrigin]:
        """The target a module ``found`` compiled for this platform is judged on when nothing names one."""
        ...

    def class_errors(self, calibrated: bool) -> dict[OpClassName, float]:
        """Per op class, the model's error measured on this platform (predicted over measured, minus 1),
        with the datasheet target or a calibrated one: the margins' error corners
        (``hloscope.analysis.simulate.margin.class_error_factors``)."""
        ...

    def host_pool_bytes(self, asked: int) -> int:
        """The pinned-host pool a step is checked against: ``asked`` (the option's) where the runtime caps
        pinned host memory per process (PJRT's GPU client, ``XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB``), or 0
        (not checked) where it publishes no such limit."""
        ...


#: Per op class, the model's error measured on process 1 of the A100 archives (predicted over
#: measured, minus 1; docs/accuracy.md "Calibrating on one process, predicting another"):
#: with the datasheet target, and with the target calibrated on process 0. A platform that measured a
#: class of its own replaces it; the others (a TPU's collectives: no TPU run has one) take these.
A100_DATASHEET_ERRORS: dict[OpClassName, float] = {
    OpClassName.GEMM: -0.136, OpClassName.KERNEL: -0.305, OpClassName.ALL_GATHER: -0.676,
    OpClassName.ALL_REDUCE: -0.478, OpClassName.REDUCE_SCATTER: -0.809,
}
A100_CALIBRATED_ERRORS: dict[OpClassName, float] = {
    OpClassName.GEMM: 0.024, OpClassName.KERNEL: 0.006, OpClassName.ALL_GATHER: 0.536,
    OpClassName.ALL_REDUCE: -0.602, OpClassName.REDUCE_SCATTER: -0.043,
}
