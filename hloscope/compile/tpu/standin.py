"""STAND-IN, deleted once hloscope.targets has its TPU family (the lead's ``platform:`` commit).

The TPU targets the compile side needs until then: only what it reads (``slices.TpuChip``).
"""

from __future__ import annotations

from dataclasses import dataclass

GiB = 2**30


@dataclass(frozen=True)
class TpuTarget:
    name: str
    description: str
    device_memory_size: int
    topology_prefix: str
    cores_per_chip: int
    chips_per_host: int = 4


TPU_TARGETS = {t.name: t for t in (
    TpuTarget("tpu-v4", "TPU v4", 32 * GiB, "v4", 2),
    TpuTarget("tpu-v5e", "TPU v5e", 16 * GiB, "v5e", 1),
    TpuTarget("tpu-v5p", "TPU v5p", 95 * GiB, "v5", 2),
    TpuTarget("tpu-v6e", "TPU v6e", 32 * GiB, "v6e", 1),
    TpuTarget("tpu7x", "TPU7x", 192 * GiB, "tpu7x", 2),
)}
ALIASES = {"v4": "tpu-v4", "v5e": "tpu-v5e", "v5litepod": "tpu-v5e", "v5p": "tpu-v5p", "v6e": "tpu-v6e",
           "trillium": "tpu-v6e", "ironwood": "tpu7x", "v7x": "tpu7x", "tpu-v7x": "tpu7x"}


def tpu_target(name: str) -> TpuTarget | None:
    key = name.strip().lower()
    return TPU_TARGETS.get(ALIASES.get(key, key))
