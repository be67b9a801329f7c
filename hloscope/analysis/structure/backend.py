"""Which XLA backend compiled a module, from what the module (and its file name) carries.

hloscope judges GPU schedules; a module XLA compiled for the CPU parses and simulates,
but its order says nothing about a GPU. The evidence is XLA's own: a dump file is named
``<module>.cpu_after_optimizations.txt`` or ``<module>.sm_<cc>_gpu_after_optimizations.txt``
(``xla/service/dump.cc`` adds the platform's name), XLA:CPU's backend config
(``xla/service/cpu/backend_config.proto``) has ``outer_dimension_partitions``, and
XLA:GPU's (``xla/service/gpu/backend_configs.proto``) has ``operation_queue_id`` and
``fusion_backend_config``; cuBLAS, cuDNN and Triton custom calls are GPU only. A module
with none of these (hand-written HLO, XLA's test modules) is ``UNKNOWN``: nothing to say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from hloscope.hlo.model import Module


class Backend(StrEnum):
    """The XLA backend a module was compiled for."""

    GPU = "gpu"
    CPU = "cpu"
    UNKNOWN = "unknown"


class BackendEvidence(StrEnum):
    """What showed the backend."""

    DUMP_FILE_NAME = "dump_file_name"  # where: the file name
    BACKEND_CONFIG = "backend_config"  # where: the first instruction whose config shows it
    CUSTOM_CALL = "custom_call"  # where: the custom call's target
    NONE = "none"


@dataclass(frozen=True)
class CompiledFor:
    """backend: which one. evidence: what showed it. where: the file name, instruction or
    custom-call target that did ("" for NONE)."""

    backend: Backend
    evidence: BackendEvidence
    where: str = ""


_DUMP_NAME = re.compile(r"\.(cpu|(?:sm_[\d.]+_)?gpu)_after_optimizations\.txt$")
_GPU_CONFIG = ('"operation_queue_id"', '"fusion_backend_config"')
_CPU_CONFIG = ('"outer_dimension_partitions"',)
_GPU_CALLS = ("__cublas$", "__cudnn$", "__triton")


def find_backend(module: Module, label: str = "") -> CompiledFor:
    """The backend ``module`` was compiled for; ``label`` is the file it came from, if any."""
    m = _DUMP_NAME.search(label)
    if m:
        name = label.replace("\\", "/").rsplit("/", 1)[-1]
        return CompiledFor(Backend.CPU if m.group(1) == "cpu" else Backend.GPU, BackendEvidence.DUMP_FILE_NAME, name)
    for comp in module.computations.values():
        for ins in comp.instructions:
            config = ins.attr("backend_config")
            if config:
                if any(k in config for k in _GPU_CONFIG):
                    return CompiledFor(Backend.GPU, BackendEvidence.BACKEND_CONFIG, ins.name)
                if any(k in config for k in _CPU_CONFIG):
                    return CompiledFor(Backend.CPU, BackendEvidence.BACKEND_CONFIG, ins.name)
            target = ins.attr("custom_call_target").strip('"')
            if target.startswith(_GPU_CALLS):
                return CompiledFor(Backend.GPU, BackendEvidence.CUSTOM_CALL, target)
    return CompiledFor(Backend.UNKNOWN, BackendEvidence.NONE)
