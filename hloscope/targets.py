"""GPU targets: the GpuTargetConfig XLA compiles for, and the cost-model figures.

Pure data, no JAX. Every figure's source is listed in docs/targets.md. Units:
bytes, bytes per second, FLOP/s. ``host_link_*`` is per direction, because a
host offload is a one-way stream (device to host in the forward pass, host to
device in the backward pass). A host link has a peak and, where one was
measured, an achieved bandwidth; ``host_link_gpus`` GPUs share one link (two
Blackwell GPUs per Grace CPU in a GB200 superchip), and in an SPMD step they
all stream at once, so each gets its share (:meth:`Target.host_link_bandwidth`).

A user target is a TOML or JSON file with the same field names as
:class:`Target` (see docs/targets.md); ``get_target`` accepts a name or a path.
Every value is checked; a bad one is an error naming its key (exit 2).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import MISSING, asdict, dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

from hloscope.errors import EXIT_BAD_INPUT, EXIT_UNKNOWN_NAME, HloscopeError
from hloscope.vocab import Direction, LinkMode

GB = 1e9
TB = 1e12

#: How the cost model reads a host link: its measured (achieved) or its peak bandwidth.
LINK_MODES: tuple[str, ...] = tuple(LinkMode)
DEFAULT_LINK_MODE = LinkMode.ACHIEVED


class Platform(StrEnum):
    """An accelerator family: what differs between them (figures, how ops run and cost, how profiles
    name ops) is chosen once from this value (docs/targets.md, "Platforms")."""

    GPU = "gpu"
    TPU = "tpu"


@dataclass(frozen=True, kw_only=True)
class Target:
    """One accelerator as the cost model sees it: the fields every platform has.

    name: short id used on the command line. description: marketing name, for reports.
    device_memory_size: HBM capacity, bytes. hbm_bandwidth: HBM bandwidth, bytes/s.
    peak_bf16_flops / peak_fp32_flops: dense peak, FLOP/s.
    host_link_to_host / host_link_to_device: device<->CPU link peak, bytes/s per direction.
    host_link: name of that link, for reports.
    host_link_achieved_to_host / host_link_achieved_to_device: what a copy achieves on that link,
    bytes/s per direction; None where no measurement is known (the peak is used).
    interconnect_bandwidth: device<->device (NVLink, ICI) bytes/s per direction.
    kernel_launch_us: fixed time per op (a GPU kernel's launch; a TPU op's issue);
    collective_launch_us: per collective; host_dma_latency_us: setup latency of a host copy
    before its bytes flow.
    collective_figures: measured per-kind figures, ``(kind, bytes/s, latency µs)``, that replace the
    interconnect model's bandwidth and latency for that kind (a calibrated target: ``hloscope
    calibrate``, docs/accuracy.md); empty for the datasheet targets. In a target file:
    ``[collective_figures.all-gather]`` with ``bandwidth`` and ``latency_us``.
    host_copy_engines: host copies of one direction that move bytes at the same time; the others
    wait for one to finish, first ready first served (docs/targets.md, "Copy engines").
    calibrated_on: what a calibrated target was fitted on (``hloscope calibrate``); "" for a datasheet target.
    calibrated_step_error: a calibrated target's simulated step on the run it was fitted on, over that
    run's measured step, minus 1 (its in-sample error, rounded away from 0); the error band ``analyze``
    prints with the target never claims less (``hloscope.analysis.simulate.margin``). 0 for a datasheet target.
    run_spread: per figure ``hloscope calibrate`` fits (``hbm_bandwidth``, ``peak_bf16_flops``,
    ``host_link_achieved_to_host`` ...), the largest departure, as a fraction, of one run's fitted value
    from this target's across the measured runs its figures were fitted on: a fit within it is no evidence
    that a program differs from those runs, and calibrate keeps the target's value (docs/accuracy.md,
    "Calibrating"). In a target file: a table ``[run_spread]`` of figure = fraction. Empty: not measured.
    host_map_bandwidth / host_map_fixed_us / host_map_several: what the runtime spends on every call
    mapping a step's fresh pinned-host outputs for DMA before the program starts (bytes/s; µs per call
    with any; the factor on the bytes' time when several buffers are mapped at once); None: not known
    (the call's host work is not priced). host_map_source: where those figures come from ("measured:
    ...", "assumed: ..."; docs/accuracy.md, "Host buffers a call maps").
    """

    #: The family (a class constant, never a field: a GPU target cannot be a TPU).
    platform: ClassVar[Platform]

    name: str
    description: str
    device_memory_size: int
    hbm_bandwidth: float
    peak_bf16_flops: float
    peak_fp32_flops: float
    host_link_to_host: float
    host_link_to_device: float
    host_link: str
    interconnect_bandwidth: float
    host_link_achieved_to_host: float | None = None
    host_link_achieved_to_device: float | None = None
    kernel_launch_us: float = 1.0
    collective_launch_us: float = 5.0
    host_dma_latency_us: float = 2.0
    collective_figures: tuple[tuple[str, float, float], ...] = ()
    host_copy_engines: int = 1
    calibrated_on: str = ""
    calibrated_step_error: float = 0.0
    run_spread: tuple[tuple[str, float], ...] = ()
    host_map_bandwidth: float | None = None
    host_map_fixed_us: float = 0.0
    host_map_several: float = 1.0
    host_map_source: str = ""

    @property
    def calibrated(self) -> bool:
        """Fitted by ``hloscope calibrate`` (``calibrated_on`` says on what), not a datasheet target."""
        return bool(self.calibrated_on)

    @property
    def host_link_sharers(self) -> int:
        """Devices that share one host link and stream over it at once (1 unless a family says)."""
        return 1

    @property
    def host_memory_per_device(self) -> int:
        """Host (CPU) memory per device, bytes: the ceiling for pinned-host buffers (0: unknown)."""
        return 0

    @property
    def memory_per_device(self) -> int:
        """Device memory one JAX device's program may use, bytes: the figure a step's peak must fit."""
        return self.device_memory_size

    @property
    def device_word(self) -> str:
        """What one device of this family is called (``GPU``, ``chip``)."""
        return "device"

    def collective_figure(self, kind: str) -> tuple[float, float] | None:
        """(bytes/s, latency µs) measured for collectives of ``kind``, or None (the interconnect model)."""
        for k, bw, lat in self.collective_figures:
            if k == kind:
                return bw, lat
        return None

    def host_link_bandwidth(self, direction: Direction, mode: LinkMode | str = DEFAULT_LINK_MODE) -> float:
        """Bytes/s one device gets from its host link in ``direction`` (``to_host`` or
        ``to_device``), reading the ``achieved`` or ``peak`` figure, divided among the
        :attr:`host_link_sharers` devices that share the link (they stream at once in SPMD)."""
        if mode not in LINK_MODES:
            raise ValueError(f"link mode must be one of {', '.join(LINK_MODES)}, not {mode!r}")
        to_host = Direction(direction) is Direction.TO_HOST
        peak = self.host_link_to_host if to_host else self.host_link_to_device
        bw = peak
        if mode == LinkMode.ACHIEVED:
            achieved = self.host_link_achieved_to_host if to_host else self.host_link_achieved_to_device
            bw = achieved if achieved is not None else peak
        return bw / self.host_link_sharers

    def peak_flops(self, element_type: str) -> float:
        """Dense peak FLOP/s for math in ``element_type``."""
        if element_type in ("bf16", "f16"):
            return self.peak_bf16_flops
        return self.peak_fp32_flops

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["platform"] = str(self.platform)
        d["collective_figures"] = {k: {"bandwidth": bw, "latency_us": lat} for k, bw, lat in self.collective_figures}
        d["run_spread"] = dict(self.run_spread)
        return d

    def spread_of(self, figure: str) -> float | None:
        """``run_spread``'s fraction for ``figure``; None where it was not measured."""
        return next((v for k, v in self.run_spread if k == figure), None)


@dataclass(frozen=True, kw_only=True)
class GpuTarget(Target):
    """One GPU as XLA and the cost model see it: the common fields and CUDA's own.

    compute_capability: (major, minor) CUDA compute capability. core_count: streaming
    multiprocessors. clock_rate_ghz: boost clock, GHz. l2_cache_size: bytes.
    peak_fp8_flops: dense FP8 peak, FLOP/s. peak_fp4_flops: dense FP4 peak, FLOP/s; None where the GPU
    has no FP4 tensor cores (FP4 math then runs at the FP8 peak at best).
    host_link_gpus: GPUs that share one host link (1, or 2 for GB200).
    host_memory_per_gpu: host (CPU) memory per GPU, bytes: the ceiling for pinned-host
    offload buffers (0: unknown, not checked).
    gpus_per_host: GPUs in one host (8 in an HGX/DGX node, 4 in a GB200 compute tray,
    1 in a GH200 node). hosts_per_nvlink_domain: hosts one NVLink domain spans (1 for HGX/DGX and GH200
    nodes, 18 trays in a GB200 NVL72 rack); with ``gpus_per_host`` they decide the
    compile-only topology (``hloscope.compile.cuda.topology``, docs/targets.md).
    network_bandwidth: bytes/s per GPU per direction between NVLink domains (its NIC).
    nvlink_hop_us / network_hop_us: latency of one step of a ring collective inside one
    NVLink domain / across the network. Sources of all of them: docs/targets.md.
    shared_memory_per_core / shared_memory_per_block_optin: bytes, for XLA's tiling.
    """

    platform: ClassVar[Platform] = Platform.GPU

    compute_capability: tuple[int, int]
    core_count: int
    clock_rate_ghz: float
    l2_cache_size: int
    peak_fp8_flops: float
    shared_memory_per_core: int = 233472
    shared_memory_per_block_optin: int = 232448
    host_link_gpus: int = 1
    host_memory_per_gpu: int = 0
    gpus_per_host: int = 8
    hosts_per_nvlink_domain: int = 1
    peak_fp4_flops: float | None = None
    network_bandwidth: float = 50 * GB
    nvlink_hop_us: float = 2.5
    network_hop_us: float = 2.5

    @property
    def host_link_sharers(self) -> int:
        return self.host_link_gpus

    @property
    def host_memory_per_device(self) -> int:
        return self.host_memory_per_gpu

    @property
    def device_word(self) -> str:
        return "GPU"

    def peak_flops(self, element_type: str) -> float:
        """Dense peak FLOP/s for math in ``element_type``."""
        if element_type.startswith("f4"):
            return self.peak_fp4_flops or self.peak_fp8_flops
        if element_type.startswith("f8") or element_type in ("s8", "u8"):
            return self.peak_fp8_flops
        return super().peak_flops(element_type)

    def gpu_target_config(self) -> str:
        """GpuTargetConfigProto in text form, as ``get_topology_desc`` wants it."""
        major, minor = self.compute_capability
        return (
            "gpu_device_info {\n"
            "  threads_per_block_limit: 1024\n"
            "  threads_per_warp: 32\n"
            "  shared_memory_per_block: 49152\n"
            f"  shared_memory_per_core: {self.shared_memory_per_core}\n"
            "  threads_per_core_limit: 2048\n"
            f"  core_count: {self.core_count}\n"
            "  fpus_per_core: 128\n"
            "  block_dim_limit_x: 2147483647\n"
            "  block_dim_limit_y: 65535\n"
            "  block_dim_limit_z: 65535\n"
            f"  memory_bandwidth: {int(self.hbm_bandwidth)}\n"
            f"  l2_cache_size: {self.l2_cache_size}\n"
            f"  clock_rate_ghz: {self.clock_rate_ghz}\n"
            f"  device_memory_size: {self.device_memory_size}\n"
            f"  shared_memory_per_block_optin: {self.shared_memory_per_block_optin}\n"
            f"  cuda_compute_capability {{ major: {major} minor: {minor} }}\n"
            "  registers_per_core_limit: 65536\n"
            "  registers_per_block_limit: 65536\n"
            "}\n"
            'platform_name: "CUDA"\n'
            "dnn_version_info { major: 9 minor: 8 }\n"
            f'device_description_str: "{self.description}"\n'
        )

    def to_dict(self) -> dict[str, object]:
        d = super().to_dict()
        d["compute_capability"] = list(self.compute_capability)
        return d


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
    hbm_available_per_device: bytes libtpu lets one device's program use (a megacore chip's on v4
    and v5p). hbm_available_per_core: the same for one TensorCore where libtpu can show a chip as
    two devices (``chip_config_name="default"`` on v4); 0 where it cannot (v5p's default config is
    one device per chip too; v5e and v6e have one core).
    Sources: docs/targets.md, "TPU targets".
    """

    platform: ClassVar[Platform] = Platform.TPU

    generation: str
    topology_prefix: str
    kernel_launch_us: float = 0.0
    cores_per_chip: int = 1
    chips_per_host: int = 4
    ici_hop_us: float = 1.0
    host_memory_per_chip: int = 0
    tpu_version: str = ""
    tpu_variant: str = ""
    hbm_available_per_device: int = 0
    hbm_available_per_core: int = 0
    hbm_efficiency: float = 1.0
    mxu_efficiency: float = 1.0
    vmem_bandwidth: float = 0.0
    unaligned_contraction_efficiency: float = 1.0

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


_PCIE5 = 64 * GB  # PCIe Gen5 x16: 128 GB/s bidirectional, 64 GB/s each way
_PCIE5_ACHIEVED = 55 * GB  # copies achieve about 52-57 GB/s of the 64 (docs/targets.md)
_PCIE4 = 32 * GB  # PCIe Gen4 x16: 64 GB/s bidirectional, 32 GB/s each way
_C2C = 450 * GB  # NVLink-C2C: 900 GB/s bidirectional, 450 GB/s each way
_C2C_ACHIEVED_TO_DEVICE = 375 * GB  # measured on GH200 (docs/targets.md)
_C2C_ACHIEVED_TO_HOST = 297 * GB
# Per-target achieved figures chosen from HOST_LINK_MEASUREMENTS (docs/targets.md, "Host link: measured"):
# the measurement taken on a training node where one exists, per link (x host_link_gpus).
_GH200_ACHIEVED_TO_HOST = 170 * GB  # NVIDIA/Megatron-LM#6491, nvbandwidth CE on 4x GH200
_GH200_ACHIEVED_TO_DEVICE = 411.57 * GB  # the same run, its low end
_GB200_ACHIEVED_TO_HOST = 2 * 155 * GB  # marin logbook M30A-014: 155 GB/s per GPU, two GPUs per Grace
_GB300_ACHIEVED_TO_HOST = 2 * 193.48 * GB  # NVIDIA/Megatron-LM#6491, nvbandwidth CE on 4x GB300, per GPU
_GB300_ACHIEVED_TO_DEVICE = 2 * 211.46 * GB

BUILTIN_TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        GpuTarget(name="h100-sxm", description="NVIDIA H100 80GB HBM3", compute_capability=(9, 0), core_count=132,
                  clock_rate_ghz=1.98, l2_cache_size=50 * 2**20, device_memory_size=80 * 2**30,
                  hbm_bandwidth=3.35 * TB, peak_bf16_flops=989e12, peak_fp8_flops=1979e12,
                  peak_fp32_flops=67e12, host_link_to_host=_PCIE5, host_link_to_device=_PCIE5,
                  host_link="PCIe Gen5 x16", interconnect_bandwidth=450 * GB,
                  host_link_achieved_to_host=_PCIE5_ACHIEVED, host_link_achieved_to_device=_PCIE5_ACHIEVED,
                  host_memory_per_gpu=int(2 * TB) // 8),
        GpuTarget(name="h200", description="NVIDIA H200", compute_capability=(9, 0), core_count=132,
                  clock_rate_ghz=1.98, l2_cache_size=50 * 2**20, device_memory_size=141 * 10**9,
                  hbm_bandwidth=4.8 * TB, peak_bf16_flops=989e12, peak_fp8_flops=1979e12,
                  peak_fp32_flops=67e12, host_link_to_host=_PCIE5, host_link_to_device=_PCIE5,
                  host_link="PCIe Gen5 x16", interconnect_bandwidth=450 * GB,
                  host_link_achieved_to_host=_PCIE5_ACHIEVED, host_link_achieved_to_device=_PCIE5_ACHIEVED,
                  host_memory_per_gpu=int(2 * TB) // 8),
        GpuTarget(name="gh200", description="NVIDIA GH200 480GB", compute_capability=(9, 0), core_count=132,
                  clock_rate_ghz=1.98, l2_cache_size=50 * 2**20, device_memory_size=96 * 2**30,
                  hbm_bandwidth=4.0 * TB, peak_bf16_flops=989e12, peak_fp8_flops=1979e12,
                  peak_fp32_flops=67e12, host_link_to_host=_C2C, host_link_to_device=_C2C,
                  host_link="NVLink-C2C", interconnect_bandwidth=450 * GB,
                  host_link_achieved_to_host=_GH200_ACHIEVED_TO_HOST,
                  host_link_achieved_to_device=_GH200_ACHIEVED_TO_DEVICE, host_memory_per_gpu=int(480 * GB),
                  gpus_per_host=1),
        GpuTarget(name="b200", description="NVIDIA B200", compute_capability=(10, 0), core_count=148,
                  clock_rate_ghz=1.965, l2_cache_size=126 * 2**20, device_memory_size=180 * 10**9,
                  hbm_bandwidth=8.0 * TB, peak_bf16_flops=2250e12, peak_fp8_flops=4500e12,
                  peak_fp32_flops=75e12, host_link_to_host=_PCIE5, host_link_to_device=_PCIE5,
                  host_link="PCIe Gen5 x16", interconnect_bandwidth=900 * GB,
                  host_link_achieved_to_host=_PCIE5_ACHIEVED, host_link_achieved_to_device=_PCIE5_ACHIEVED,
                  host_memory_per_gpu=int(2 * TB) // 8, peak_fp4_flops=9000e12),
        GpuTarget(name="gb200", description="NVIDIA GB200", compute_capability=(10, 0), core_count=148,
                  clock_rate_ghz=1.965, l2_cache_size=126 * 2**20, device_memory_size=186 * 10**9,
                  hbm_bandwidth=8.0 * TB, peak_bf16_flops=2500e12, peak_fp8_flops=5000e12,
                  peak_fp32_flops=80e12, host_link_to_host=_C2C, host_link_to_device=_C2C,
                  host_link="NVLink-C2C", interconnect_bandwidth=900 * GB,
                  host_link_achieved_to_host=_GB200_ACHIEVED_TO_HOST,
                  host_link_achieved_to_device=_C2C_ACHIEVED_TO_DEVICE, host_link_gpus=2,
                  host_memory_per_gpu=int(480 * GB) // 2, gpus_per_host=4, hosts_per_nvlink_domain=18,
                  peak_fp4_flops=10000e12),
        # Blackwell Ultra: NVIDIA GB300 NVL72 figures per GPU (the rack's / 72, dense); SM count,
        # clock and L2 as docs/targets.md says where they come from.
        GpuTarget(name="gb300", description="NVIDIA GB300", compute_capability=(10, 3), core_count=160,
                  clock_rate_ghz=1.965, l2_cache_size=126 * 2**20, device_memory_size=288 * 10**9,
                  hbm_bandwidth=8.0 * TB, peak_bf16_flops=2500e12, peak_fp8_flops=5000e12,
                  peak_fp32_flops=80e12, host_link_to_host=_C2C, host_link_to_device=_C2C,
                  host_link="NVLink-C2C", interconnect_bandwidth=900 * GB,
                  host_link_achieved_to_host=_GB300_ACHIEVED_TO_HOST,
                  host_link_achieved_to_device=_GB300_ACHIEVED_TO_DEVICE, host_link_gpus=2,
                  host_memory_per_gpu=int(17 * TB) // 72, gpus_per_host=4, hosts_per_nvlink_domain=18,
                  peak_fp4_flops=15000e12),
        # Ampere has no FP8 tensor cores: FP8 math runs at the BF16 peak at best. The 40GB part's
        # memory size and shared memory are those of the GpuTargetConfig nsys-jax dumped on one.
        GpuTarget(name="a100-sxm4-40gb", description="NVIDIA A100-SXM4-40GB", compute_capability=(8, 0),
                  core_count=108, clock_rate_ghz=1.41, l2_cache_size=40 * 2**20,
                  device_memory_size=42505273344, hbm_bandwidth=1555e9, peak_bf16_flops=312e12,
                  peak_fp8_flops=312e12, peak_fp32_flops=19.5e12, host_link_to_host=_PCIE4,
                  host_link_to_device=_PCIE4, host_link="PCIe Gen4 x16", interconnect_bandwidth=300 * GB,
                  shared_memory_per_core=167936, shared_memory_per_block_optin=166912,
                  host_memory_per_gpu=int(1 * TB) // 8),
        GpuTarget(name="a100-sxm4-80gb", description="NVIDIA A100-SXM4-80GB", compute_capability=(8, 0),
                  core_count=108, clock_rate_ghz=1.41, l2_cache_size=40 * 2**20, device_memory_size=80 * 2**30,
                  hbm_bandwidth=2039e9, peak_bf16_flops=312e12, peak_fp8_flops=312e12, peak_fp32_flops=19.5e12,
                  host_link_to_host=_PCIE4, host_link_to_device=_PCIE4, host_link="PCIe Gen4 x16",
                  interconnect_bandwidth=300 * GB, shared_memory_per_core=167936,
                  shared_memory_per_block_optin=166912, host_memory_per_gpu=int(2 * TB) // 8),
    )
}

DEFAULT_TARGET = "h100-sxm"

# TPU chips: figures per chip (docs/targets.md, "TPU targets", gives each one's source). Host links:
# the figure Google or the scaling book publishes per chip; where none is published the target says
# what was assumed. Achieved figures are built in only where a chip was measured: v5e's DMAs moved
# 14.74 GB/s to host and 14.19 GB/s to device (fixtures/measured/tpu_v5e/README.md: every transfer whose
# done waited, 64-128 MiB slices), its HBM and MXU the shares below; the other TPUs' figures are the
# datasheet's, and what a chip achieves goes into a calibrated target (`hloscope calibrate`).
_TPU_PCIE_V4 = 16 * GB  # v4: 16 GB/s each way per chip (the Google Cloud figure)
_TPU_PCIE_V5E = 15 * GB  # v5e: ~1.5e10 B/s per chip (jax-ml/scaling-book, "How to Think About TPUs")
_TPU_PCIE_GEN5 = 32 * GB  # v6e: PCIe Gen5, ~32 GB/s each way per chip (Google Cloud TPU v6e page)
# What the TPU runtime spends per call mapping a step's fresh pinned-host outputs (MapDmaBuffer on its
# pjrt-tpu-tasks threads, before the program starts), fitted on one v5e (JAX 0.10.2):
# fixtures/measured/tpu_v5e_hostbuf/fit.json: 22.3 ms + 2.134 ms per MiB, x0.84 when several are mapped at once.
# The other generations run the same runtime on other hosts: v5e's figures, assumed (docs/accuracy.md).
_TPU_MAP_BANDWIDTH = 2**20 / 2.134e-3  # bytes/s: 0.49 GB/s
_TPU_MAP_FIXED_US = 22_300.0
_TPU_MAP_SEVERAL = 0.84
_TPU_MAP_MEASURED = "measured: one TPU v5e, JAX 0.10.2 (fixtures/measured/tpu_v5e_hostbuf)"
_TPU_MAP_ASSUMED = "assumed: the TPU v5e's measured figures (the same runtime; this chip's host not measured)"


# v5e's achieved rates, fitted on the ops of 13 runs on one v5e chip (fixtures/measured/tpu_v5e/ and
# fixtures/measured/tpu_v5e_blocks/mha_remat; the 10 other block runs held out): elementwise and broadcast fusions of
# 64-768 MiB moved 573-685 GB/s of the 819, matmul fusions ran at 146-194 TFLOP/s of the 197; the shares
# with the least time-weighted error over every op (benchmarks/tpu_ops.py --fit; docs/cost-model.md).
_V5E_HBM_EFFICIENCY = 0.80
_V5E_ACHIEVED_TO_HOST = 14.74e9
_V5E_ACHIEVED_TO_DEVICE = 14.19e9
_V5E_MXU_EFFICIENCY = 0.95
# v5e's on-chip rate: the rate at which an op streams its VMEM/SMEM bytes, fitted on the 234 ops with on-chip
# bytes of the same 13 runs (each op the larger of its roofline and its on-chip bytes over the rate; the least
# time-weighted error of a 0.5-8 TB/s grid, benchmarks/tpu_ops.py --fit), held out on 663 ops of 10 block runs.
_V5E_VMEM_BANDWIDTH = 2.5e12
# A matmul contracting over a K that is not a multiple of 128 (XLA lays that operand out with K major): the
# share of the MXU rate left, fitted on the microbenchmark [8192,4000] @ [4000,8192] (0.90), held out on
# K 4160 (-0.6%) (fixtures/measured/tpu_v5e_ops, benchmarks/tpu_ops.py --micro).
_V5E_UNALIGNED_CONTRACTION = 0.90
# How far one run's fit of each figure ``hloscope calibrate`` fits strays from v5e's own, over the same 13 runs
# (the largest departure, rounded up; benchmarks/tpu_accuracy.py --spread): the HBM figure 0.819-1.042 of it,
# bf16 peak 0.911-1.016, the host link D->H 0.967-1.001 (7 runs), H->D 1.000 (4 runs): both directions cross one
# PCIe link on the same DMA engines, so each takes the larger departure of the two.
_V5E_RUN_SPREAD = (("hbm_bandwidth", 0.181), ("peak_bf16_flops", 0.09), ("host_link_achieved_to_host", 0.033),
                   ("host_link_achieved_to_device", 0.033))


def _libtpu_gib(figure: float) -> int:
    """Bytes of a "(95.73G)" in libtpu's out-of-memory message: GiB to two decimals (v5e's 15.75G is the
    15.7 GiB its chip shows). Read with libtpu 0.0.50 (jax 0.12.0.1) on compile-only slices; 0.0.42 says
    0.01G more on v5p, v6e and TPU7x (docs/targets.md, "HBM a program may use")."""
    return round(figure * 2**30)


TPU_TARGETS: tuple[TpuTarget, ...] = (
    TpuTarget(name="tpu-v4", description="Google Cloud TPU v4", generation="v4", topology_prefix="v4",
              device_memory_size=32 * 2**30, hbm_bandwidth=1.2 * TB, peak_bf16_flops=275e12,
              peak_fp32_flops=275e12, host_link_to_host=_TPU_PCIE_V4, host_link_to_device=_TPU_PCIE_V4,
              host_link="PCIe (16 GB/s per chip)", interconnect_bandwidth=45 * GB, cores_per_chip=2,
              chips_per_host=4, tpu_version="TPU_VERSION_PUFFERFISH", hbm_available_per_device=_libtpu_gib(30.75),
              hbm_available_per_core=_libtpu_gib(15.25), host_map_bandwidth=_TPU_MAP_BANDWIDTH,
              host_map_fixed_us=_TPU_MAP_FIXED_US, host_map_several=_TPU_MAP_SEVERAL, host_map_source=_TPU_MAP_ASSUMED),
    TpuTarget(name="tpu-v5e", description="Google Cloud TPU v5e", generation="v5e", topology_prefix="v5e",
              device_memory_size=16 * 2**30, hbm_bandwidth=819e9, peak_bf16_flops=197e12,
              peak_fp32_flops=197e12, host_link_to_host=_TPU_PCIE_V5E, host_link_to_device=_TPU_PCIE_V5E,
              host_link_achieved_to_host=_V5E_ACHIEVED_TO_HOST, host_link_achieved_to_device=_V5E_ACHIEVED_TO_DEVICE,
              hbm_efficiency=_V5E_HBM_EFFICIENCY, mxu_efficiency=_V5E_MXU_EFFICIENCY,
              vmem_bandwidth=_V5E_VMEM_BANDWIDTH, unaligned_contraction_efficiency=_V5E_UNALIGNED_CONTRACTION,
              run_spread=_V5E_RUN_SPREAD,
              host_link="PCIe (15 GB/s per chip)", interconnect_bandwidth=45 * GB, chips_per_host=8,
              tpu_version="TPU_VERSION_VIPERFISH", tpu_variant="lite",
              hbm_available_per_device=16_909_336_064,  # the chip's own: its dumps' device_memory_size
              host_map_bandwidth=_TPU_MAP_BANDWIDTH, host_map_fixed_us=_TPU_MAP_FIXED_US,
              host_map_several=_TPU_MAP_SEVERAL, host_map_source=_TPU_MAP_MEASURED),
    # v5p: no host-link figure is published; v4's 16 GB/s per chip (the same hosts' PCIe) is assumed.
    TpuTarget(name="tpu-v5p", description="Google Cloud TPU v5p", generation="v5p", topology_prefix="v5",
              device_memory_size=95 * 10**9, hbm_bandwidth=2.765 * TB, peak_bf16_flops=459e12,
              peak_fp32_flops=459e12, host_link_to_host=_TPU_PCIE_V4, host_link_to_device=_TPU_PCIE_V4,
              host_link="PCIe (16 GB/s per chip assumed)", interconnect_bandwidth=90 * GB, cores_per_chip=2,
              chips_per_host=4, tpu_version="TPU_VERSION_VIPERFISH", hbm_available_per_device=_libtpu_gib(95.73),
              host_map_bandwidth=_TPU_MAP_BANDWIDTH, host_map_fixed_us=_TPU_MAP_FIXED_US,
              host_map_several=_TPU_MAP_SEVERAL, host_map_source=_TPU_MAP_ASSUMED),
    TpuTarget(name="tpu-v6e", description="Google Cloud TPU v6e (Trillium)", generation="v6e",
              topology_prefix="v6e", device_memory_size=32 * 2**30, hbm_bandwidth=1.64 * TB,
              peak_bf16_flops=918e12, peak_fp32_flops=918e12, host_link_to_host=_TPU_PCIE_GEN5,
              host_link_to_device=_TPU_PCIE_GEN5, host_link="PCIe Gen5 (32 GB/s per chip)",
              interconnect_bandwidth=90 * GB, chips_per_host=8, hbm_available_per_device=_libtpu_gib(31.24),
              host_map_bandwidth=_TPU_MAP_BANDWIDTH, host_map_fixed_us=_TPU_MAP_FIXED_US,
              host_map_several=_TPU_MAP_SEVERAL, host_map_source=_TPU_MAP_ASSUMED),
    # TPU7x: no host-link figure is published; v6e's PCIe Gen5 32 GB/s per chip is assumed. ICI: Google's
    # 1.2 TB/s bidirectional per chip, taken as four links of 150 GB/s each way.
    TpuTarget(name="tpu7x", description="Google Cloud TPU7x (Ironwood)", generation="TPU7x",
              topology_prefix="tpu7x", device_memory_size=192 * 2**30, hbm_bandwidth=7.38 * TB,
              peak_bf16_flops=2307e12, peak_fp32_flops=2307e12, host_link_to_host=_TPU_PCIE_GEN5,
              host_link_to_device=_TPU_PCIE_GEN5, host_link="PCIe Gen5 (32 GB/s per chip assumed)",
              interconnect_bandwidth=150 * GB, cores_per_chip=2, chips_per_host=4,
              hbm_available_per_device=_libtpu_gib(94.74), host_map_bandwidth=_TPU_MAP_BANDWIDTH,
              host_map_fixed_us=_TPU_MAP_FIXED_US, host_map_several=_TPU_MAP_SEVERAL,
              host_map_source=_TPU_MAP_ASSUMED),
)
BUILTIN_TARGETS.update((t.name, t) for t in TPU_TARGETS)

#: The names users type for a built-in target (Google's product names, the scaling book's, MaxText's
#: generation prefixes) -> its name.
TARGET_ALIASES: dict[str, str] = {
    "v4": "tpu-v4", "tpuv4": "tpu-v4",
    "v5e": "tpu-v5e", "v5litepod": "tpu-v5e", "v5lite": "tpu-v5e", "tpu-v5-lite": "tpu-v5e",
    "tpu-v5-lite-podslice": "tpu-v5e", "tpuv5e": "tpu-v5e",
    "v5p": "tpu-v5p", "tpuv5p": "tpu-v5p",
    "v6e": "tpu-v6e", "trillium": "tpu-v6e", "tpu-v6-lite": "tpu-v6e", "tpuv6e": "tpu-v6e",
    "v7x": "tpu7x", "tpu-v7x": "tpu7x", "tpu-7x": "tpu7x", "ironwood": "tpu7x", "tpuv7x": "tpu7x",
}

DEFAULT_TPU_TARGET = "tpu-v5e"



_POSITIVE = ("core_count", "clock_rate_ghz", "l2_cache_size", "device_memory_size", "hbm_bandwidth",
             "peak_bf16_flops", "peak_fp8_flops", "peak_fp32_flops", "host_link_to_host", "host_link_to_device",
             "interconnect_bandwidth", "shared_memory_per_core", "shared_memory_per_block_optin",
             "host_link_achieved_to_host", "host_link_achieved_to_device", "host_link_gpus", "gpus_per_host",
             "hosts_per_nvlink_domain", "peak_fp4_flops", "network_bandwidth", "host_copy_engines",
             "host_map_bandwidth", "host_map_several")
#: Latencies: zero is allowed (a calibrated target may fold them into the bandwidth).
_NON_NEGATIVE = ("kernel_launch_us", "collective_launch_us", "host_dma_latency_us", "nvlink_hop_us",
                 "network_hop_us", "host_map_fixed_us")
_INTEGERS = ("core_count", "l2_cache_size", "device_memory_size", "shared_memory_per_core",
             "shared_memory_per_block_optin", "host_link_gpus", "host_memory_per_gpu", "gpus_per_host",
             "hosts_per_nvlink_domain", "host_copy_engines")
_OPTIONAL = ("host_link_achieved_to_host", "host_link_achieved_to_device", "peak_fp4_flops", "host_map_bandwidth")
_ACHIEVED_OF = {"host_link_to_host": "host_link_achieved_to_host",
                "host_link_to_device": "host_link_achieved_to_device"}


#: What ``hloscope calibrate`` appends to a fitted target's description, before what it was fitted on.
CALIBRATED_ON = ", calibrated on "

_TPU_POSITIVE = ("cores_per_chip", "chips_per_host")
_TPU_INTEGERS = ("cores_per_chip", "chips_per_host", "host_memory_per_chip", "hbm_available_per_core")
#: A TPU's achieved shares of its datasheet figures (``TpuTarget.hbm_efficiency``, ``mxu_efficiency``).
_TPU_SHARES = ("hbm_efficiency", "mxu_efficiency", "unaligned_contraction_efficiency")


def _check(path: Path, data: dict[str, Any], cls: type[Target]) -> dict[str, Any]:
    """Type- and range-check every field of a ``cls`` target; a bad value is an error naming its key."""

    def bad(key: str, want: str) -> HloscopeError:
        return HloscopeError(f"{path}: target field '{key}' must be {want}, not {data[key]!r}", EXIT_BAD_INPUT)

    names = {f.name for f in fields(cls)}
    strings = ("name", "description", "host_link") + (("generation", "topology_prefix") if cls is TpuTarget else ())
    for key in strings:
        if not isinstance(data[key], str) or not data[key]:
            raise bad(key, "a non-empty string")
    if cls is GpuTarget:
        cc = data["compute_capability"]
        if (not isinstance(cc, (list, tuple)) or len(cc) != 2
                or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in cc)):
            raise bad("compute_capability", "two non-negative integers, like [9, 0]")
        data["compute_capability"] = (cc[0], cc[1])
    for f in fields(cls):  # a field with a default may be left out
        if f.default is not MISSING and f.name not in data:
            data[f.name] = f.default
    integers = set(_INTEGERS) | set(_TPU_INTEGERS)
    for key in (*_POSITIVE, *_TPU_POSITIVE):
        if key not in names:
            continue
        v = data.get(key)
        if v is None and key in _OPTIONAL:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 or v == float("inf"):
            raise bad(key, "a positive number")
        if key in integers and not (isinstance(v, int) or float(v).is_integer()):
            raise bad(key, "a positive integer")
        data[key] = int(v) if key in integers else float(v)
    for key in (*_NON_NEGATIVE, "ici_hop_us"):
        if key not in names:
            continue
        v = data[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0 or v == float("inf"):
            raise bad(key, "a non-negative number (µs)")
        data[key] = float(v)
    data["collective_figures"] = _collective_figures(path, data.get("collective_figures", ()))
    data["run_spread"] = _run_spread(path, data.get("run_spread", ()))
    host_key = "host_memory_per_gpu" if cls is GpuTarget else "host_memory_per_chip"
    host_mem = data.get(host_key, 0)
    if isinstance(host_mem, bool) or not isinstance(host_mem, (int, float)) or host_mem < 0 \
            or not float(host_mem).is_integer():
        raise bad(host_key, "a non-negative integer (bytes; 0: unknown)")
    data[host_key] = int(host_mem)
    for key in ("calibrated_on", "host_map_source"):
        if not isinstance(data.get(key, ""), str):
            raise bad(key, "a string")
    err = data["calibrated_step_error"]
    if isinstance(err, bool) or not isinstance(err, (int, float)) or not -1 < err < float("inf"):
        raise bad("calibrated_step_error", "a number above -1 (simulated over measured step, minus 1)")
    data["calibrated_step_error"] = float(err)
    if not data.get("calibrated_on") and CALIBRATED_ON in data["description"]:
        # A file ``hloscope calibrate`` wrote before the field said it only in its description.
        data["calibrated_on"] = data["description"].rsplit(CALIBRATED_ON, 1)[1]
    for key in _TPU_SHARES:
        if key not in names:
            continue
        v = data[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
            raise bad(key, "a share above 0 and at most 1")
        data[key] = float(v)
    if "vmem_bandwidth" in names:
        v = data["vmem_bandwidth"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0 or v == float("inf"):
            raise bad("vmem_bandwidth", "a non-negative number (bytes/s; 0: on-chip bytes not priced)")
        data["vmem_bandwidth"] = float(v)
    for peak_key, achieved_key in _ACHIEVED_OF.items():
        achieved = data.get(achieved_key)
        if achieved is not None and achieved > data[peak_key]:
            raise bad(achieved_key, f"at most {peak_key} ({data[peak_key]:g})")
    return data


#: The kinds a measured collective figure may be given for.
COLLECTIVE_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")


def _collective_figures(path: Path, value: Any) -> tuple[tuple[str, float, float], ...]:
    if isinstance(value, tuple):
        return value
    if not isinstance(value, dict):
        raise HloscopeError(f"{path}: target field 'collective_figures' must be a table of kinds", EXIT_BAD_INPUT)
    out: list[tuple[str, float, float]] = []
    for kind, fig in value.items():
        if kind not in COLLECTIVE_KINDS:
            raise HloscopeError(f"{path}: collective_figures.{kind}: not a collective kind ("
                                f"{', '.join(COLLECTIVE_KINDS)})", EXIT_BAD_INPUT)
        bw = fig.get("bandwidth") if isinstance(fig, dict) else None
        lat = fig.get("latency_us") if isinstance(fig, dict) else None
        ok_bw = isinstance(bw, (int, float)) and not isinstance(bw, bool) and 0 < bw < float("inf")
        ok_lat = isinstance(lat, (int, float)) and not isinstance(lat, bool) and 0 <= lat < float("inf")
        if not (ok_bw and ok_lat):
            raise HloscopeError(f"{path}: collective_figures.{kind} needs bandwidth (bytes/s, > 0) and latency_us "
                                f"(>= 0), not {fig!r}", EXIT_BAD_INPUT)
        out.append((kind, float(bw), float(lat)))  # type: ignore[arg-type]
    return tuple(out)


def _run_spread(path: Path, value: Any) -> tuple[tuple[str, float], ...]:
    if isinstance(value, tuple):
        return value
    if not isinstance(value, dict):
        raise HloscopeError(f"{path}: target field 'run_spread' must be a table of figure = fraction", EXIT_BAD_INPUT)
    out: list[tuple[str, float]] = []
    for figure, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < float("inf"):
            raise HloscopeError(f"{path}: run_spread.{figure} must be a non-negative fraction, not {v!r}",
                                EXIT_BAD_INPUT)
        out.append((str(figure), float(v)))
    return tuple(out)


#: The target class of each platform.
TARGET_CLASSES: dict[Platform, type[Target]] = {Platform.GPU: GpuTarget, Platform.TPU: TpuTarget}


def load_target_file(path: Path) -> Target:
    """Read a user target from TOML or JSON. Missing, unknown or bad fields are errors.

    The family is the ``base`` target's, else the file's ``platform`` (``gpu`` or ``tpu``), else
    ``gpu`` (a file written before TPUs). With ``base``, a file that sets a link's peak
    (``host_link_to_host``) but not its achieved figure drops the base's achieved figure: a
    measurement belongs to the link it was made on.
    """
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise HloscopeError(f"{path}: cannot read target file: {e.strerror}", EXIT_BAD_INPUT) from None
    try:
        data = json.loads(raw) if path.suffix == ".json" else tomllib.loads(raw.decode())
    except (ValueError, UnicodeDecodeError) as e:
        raise HloscopeError(f"{path}: not a valid target file: {e}", EXIT_BAD_INPUT) from None
    if not isinstance(data, dict):
        raise HloscopeError(f"{path}: a target file holds one table of fields", EXIT_BAD_INPUT)
    base_name = data.pop("base", None)
    base = get_target(str(base_name)) if base_name is not None else None
    platform = data.pop("platform", None)
    if platform is not None and platform not in tuple(Platform):
        raise HloscopeError(f"{path}: target field 'platform' must be one of {', '.join(Platform)}, not "
                            f"{platform!r}", EXIT_BAD_INPUT)
    if base is not None and platform is not None and platform != base.platform:
        raise HloscopeError(f"{path}: platform {platform!r} but base {base.name!r} is a {base.platform} target",
                            EXIT_BAD_INPUT)
    cls = type(base) if base is not None else TARGET_CLASSES[Platform(platform or Platform.GPU)]
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        other = [c for p, c in TARGET_CLASSES.items() if c is not cls and set(unknown) <= {f.name for f in fields(c)}]
        hint = f" (fields of a {other[0].platform} target; this one is a {cls.platform} target)" if other else ""
        raise HloscopeError(f"{path}: unknown target field(s): {', '.join(unknown)}{hint}", EXIT_BAD_INPUT)
    if base is not None:
        merged = base.to_dict()
        merged.pop("platform", None)
        for peak_key, achieved_key in _ACHIEVED_OF.items():
            if peak_key in data and achieved_key not in data:
                merged[achieved_key] = None
        merged.update(data)
        data = merged
    required = {f.name for f in fields(cls) if f.default is MISSING}
    missing = sorted(required - set(data))
    if missing:
        raise HloscopeError(f"{path}: incomplete target: missing {', '.join(missing)}", EXIT_BAD_INPUT)
    return cls(**_check(path, data, cls))


def target_for_device(description: str) -> Target | None:
    """The built-in target whose GPU is ``description`` (``device_description_str`` of XLA's
    GpuTargetConfig, ``NVIDIA A100-SXM4-40GB``), or None."""
    return next((t for t in BUILTIN_TARGETS.values()
                 if description and isinstance(t, GpuTarget) and t.description == description), None)


def gpu_only(target: Target, what: str = "compiling") -> GpuTarget:
    """``target`` as a GPU target; one line (exit 2) when it is another family's (``what`` names
    the job that needs a GPU target)."""
    if not isinstance(target, GpuTarget):
        raise HloscopeError(f"{what} for {target.name} needs a GPU target: {target.name} is a {target.platform} target",
                            EXIT_BAD_INPUT)
    return target


def target_for_tpu(version: str, variant: str = "") -> TpuTarget | None:
    """The built-in TPU target XLA's TPU compiler calls ``version`` / ``variant`` in a dump's
    ``*.target_arguments.txt`` (``TPU_VERSION_VIPERFISH`` / ``lite``: v5e), or None (a chip
    not known here)."""
    return next((t for t in TPU_TARGETS if version and t.tpu_version == version and t.tpu_variant == variant), None)


def memory_fraction_problem(value: object) -> str | None:
    """Why ``value`` is not a memory fraction (the share of the HBM JAX's GPU allocator takes,
    ``XLA_PYTHON_CLIENT_MEM_FRACTION``, a number in (0, 1]); None when it is one. The one check of
    ``--memory-fraction``, ``memory-fraction`` in ``[tool.hloscope]`` and the API's argument."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{value!r} is not a number"
    if not 0 < value <= 1:
        return f"{value:g} is not in (0, 1] (the share of the HBM JAX's allocator takes, e.g. 0.9)"
    return None


