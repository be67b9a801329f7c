"""The CUDA room: compile-only GPUs from XLA's CUDA plugin (``hloscope.compile.cuda.topology``), their
XLA options (``hloscope.compile.cuda.scheduler``), cuDNN's checks while tracing, and the scheduler
read from the plugin's log, behind :class:`hloscope.compile.step.rooms.Room`."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from hloscope.analysis.inputs import ScheduleRun
from hloscope.compile.cuda.device_memory import allocator_bytes, with_memory
from hloscope.compile.cuda.scheduler import SCHEDULER_OPTIONS, read_run
from hloscope.compile.cuda.topology import compile_only_devices, topology_for
from hloscope.compile.seam import jaxcompat
from hloscope.compile.seam.xla_options import PIPELINED_OFFLOAD_FLAG
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.xla_dumps import SCHEDULER_LOG_FILE
from hloscope.hlo.xla_log import scheduler_log_lines
from hloscope.request import CompileRequest, Layout, Scheduler
from hloscope.targets import GpuTarget, Target, gpu_only

if TYPE_CHECKING:
    from jax import Device


class CudaRoom:
    """A GPU target's part of a deviceless compile (:class:`hloscope.compile.step.rooms.Room`)."""

    family = "gpu"
    lowering_platform = "cuda"
    device_platforms = frozenset({"gpu", "cuda", "rocm"})

    def __init__(self, target: GpuTarget, layout: Layout | None = None) -> None:
        self.target = target
        self.layout = layout or Layout()

    @classmethod
    def of(cls, target: Target, layout: Layout | None = None) -> CudaRoom:
        """The room of a GPU target (``hloscope.compile.step.rooms.room_for`` chooses it)."""
        return cls(gpu_only(target), layout)

    def check_devices(self, devices: int, argument: str = "--devices") -> None:
        lay = self.layout
        if lay.topology is not None:
            raise HloscopeError(f"topology names a TPU slice; {self.target.name} is a GPU", EXIT_BAD_INPUT)
        if lay.slices != 1 or lay.per_core:
            what = "slices" if lay.slices != 1 else "per_core"
            raise HloscopeError(f"{what} is for a TPU target; {self.target.name} is a GPU (its hosts come from "
                                f"the device count)", EXIT_BAD_INPUT)
        topology_for(self.target, devices, argument)

    def devices(self, devices: int) -> list[Device]:
        return compile_only_devices(self.target, devices)

    def topology_label(self, devices: int) -> str:
        topo = topology_for(self.target, devices)
        return f"{topo.name} ({topo.describe()})"

    def topology_key(self, devices: int) -> dict[str, object]:
        return {"gpu_target_config": hashlib.sha256(str(self.target.gpu_target_config()).encode()).hexdigest()}

    def options(self, request: CompileRequest, user: Mapping[str, Any]) -> dict[str, Any]:
        options: dict[str, Any] = dict(SCHEDULER_OPTIONS[request.scheduler])
        if request.pipelined is not None:
            options[PIPELINED_OFFLOAD_FLAG] = request.pipelined
        options.update(user)
        return options

    def compile_options(self, options: Mapping[str, Any], dump: str) -> dict[str, Any]:
        return {**jaxcompat.compile_flags(), **options, "xla_dump_to": dump, "xla_dump_hlo_as_text": True,
                "xla_gpu_dump_llvmir": False}

    def tracing(self) -> AbstractContextManager[Any]:
        # Traced as for the target's GPU: JAX's cuDNN attention checks would otherwise find no local GPU.
        return jaxcompat.cudnn_compute_capability(self.target.compute_capability)

    def read_scheduler(self, optimized: str, log: str | None, chosen: Scheduler,
                       options: Mapping[str, Any]) -> tuple[ScheduleRun, dict[str, str]]:
        """Which scheduler ran (read from the HLO and XLA's log so far) and the log's scheduler and
        estimator lines as the artifact's scheduler log (extra file name -> text)."""
        lines = scheduler_log_lines(log or "")
        return read_run(optimized, log, chosen), ({SCHEDULER_LOG_FILE: lines} if lines else {})

    def device_kind(self) -> str:
        return self.target.description

    def device_memory_size(self) -> int:
        return self.target.device_memory_size

    def planned_memory(self, request: CompileRequest) -> tuple[Target, int | None]:
        tgt = with_memory(self.target, request.memory_override_bytes)
        return tgt, allocator_bytes(tgt, request.memory_fraction)

    def check_request(self, request: CompileRequest, argument: str = "--devices") -> tuple[int, Callable[[int], bool]]:
        """The hosts (``gpus_per_host`` GPUs each) and NVLink domains of the target
        (:func:`~hloscope.compile.cuda.topology.topology_for`); a workload's devices fill hosts whole."""
        target = self.target
        if request.topology is not None:
            raise HloscopeError(f"--topology names a TPU slice; {target.name} is a GPU (give --devices)",
                                EXIT_BAD_INPUT)
        if request.slices != 1 or request.per_core:
            raise HloscopeError(f"{'--slices' if request.slices != 1 else '--per-core'} is for a TPU target; "
                                f"{target.name} is a GPU (its hosts come from --devices)", EXIT_BAD_INPUT)
        topology_for(target, request.devices, argument)
        per_host = target.gpus_per_host
        return request.devices, lambda n: n <= per_host or n % per_host == 0

    def folder_part(self, request: CompileRequest) -> list[str]:
        return [request.target, str(request.devices)]

    def manifest_facts(self, request: CompileRequest) -> dict[str, object]:
        return {}

    #: hloscope builds the GPUs' mesh (its hosts as MaxText's slices).
    maxtext_builds_mesh = False

    def maxtext_overrides(self, devices: int) -> list[str]:
        """An AOT compile of ``devices`` devices whose hosts (``gpus_per_host`` GPUs each) are MaxText's
        slices; ``compile_topology`` only has to be a GPU system MaxText knows (``a3``): the devices
        themselves come from hloscope's topology."""
        per_host = self.target.gpus_per_host
        hosts = max(1, devices // per_host) if devices > per_host else 1
        return ["hardware=gpu", "compile_topology=a3", f"compile_topology_num_slices={hosts}", "internal_compile=True",
                f"internal_compile_num_devices={devices}"]

    def maxtext_target(self, request: CompileRequest) -> Target:
        """The target MaxText's devices are opened for: with the HBM what-if, as XLA:GPU plans for."""
        return with_memory(self.target, request.memory_override_bytes)

    def maxtext_check(self, devices: int, spec_of: Callable[[str], Any]) -> None:
        """Nothing to check: MaxText's GPU path takes hloscope's topology."""
