"""The GPU's analysis room: XLA's execution streams, device memory only, PJRT's pinned-host pool.

XLA:GPU gives every async start an execution stream (``operation_queue_id``; the stream model of the
jaxlib that compiled it, ``hloscope.analysis.structure.streams``); each stream runs its ops in order,
so a host copy issued behind another op on its stream waits for it. Host copies of one direction move
on the target's copy engines. PJRT's GPU client pins host memory from one pool per process
(``XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB``), which a step's host bytes must fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.measured.compare import OpClassName
from hloscope.analysis.platforms.base import A100_CALIBRATED_ERRORS, A100_DATASHEET_ERRORS
from hloscope.analysis.structure.backend import CompiledFor
from hloscope.targets import Platform, Target, TargetOrigin, as_target


@dataclass(frozen=True)
class GpuBackend:
    """A GPU (:class:`~hloscope.analysis.platforms.base.PlatformBackend`)."""

    platform: Platform = Platform.GPU
    xla_streams: bool = True
    on_chip_spaces: frozenset[int] = frozenset()

    def default_target(self, found: CompiledFor) -> tuple[Target, TargetOrigin]:
        return as_target(None), TargetOrigin.DEFAULT

    def class_errors(self, calibrated: bool) -> dict[OpClassName, float]:
        return dict(A100_CALIBRATED_ERRORS if calibrated else A100_DATASHEET_ERRORS)

    def host_pool_bytes(self, asked: int) -> int:
        return asked


GPU = GpuBackend()