class TargetOrigin(StrEnum):
    """Where the target a step is judged on came from (the one rule, docs/cli.md: the input's own,
    else the default)."""

    GIVEN = "given"  # --target, or the caller's argument
    MANIFEST = "manifest"  # an hloscope artifact folder's manifest.json
    ARCHIVE = "archive"  # the GPU an nsys-jax archive's GpuTargetConfig names
    REQUEST = "request"  # the compile request's (a step compiled in this run)
    DUMP = "dump"  # the TPU a dump's target_arguments.txt names
    PLATFORM = "platform"  # the default of the module's own platform (a TPU module: DEFAULT_TPU_TARGET)
    DEFAULT = "default"  # none of those: DEFAULT_TARGET


def as_target(target: Target | str | None) -> Target:
    """The one coercion of a target argument where there is no input to take one from (a compile,
    HLO text, a module): a Target as it is, a name or file through :func:`get_target`, None the
    default. Paths resolve with their own target first (``artifact.resolve_target``)."""
    if isinstance(target, Target):
        return target
    return get_target(target or DEFAULT_TARGET)


def get_target(name_or_path: str) -> Target:
    """A built-in target by name or alias (:data:`TARGET_ALIASES`), or a user target from a
    ``.toml``/``.json`` file."""
    if name_or_path in BUILTIN_TARGETS:
        return BUILTIN_TARGETS[name_or_path]
    alias = TARGET_ALIASES.get(name_or_path.lower())
    if alias is not None:
        return BUILTIN_TARGETS[alias]
    p = Path(name_or_path)
    if p.suffix in (".toml", ".json"):
        return load_target_file(p)
    raise HloscopeError(
        f"unknown target '{name_or_path}'; choose one of: {', '.join(BUILTIN_TARGETS)} "
        "(or give a .toml/.json target file)",
        EXIT_UNKNOWN_NAME,
    )

