"""The TPU room: compile-only TPU slices from libtpu, their options, and what ran, behind
:class:`hloscope.compile.step.rooms.Room`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from hloscope.analysis.inputs import ScheduleRun
from hloscope.compile.tpu import runtime
from hloscope.compile.tpu.maxtext_slice import check_maxtext_slice, maxtext_slice
from hloscope.compile.tpu.slices import (
    MEGACORE,
    TpuSlice,
    devices_per_chip,
    folder_part,
    prefix_of,
    shape_for,
    slice_of,
)
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.request import CompileRequest, Layout, Scheduler
from hloscope.targets import Target, TpuTarget, as_target

#: What JAX calls a compile-only device of each generation (``device.device_kind``, libtpu 0.0.42).
DEVICE_KINDS = {"v4": "TPU v4", "v5": "TPU v5", "v5e": "TPU v5 lite", "v6e": "TPU v6 lite", "tpu7x": "TPU7x"}


class TpuRoom:
    """A TPU target's part of a deviceless compile (:class:`hloscope.compile.step.rooms.Room`)."""

    family = "tpu"
    lowering_platform = "tpu"
    device_platforms = frozenset({"tpu"})

    def __init__(self, target: TpuTarget, layout: Layout | None = None) -> None:
        self.target = target
        self.layout = layout or Layout()

    @classmethod
    def of(cls, target: Target, layout: Layout | None = None) -> TpuRoom:
        """The room of a TPU target (``hloscope.compile.step.rooms.room_for`` chooses it)."""
        assert isinstance(target, TpuTarget), target.name
        return cls(target, layout)

    def slice(self, devices: int, argument: str = "--devices") -> TpuSlice:
        """The slices of ``devices`` devices, or those the layout's ``topology`` names (then ``devices`` must be
        their count)."""
        lay = self.layout
        return slice_of(self.target, devices, lay.topology, lay.slices, lay.per_core, argument)

    def check_devices(self, devices: int, argument: str = "--devices") -> None:
        self.slice(devices, argument)

    def devices(self, devices: int) -> list[Any]:
        return runtime.compile_only_devices(self.target, self.slice(devices))

    def topology_label(self, devices: int) -> str:
        s = self.slice(devices)
        slices = f", {s.num_slices} slices over DCN" if s.num_slices != 1 else ""
        return f"{s.name} ({s.cloud_name}: {s.chips} chips, topology {s.shape_text}, {s.devices_per_chip} device" \
               f"{'s' if s.devices_per_chip != 1 else ''} per chip{slices})"

    def topology_key(self, devices: int) -> dict[str, object]:
        return {"tpu_slice": self.slice(devices).to_record(), "libtpu": runtime.libtpu_version(),
                "libtpu_init_args": runtime.init_args()}

    def options(self, request: CompileRequest, user: Mapping[str, Any]) -> dict[str, Any]:
        if request.scheduler is Scheduler.LHS_APPROX:
            raise HloscopeError("scheduler lhs-approx is XLA:GPU's; for a TPU target take lhs or none",
                                EXIT_BAD_INPUT)
        return runtime.compile_options(dict(user), request.scheduler is not Scheduler.NONE)

    def compile_options(self, options: Mapping[str, Any], dump: str) -> dict[str, Any]:
        return {**options, "xla_dump_to": dump, "xla_dump_hlo_as_text": True}

    def tracing(self) -> AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def read_scheduler(self, optimized: str, log: str | None, chosen: Scheduler,
                       options: Mapping[str, Any]) -> tuple[ScheduleRun, dict[str, str]]:
        """TPU modules carry no ``scheduling_name``: which scheduler ran is libtpu's option (on by default)."""
        ran = "none" if options.get(runtime.TPU_LHS_FLAG) is False else "lhs"
        return ScheduleRun(ran, None, chosen.value, f"libtpu's option {runtime.TPU_LHS_FLAG}"), {}

    def device_kind(self) -> str:
        return DEVICE_KINDS.get(prefix_of(self.target), self.target.description)

    def device_memory_size(self) -> int:
        """What libtpu lets one device's program use: the target's figure, one TensorCore's when the
        layout is ``per_core`` on a megacore generation (``hbm_available_per_core``)."""
        if self.layout.per_core and prefix_of(self.target) in MEGACORE and self.target.hbm_available_per_core:
            return self.target.hbm_available_per_core
        return self.target.memory_per_device

    def planned_memory(self, request: CompileRequest) -> tuple[Target, int | None]:
        """The HBM what-if and the allocator's fraction set what XLA:GPU plans for (its GpuTargetConfig,
        JAX's GPU allocator); libtpu takes the HBM from the chip: one line (exit 2) for either."""
        if request.memory_override_bytes is not None or request.memory_fraction is not None:
            what = "--what-if-memory" if request.memory_override_bytes is not None else "--memory-fraction"
            raise HloscopeError(f"{what} sets what XLA:GPU plans for; {request.target} is a TPU, whose compiler "
                                "takes the HBM from the chip", EXIT_BAD_INPUT)
        return self.target, None

    def check_request(self, request: CompileRequest, argument: str = "--devices") -> tuple[int, Callable[[int], bool]]:
        """The slices of the request (``hloscope.compile.tpu.slices``); over several slices a workload's own
        axes are inside one slice (data parallel across them), on whole chips of a slice shape."""
        self.slice(request.devices, argument)
        per_chip, prefix = devices_per_chip(self.target, request.per_core), prefix_of(self.target)
        return (request.devices // request.slices,
                lambda n: n % per_chip == 0 and shape_for(prefix, n // per_chip) is not None)

    def folder_part(self, request: CompileRequest) -> list[str]:
        """The slice as Cloud TPU names it (``v5p-128`` for 64 chips:
        :func:`~hloscope.compile.tpu.slices.folder_part`)."""
        return [folder_part(self.slice(request.devices), request.target, self.target)]

    def manifest_facts(self, request: CompileRequest) -> dict[str, object]:
        """The slice as Cloud TPU names it (``TpuSlice.to_facts``), as the manifest's ``tpu_slice``."""
        return {"tpu_slice": self.slice(request.devices).to_facts()}

    #: MaxText builds a TPU slice's mesh itself (its ``get_topology_mesh``).
    maxtext_builds_mesh = True

    def maxtext_overrides(self, devices: int) -> list[str]:
        """MaxText's own TPU path: ``compile_topology`` one slice's MaxText name (``v5p-256``) and
        ``compile_topology_num_slices`` the layout's slices."""
        found = maxtext_slice(self.target, devices, self.layout)
        return ["hardware=tpu", f"compile_topology={found.maxtext_name}",
                f"compile_topology_num_slices={found.num_slices}"]

    def maxtext_target(self, request: CompileRequest) -> Target:
        """The target MaxText's devices are opened for: the chip's own (libtpu takes the HBM from it)."""
        return self.target

    def maxtext_check(self, devices: int, spec_of: Callable[[str], Any]) -> None:
        """One line (exit 2) when MaxText's slice map names no slice ``devices`` make, or another one."""
        found = maxtext_slice(self.target, devices, self.layout)
        check_maxtext_slice(found, spec_of(found.maxtext_name))


def tpu_slice(request: CompileRequest) -> TpuSlice | None:
    """The TPU slice ``request`` compiles for (None: another platform's target); one line (exit 2) for a
    device count or ``--topology`` no slice of its chip has."""
    chip = as_target(request.target)
    if not isinstance(chip, TpuTarget):
        return None
    return TpuRoom(chip, request.layout).slice(request.devices)
