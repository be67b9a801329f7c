"""How a step runs on its platform, chosen in one place (docs/targets.md, "Platforms").

The core never asks "is this a GPU?": a pass that depends on how the accelerator runs a
schedule reads the step's :class:`ExecutionModel`, which :func:`execution_model` picks once
from the target's :class:`~hloscope.targets.Platform`.

GPU: XLA:GPU gives every async start an execution stream (``operation_queue_id``; the
stream model of the jaxlib that compiled it, ``hloscope.analysis.structure.streams``); each
stream runs its ops in order, so a host copy issued behind another op on its stream waits
for it. Host copies of one direction move on the target's copy engines.

TPU: one TensorCore runs the schedule in order (a megacore chip's two cores as one device, TPU7x's two
cores as two devices);
async ops have no streams: a host DMA (``dynamic-update-slice-start`` into ``S(5)``,
``dynamic-slice-start`` out of it, ``copy-start`` to or from it) starts when the TensorCore
issues it and moves on the chip's DMA engines, one direction's DMAs sharing the PCIe link
(``host_copy_engines``); on-chip copies (``copy-start`` into ``S(1)`` VMEM) are not host
transfers.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.targets import Platform, Target


@dataclass(frozen=True)
class ExecutionModel:
    """platform: the family. xla_streams: XLA assigns execution streams that the simulation
    follows (GPU); False: async ops run beside the in-order core with no streams (TPU).
    on_chip_spaces: memory spaces that are the chip's own scratch, never its HBM (a TPU's VMEM
    ``S(1)`` and SMEM ``S(2)``); a GPU's ``S(1)`` (collective memory) is device memory."""

    platform: Platform
    xla_streams: bool
    on_chip_spaces: frozenset[int] = frozenset()


_MODELS = {
    Platform.GPU: ExecutionModel(Platform.GPU, xla_streams=True),
    Platform.TPU: ExecutionModel(Platform.TPU, xla_streams=False, on_chip_spaces=frozenset({1, 2})),
}


def execution_model(target: Target) -> ExecutionModel:
    """The execution model of ``target``'s platform."""
    return platform_model(target.platform)


def platform_model(platform: Platform) -> ExecutionModel:
    """The execution model of ``platform``."""
    return _MODELS[platform]