#: PJRT's pinned-host pool per process when ``XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB`` is unset: 64 GiB
#: (``GetGpuHostAllocator``: the variable's value times 2**30, default 64).
DEFAULT_HOST_POOL_BYTES = 64 << 30
HOST_POOL_ENV = "XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB"


@dataclass(frozen=True)
class LinkMeasurement:
    """One published measurement of a host link: ``target``'s GPU moving data ``direction``,
    ``per_gpu`` bytes/s per GPU (every GPU of the node copying at once where the source says so),
    ``source`` (where it was published) and ``how`` (the tool and setting)."""

    target: str
    direction: Direction
    per_gpu: float
    source: str
    how: str


#: Every measured host-link figure hloscope knows, per GPU (docs/targets.md, "Host link: measured").
HOST_LINK_MEASUREMENTS: tuple[LinkMeasurement, ...] = (
    LinkMeasurement("gh200", Direction.TO_HOST, 297 * GB, "Schieffer et al., ICPP '24 (arXiv:2407.07850)",
                    "copy benchmark, one GH200"),
    LinkMeasurement("gh200", Direction.TO_HOST, 295.47 * GB, "vllm-project/vllm#6496",
                    "device_to_host_memcpy_ce, one GH200"),
    LinkMeasurement("gh200", Direction.TO_HOST, 170 * GB, "NVIDIA/Megatron-LM#6491",
                    "nvbandwidth CE GPU->CPU and all_to_host, 4x GH200 (169.90-170.09)"),
    LinkMeasurement("gh200", Direction.TO_HOST, 150 * GB, "NVIDIA/Megatron-LM#6491",
                    "nsys timeline of MoE activation offloading (about 150)"),
    LinkMeasurement("gh200", Direction.TO_DEVICE, 375 * GB, "Schieffer et al., ICPP '24 (arXiv:2407.07850)",
                    "copy benchmark, one GH200"),
    LinkMeasurement("gh200", Direction.TO_DEVICE, 342.39 * GB, "vllm-project/vllm#6496",
                    "host_to_device_memcpy_ce, one GH200"),
    LinkMeasurement("gh200", Direction.TO_DEVICE, 346 * GB, "NVIDIA/nvbandwidth#23", "CE host to device, one GH200"),
    LinkMeasurement("gh200", Direction.TO_DEVICE, 411.57 * GB, "NVIDIA/Megatron-LM#6491",
                    "nvbandwidth CE CPU->GPU, 4x GH200 (411.57-421.14)"),
    LinkMeasurement("gb200", Direction.TO_HOST, 155 * GB, "marin-community/marin .agents/logbooks/mfu30-offload.md",
                    "three 70 ms optimizer-state D2H copies in a training step's xplane (M30A-014)"),
    LinkMeasurement("gb300", Direction.TO_HOST, 193.48 * GB, "NVIDIA/Megatron-LM#6491",
                    "nvbandwidth CE GPU->CPU, 4x GB300 (193.48-193.50)"),
    LinkMeasurement("gb300", Direction.TO_HOST, 181.94 * GB, "NVIDIA/Megatron-LM#6491",
                    "nvbandwidth CE all_to_host, 4x GB300 (181.94-183.85)"),
    LinkMeasurement("gb300", Direction.TO_DEVICE, 211.46 * GB, "NVIDIA/Megatron-LM#6491",
                    "nvbandwidth CE CPU->GPU, 4x GB300 (211.46-211.54)"),
    LinkMeasurement("gb300", Direction.TO_DEVICE, 168.60 * GB, "NVIDIA/Megatron-LM#6491",
                    "nvbandwidth CE host_to_all, 4x GB300 (168.60-175.41)"),
)


