"""TPU targets: one chip's fields as the compiler and the cost model see it. The figures of the built-in
TPUs are in ``data/tpu.toml``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from hloscope.targets.model import BYTES, COUNT, LATENCY, NOTE, RATE, SHARE, TEXT, Platform, Target


@dataclass(frozen=True, kw_only=True)
class TpuTarget(Target):
    """One TPU chip as the compiler and the cost model see it: the common fields and the TPU's own.

    generation: the chip's name in Google's documents (``v5e``, ``v5p``, ``Ironwood``).
    topology_prefix: the generation as ``get_topology_desc`` names topologies (``v5e`` in
    ``v5e:2x2``, ``v5`` for v5p, ``tpu7x``). cores_per_chip: TensorCores on one chip (2 on v4, v5p
    and TPU7x; v4's and v5p's as one "megacore" device, TPU7x's as two devices, libtpu having no megacore
    config for it; 1 on v5e and v6e). chips_per_host: chips
    one host VM drives (its PCIe links), for the compile-only topology. ici_hop_us: latency of one
    step of a collective over ICI. kernel_launch_us: 0 (the v5e runs' TensorCore was idle 0.02 ms of a
    187 ms step between its ops, fixtures/measured/tpu_v5e/). host_memory_per_chip: host (CPU)
    memory per chip, bytes (0: unknown).
    tpu_version / tpu_variant: how XLA's TPU compiler names the chip in a dump's
    ``*.target_arguments.txt`` (``TPU_VERSION_VIPERFISH`` with variant ``lite`` is v5e).
    hbm_efficiency / mxu_efficiency: the share of ``hbm_bandwidth`` an op streaming HBM achieves and
    the share of the bf16/fp32 peak a large matmul achieves, measured on the chip (1.0 where no chip
    was measured: the datasheet's figure is taken as reached). The cost model prices a TPU op at these
    achieved rates (``hloscope.analysis.cost.profile``); docs/cost-model.md, "TPU: achieved rates".
    vmem_bandwidth: bytes/s an op streams through the chip's VMEM/SMEM, measured (0 where no chip was
    measured: on-chip bytes cost nothing). unaligned_contraction_efficiency: the share of the MXU rate a
    matmul keeps when its contraction is not a multiple of 128, measured (1.0 where not).
    chain_input_rate: bytes/s; a fused matmul chain (an MLP's two matmuls in one fusion) whose first
    matmul's activation lies in HBM takes that activation's bytes over this rate longer than the
    roofline, measured (0 where no chip was measured: not priced; ``hloscope.analysis.cost.chains``).
    hbm_available_per_device: bytes libtpu lets one device's program use (a megacore chip's on v4
    and v5p). hbm_available_per_core: the same for one TensorCore where libtpu can show a chip as
    two devices (``chip_config_name="default"`` on v4); 0 where it cannot (v5p's default config is
    one device per chip too; v5e and v6e have one core).
    Sources: docs/targets.md, "TPU targets".
    """

    platform: ClassVar[Platform] = Platform.TPU

    generation: str = field(metadata=TEXT)
    topology_prefix: str = field(metadata=TEXT)
    kernel_launch_us: float = field(default=0.0, metadata=LATENCY)
    cores_per_chip: int = field(default=1, metadata=COUNT)
    chips_per_host: int = field(default=4, metadata=COUNT)
    ici_hop_us: float = field(default=1.0, metadata=LATENCY)
    host_memory_per_chip: int = field(default=0, metadata=BYTES)
    tpu_version: str = field(default="", metadata=NOTE)
    tpu_variant: str = field(default="", metadata=NOTE)
    hbm_available_per_device: int = field(default=0, metadata=BYTES)
    hbm_available_per_core: int = field(default=0, metadata=BYTES)
    hbm_efficiency: float = field(default=1.0, metadata=SHARE)
    mxu_efficiency: float = field(default=1.0, metadata=SHARE)
    vmem_bandwidth: float = field(default=0.0, metadata=RATE)
    unaligned_contraction_efficiency: float = field(default=1.0, metadata=SHARE)
    chain_input_rate: float = field(default=0.0, metadata=RATE)

    @property
    def host_memory_per_device(self) -> int:
        return self.host_memory_per_chip

    @property
    def memory_per_device(self) -> int:
        """What libtpu lets one device's program use (``hbm_available_per_device``), else the chip's HBM."""
        return self.hbm_available_per_device or self.device_memory_size

    @property
    def device_word(self) -> str:
        return "chip"
