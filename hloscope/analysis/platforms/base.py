"""The interface every platform's analysis room fills: how a step runs on it (docs/targets.md, "Platforms").

The core never asks "is this a GPU?": a pass or a loader that depends on the platform reads the
step's :class:`PlatformBackend`, which :func:`hloscope.analysis.platforms.backend_for` picks once from
the target's :class:`~hloscope.targets.Platform`. Each platform is one room beside this module
(``gpu.py``, ``tpu.py``); a third platform is one more room and one more row of the registry.
"""

from __future__ import annotations

from typing import Protocol

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

    def host_pool_bytes(self, asked: int) -> int:
        """The pinned-host pool a step is checked against: ``asked`` (the option's) where the runtime caps
        pinned host memory per process (PJRT's GPU client, ``XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB``), or 0
        (not checked) where it publishes no such limit."""
        ...
