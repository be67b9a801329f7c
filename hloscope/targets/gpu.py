"""GPU targets: the GpuTargetConfig XLA compiles for, the GPU's own cost-model fields, and what only a
GPU has: JAX's allocator share, PJRT's pinned-host pool, the published host-link and copy-engine
measurements behind the built-in GPUs' figures (docs/targets.md). The figures of the built-in GPUs are
in ``data/gpu.toml``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar

from hloscope.targets.model import (
    BYTES,
    CAPABILITY,
    COUNT,
    GB,
    LATENCY,
    OPTIONAL,
    POSITIVE,
    Platform,
    Target,
)
from hloscope.vocab import Direction


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
    #: The published measurements a GPU data file lists beside its targets, ``[measured]``: every host-link
    #: figure per GPU (docs/targets.md, "Host link: measured"), and every asyncEngineCount (docs/targets.md,
    #: "Copy engines": none was found for h200, b200, gb200 or gb300; the count is of both directions together,
    #: and same-direction copies on different streams run one after another, first ready first served:
    #: meta-pytorch/torchrec#4303, #4315; NVIDIA/cudf#15620, hence ``host_copy_engines = 1`` on every GPU).
    measured: ClassVar[Mapping[str, type]] = MappingProxyType({"host_link": LinkMeasurement,
                                                                "copy_engines": CopyEngineCount})

    compute_capability: tuple[int, int] = field(metadata=CAPABILITY)
    core_count: int = field(metadata=COUNT)
    clock_rate_ghz: float = field(metadata=POSITIVE)
    l2_cache_size: int = field(metadata=COUNT)
    peak_fp8_flops: float = field(metadata=POSITIVE)
    shared_memory_per_core: int = field(default=233472, metadata=COUNT)
    shared_memory_per_block_optin: int = field(default=232448, metadata=COUNT)
    host_link_gpus: int = field(default=1, metadata=COUNT)
    host_memory_per_gpu: int = field(default=0, metadata=BYTES)
    gpus_per_host: int = field(default=8, metadata=COUNT)
    hosts_per_nvlink_domain: int = field(default=1, metadata=COUNT)
    peak_fp4_flops: float | None = field(default=None, metadata=OPTIONAL)
    network_bandwidth: float = field(default=50 * GB, metadata=POSITIVE)
    nvlink_hop_us: float = field(default=2.5, metadata=LATENCY)
    network_hop_us: float = field(default=2.5, metadata=LATENCY)

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


def memory_fraction_problem(value: object) -> str | None:
    """Why ``value`` is not a memory fraction (the share of the HBM JAX's GPU allocator takes,
    ``XLA_PYTHON_CLIENT_MEM_FRACTION``, a number in (0, 1]); None when it is one. The one check of
    ``--memory-fraction``, ``memory-fraction`` in ``[tool.hloscope]`` and the API's argument."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{value!r} is not a number"
    if not 0 < value <= 1:
        return f"{value:g} is not in (0, 1] (the share of the HBM JAX's allocator takes, e.g. 0.9)"
    return None


#: PJRT's pinned-host pool per process when ``XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB`` is unset: 64 GiB
#: (``GetGpuHostAllocator``: the variable's value times 2**30, default 64).
DEFAULT_HOST_POOL_BYTES = 64 << 30
HOST_POOL_ENV = "XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB"
