"""Which XLA backend compiled a module, from what the module (and its file name) carries.

hloscope judges GPU and TPU schedules; a module XLA compiled for the CPU parses and simulates,
but its order says nothing about an accelerator. The evidence is XLA's own. TPU: a dump's
``<module>.target_arguments.txt`` holds ``tpu_topology_args`` with the chip's ``version``
(``TPU_VERSION_VIPERFISH``; ``variant: "lite"`` is v5e), XLA:TPU's backend config has
``scoped_memory_configs`` and ``flag_configs`` on nearly every instruction, and TPU layouts
carry memory spaces no GPU module uses (``S(1)`` VMEM, ``S(2)`` SMEM) beside ``T(8,128)`` tiles.
GPU and CPU: a dump file is named
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
from hloscope.targets import Platform


class Backend(StrEnum):
    """The XLA backend a module was compiled for."""

    GPU = "gpu"
    TPU = "tpu"
    CPU = "cpu"
    UNKNOWN = "unknown"

    @property
    def platform(self) -> Platform | None:
        """The accelerator family (None: the CPU, or unknown)."""
        return {Backend.GPU: Platform.GPU, Backend.TPU: Platform.TPU}.get(self)


class BackendEvidence(StrEnum):
    """What showed the backend."""

    DUMP_FILE_NAME = "dump_file_name"  # where: the file name
    TARGET_ARGUMENTS = "target_arguments"  # where: the TPU version (and variant) the dump names
    BACKEND_CONFIG = "backend_config"  # where: the first instruction whose config shows it
    CUSTOM_CALL = "custom_call"  # where: the custom call's target
    LAYOUT = "layout"  # where: the first instruction whose layout has a TPU-only memory space
    NONE = "none"


@dataclass(frozen=True)
class CompiledFor:
    """backend: which one. evidence: what showed it. where: the file name, instruction,
    custom-call target or TPU version that did ("" for NONE). tpu_version / tpu_variant: the chip
    a TPU dump's ``target_arguments.txt`` names (``TPU_VERSION_VIPERFISH`` / ``lite``), "" when not
    known."""

    backend: Backend
    evidence: BackendEvidence
    where: str = ""
    tpu_version: str = ""
    tpu_variant: str = ""


_DUMP_NAME = re.compile(r"\.(cpu|(?:sm_[\d.]+_)?gpu)_after_optimizations\.txt$")
_GPU_CONFIG = ('"operation_queue_id"', '"fusion_backend_config"')
_CPU_CONFIG = ('"outer_dimension_partitions"',)
_GPU_CALLS = ("__cublas$", "__cudnn$", "__triton")
_TPU_CONFIG = ('"scoped_memory_configs"',)
_TPU_VERSION = re.compile(r"^\s*version:\s*(TPU_VERSION_\w+)", re.M)
_TPU_VARIANT = re.compile(r"^\s*variant:\s*\"([^\"]*)\"", re.M)
#: Memory spaces only XLA:TPU assigns: 1 VMEM, 2 SMEM (host memory, 5, is every platform's).
_TPU_SPACES = frozenset({1, 2})


def read_target_arguments(text: str) -> CompiledFor | None:
    """The TPU a dump's ``*.target_arguments.txt`` names, or None (no ``tpu_topology_args``)."""
    if "tpu_topology_args" not in text:
        return None
    version = _TPU_VERSION.search(text)
    variant = _TPU_VARIANT.search(text)
    v, var = (version.group(1) if version else ""), (variant.group(1) if variant else "")
    return CompiledFor(Backend.TPU, BackendEvidence.TARGET_ARGUMENTS, v + (f" ({var})" if var else ""), v, var)


def find_backend(module: Module, label: str = "", target_arguments: str = "") -> CompiledFor:
    """The backend ``module`` was compiled for; ``label`` is the file it came from, if any;
    ``target_arguments`` the text of its dump's ``*.target_arguments.txt``, if any."""
    tpu = read_target_arguments(target_arguments) if target_arguments else None
    if tpu is not None:
        return tpu
    m = _DUMP_NAME.search(label)
    if m:
        name = label.replace("\\", "/").rsplit("/", 1)[-1]
        return CompiledFor(Backend.CPU if m.group(1) == "cpu" else Backend.GPU, BackendEvidence.DUMP_FILE_NAME, name)
    # The entry first: XLA's printings order the other computations differently (the dump and
    # ``as_text()``), and the evidence must not depend on which printing was read.
    entry = module.computations.get(module.entry_name)
    order = ([entry] if entry is not None else []) + [c for c in module.computations.values() if c is not entry]
    for comp in order:
        for ins in comp.instructions:
            config = ins.attr("backend_config")
            if config:
                if any(k in config for k in _TPU_CONFIG):
                    return CompiledFor(Backend.TPU, BackendEvidence.BACKEND_CONFIG, ins.name)
                if any(k in config for k in _GPU_CONFIG):
                    return CompiledFor(Backend.GPU, BackendEvidence.BACKEND_CONFIG, ins.name)
                if any(k in config for k in _CPU_CONFIG):
                    return CompiledFor(Backend.CPU, BackendEvidence.BACKEND_CONFIG, ins.name)
            target = ins.attr("custom_call_target").strip('"')
            if target.startswith(_GPU_CALLS):
                return CompiledFor(Backend.GPU, BackendEvidence.CUSTOM_CALL, target)
            if ins.shape is not None and any(ins.shape.in_memory_space(space) for space in _TPU_SPACES):
                return CompiledFor(Backend.TPU, BackendEvidence.LAYOUT, ins.name)
    return CompiledFor(Backend.UNKNOWN, BackendEvidence.NONE)


def runs_on_accelerator(found: CompiledFor, module: Module) -> bool:
    """Whether ``module``'s schedule is one an accelerator runs, so a gate has something to judge: a TPU
    module (``found``), or one XLA:GPU gave stream assignments (``operation_queue_id`` in a backend
    config; other backends write none, and :func:`find_backend` stops at its first evidence)."""
    if found.backend is Backend.TPU:
        return True
    return any("operation_queue_id" in ins.attr("backend_config")
               for comp in module.computations.values() for ins in comp.instructions)
