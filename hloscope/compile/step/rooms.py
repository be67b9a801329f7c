"""One room per accelerator family, behind one interface: what a deviceless compile asks of its platform.

:func:`compile_step <hloscope.compile.step.deviceless.compile_step>` and the mesh ask the room of the
request's target (:func:`room_for`) for its compile-only devices, the topology they form, the
XLA options of a scheduler, how the step is traced and lowered, and which scheduler ran; the
CUDA room (``hloscope.compile.cuda``) is today's GPU set-up, the TPU room
(``hloscope.compile.tpu``) libtpu's. Each also checks a request's devices and memory options against its
platform and names its artifact folders. Nothing else in a compile asks which platform it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from hloscope.analysis.inputs import ScheduleRun
from hloscope.compile.cuda.room import CudaRoom
from hloscope.compile.tpu.room import TpuRoom
from hloscope.request import CompileRequest, Layout, Scheduler
from hloscope.targets import Platform, Target, as_target

if TYPE_CHECKING:
    from jax import Device


class Room(Protocol):
    """A platform's part of a deviceless compile.

    family: ``gpu`` or ``tpu`` (for messages and records). lowering_platform: what JAX lowers for
    (``cuda``, ``tpu``). device_platforms: what JAX calls the compile-only devices' platform.
    """

    family: str
    lowering_platform: str
    device_platforms: frozenset[str]

    def check_devices(self, devices: int, argument: str = "--devices") -> None:
        """One line (exit 2), before JAX starts, when ``devices`` in the room's layout is no topology of the target."""
        ...

    def devices(self, devices: int) -> list[Device]:
        """``devices`` compile-only devices laid out as the room's layout says, in id order (a TPU's slice
        by slice)."""
        ...

    def topology_label(self, devices: int) -> str:
        """The topology the devices form, as the result and the manifest name it."""
        ...

    def topology_key(self, devices: int) -> dict[str, object]:
        """What of the topology decides XLA's output, for the compile cache's key."""
        ...

    def options(self, request: CompileRequest, user: Mapping[str, Any]) -> dict[str, Any]:
        """The XLA options of ``request`` (its scheduler, pipelining) with the user's ``--xla-flag`` on top."""
        ...

    def compile_options(self, options: Mapping[str, Any], dump: str) -> dict[str, Any]:
        """What XLA is given: ``options`` (recorded with the result), the dump into ``dump``, and what
        every compile on this platform needs (kept out of the record)."""
        ...

    def tracing(self) -> AbstractContextManager[Any]:
        """Around tracing and lowering (JAX's cuDNN checks need the target's GPU)."""
        ...

    def read_scheduler(self, optimized: str, log: str | None, chosen: Scheduler,
                       options: Mapping[str, Any]) -> tuple[ScheduleRun, dict[str, str]]:
        """Which scheduler ran, and the log files to keep with the artifact."""
        ...

    def device_kind(self) -> str:
        """What JAX calls one compile-only device (``NVIDIA H100 80GB HBM3``, ``TPU v5``)."""
        ...

    def device_memory_size(self) -> int:
        """The memory of one device, bytes (a chip's HBM split among the devices it shows)."""
        ...

    @property
    def maxtext_builds_mesh(self) -> bool:
        """MaxText builds the devices' mesh itself (hloscope swaps in none of its own)."""
        ...

    def maxtext_overrides(self, devices: int) -> list[str]:
        """The MaxText config keys hloscope sets for ``devices`` devices of this target
        (``hloscope.compile.maxtext.OWNED_KEYS``)."""
        ...

    def maxtext_target(self, request: CompileRequest) -> Target:
        """The target MaxText's devices are opened for under ``request``."""
        ...

    def maxtext_check(self, devices: int, spec_of: Callable[[str], Any]) -> None:
        """One line (exit 2) when MaxText's own map of this platform's slices disagrees with hloscope's
        (``spec_of``: MaxText's entry for a slice name, None where it names none)."""
        ...

    def planned_memory(self, request: CompileRequest) -> tuple[Target, int | None]:
        """The target XLA plans for under ``request``'s HBM what-if, and what JAX's allocator takes at its
        memory fraction (None: no fraction given); one line (exit 2) where the platform takes neither."""
        ...

    def check_request(self, request: CompileRequest, argument: str = "--devices") -> tuple[int, Callable[[int], bool]]:
        """One line (exit 2), before JAX starts, when ``request``'s devices and layout are no mesh of the
        target; else the devices one workload's axes span, and which device counts a workload may take."""
        ...

    def folder_part(self, request: CompileRequest) -> list[str]:
        """What an artifact folder's name says of the target and its devices (``h100-sxm-8``, ``v5p-128``)."""
        ...

    def manifest_facts(self, request: CompileRequest) -> dict[str, object]:
        """What the artifact's manifest records of the platform's layout (a TPU's ``tpu_slice``)."""
        ...


#: A target of either family (``hloscope.targets``).
AnyTarget = Target

#: Each platform's room: the one place a compile picks a platform's set-up.
_ROOMS: dict[Platform, Callable[[Target, Layout | None], Room]] = {Platform.GPU: CudaRoom.of, Platform.TPU: TpuRoom.of}


def resolve_target(target: str | Target) -> Target:
    """A target of either family by name, alias or path (``hloscope.targets.as_target``), or the target itself."""
    return as_target(target)


def room_for(target: str | AnyTarget, layout: Layout | None = None) -> Room:
    """The room of ``target``'s family, its devices laid out as ``layout`` says (None: the default)."""
    tgt = resolve_target(target)
    return _ROOMS[tgt.platform](tgt, layout)