def link_range(target: Target, direction: Direction) -> tuple[float, float, float] | None:
    """(low, used, high) per GPU, bytes/s: the published measurements of ``target``'s link in
    ``direction`` beside the figure the target uses (None when none is published)."""
    got = [m.per_gpu for m in HOST_LINK_MEASUREMENTS if m.target == target.name and m.direction is direction]
    if not got:
        return None
    used = target.host_link_bandwidth(direction)
    return min(*got, used), used, max(*got, used)



@dataclass(frozen=True)
class CopyEngineCount:
    """One published ``deviceQuery`` line of ``target``'s GPU: "Concurrent copy and kernel
    execution: Yes with ``async_engines`` copy engine(s)" (``cudaDeviceProp.asyncEngineCount``,
    both directions together), as printed by ``gpu`` with ``driver`` (CUDA driver / runtime),
    published at ``source``."""

    target: str
    gpu: str
    async_engines: int
    driver: str
    source: str


#: Every published asyncEngineCount hloscope knows (docs/targets.md, "Copy engines"). None was
#: found for h200, b200, gb200 or gb300. The count is of both directions together; what one
#: direction runs at once was measured separately: same-direction copies on different streams
#: run one after another, first ready first served (meta-pytorch/torchrec#4303, #4315;
#: NVIDIA/cudf#15620), hence ``host_copy_engines = 1`` on every built-in target.
COPY_ENGINE_COUNTS: tuple[CopyEngineCount, ...] = (
    CopyEngineCount("a100-sxm4-40gb", "NVIDIA A100-SXM4-40GB", 3, "(CUDA.jl gpuinfo)",
                    "github.com/pc2/GPUInspector.jl docs/src/examples/gpuinfo.md"),
    CopyEngineCount("a100-sxm4-80gb", "NVIDIA A100-SXM4-80GB", 3, "12.5 / 12.4",
                    "github.com/thamada/nvidia-smi gls/A100SXMx4_deviceQuery.py"),
    CopyEngineCount("h100-sxm", "NVIDIA H100 80GB HBM3", 3, "12.7 / 12.4",
                    "github.com/thamada/nvidia-smi nvsim/H100SXMx8_deviceQuery.py"),
    CopyEngineCount("gh200", "NVIDIA GH200 480GB", 2, "12.2 / 12.4", "github.com/slitvinov/grace README.md"),
)
