"""Targets: the accelerators a step is judged on, GPUs and TPUs, and how one is found.

Pure data, no JAX. The types are here (:mod:`.model`: what every target has, :mod:`.gpu`,
:mod:`.tpu`: each platform's own fields); the figures of the built-in targets are data, one file a
platform (``data/gpu.toml``, ``data/tpu.toml``), every figure beside its source, read and checked
once (:mod:`.builtin`). A user target is a TOML or JSON file with the same field names (see
docs/targets.md); ``get_target`` accepts a name, an alias or a path (:mod:`.lookup`). Every value is
checked (:mod:`.checks`); a bad one is an error naming its key (exit 2).
"""

from __future__ import annotations

from hloscope.targets.builtin import (
    BUILTIN_TARGETS,
    COPY_ENGINE_COUNTS,
    HOST_LINK_MEASUREMENTS,
    TARGET_ALIASES,
    TARGET_CLASSES,
    TPU_TARGETS,
)
from hloscope.targets.checks import CALIBRATED_ON, COLLECTIVE_KINDS
from hloscope.targets.gpu import (
    DEFAULT_HOST_POOL_BYTES,
    HOST_POOL_ENV,
    CopyEngineCount,
    GpuTarget,
    LinkMeasurement,
    memory_fraction_problem,
)
from hloscope.targets.lookup import (
    DEFAULT_TARGET,
    DEFAULT_TPU_TARGET,
    TargetOrigin,
    as_target,
    get_target,
    gpu_only,
    link_range,
    load_target_file,
    target_for_device,
    target_for_tpu,
)
from hloscope.targets.model import DEFAULT_LINK_MODE, GB, LINK_MODES, TB, Platform, Target
from hloscope.targets.tpu import TpuTarget

__all__ = [
    "BUILTIN_TARGETS", "CALIBRATED_ON", "COLLECTIVE_KINDS", "COPY_ENGINE_COUNTS", "DEFAULT_HOST_POOL_BYTES",
    "DEFAULT_LINK_MODE", "DEFAULT_TARGET", "DEFAULT_TPU_TARGET", "GB", "HOST_LINK_MEASUREMENTS", "HOST_POOL_ENV",
    "LINK_MODES", "TARGET_ALIASES", "TARGET_CLASSES", "TB", "TPU_TARGETS", "CopyEngineCount", "GpuTarget",
    "LinkMeasurement", "Platform", "Target", "TargetOrigin", "TpuTarget", "as_target", "get_target", "gpu_only",
    "link_range", "load_target_file", "memory_fraction_problem", "target_for_device", "target_for_tpu",
]
