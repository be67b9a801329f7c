"""The host's side of a TPU profile: what the runtime's threads did before each program ran.

Contract: :func:`read_host_lines` takes a :class:`~hloscope.hlo.profile_files.ProfileFile` of form
``XPLANE`` (``jax.profiler``'s XSpace) and returns, per execution on the TPU planes' ``XLA Modules``
line, the runtime's buffer mappings (events named in :data:`MAP_EVENTS`, on the ``/host:CPU``
plane's threads: ``MapDmaBuffer`` on ``pjrt-tpu-tasks``) that ran between the end of the
previous execution on that device and the end of this one. Both planes' event times are on the
profile's one clock (``start_ps``), which is how a profile viewer lays them out together. Any
other form, or an XSpace without a TPU module line, gives None: its host lines are not read.
Facts only, no JAX.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.hlo.profile_files import ProfileFile, ProfileForm
from hloscope.hlo.profiles import tpu
from hloscope.hlo.profiles.xspace import XSpace, parse_xspace
from hloscope.hlo.protowire import WireError

#: The host events that map a buffer for the device's DMA engines (read on one TPU v5e, JAX 0.10.2).
MAP_EVENTS = frozenset({"MapDmaBuffer"})


@dataclass(frozen=True)
class HostMap:
    """One mapping: the thread (``pjrt-tpu-tasks/...``), its start and duration in ps."""

    thread: str
    start_ps: int
    duration_ps: int


@dataclass(frozen=True)
class HostExecution:
    """One execution of a module (its ``XLA Modules`` event, program id dropped) on ``device``, and the
    mappings before it (between the previous execution's end and its own end), in start order."""

    module: str
    device: str
    start_ps: int
    duration_ps: int
    maps: tuple[HostMap, ...]

    @property
    def before_program_ps(self) -> int:
        """From the first mapping's start to the program's start: how long the call waited on the host
        before the program ran (0 with no mapping)."""
        if not self.maps:
            return 0
        return max(0, self.start_ps - min(m.start_ps for m in self.maps))

    @property
    def map_busy_ps(self) -> int:
        """The mappings' summed time over every thread."""
        return sum(m.duration_ps for m in self.maps)


def _executions(space: XSpace) -> list[tuple[str, str, int, int]]:
    out = []
    for plane in space.planes:
        if not tpu.is_tpu_device(plane.name):
            continue
        for line in plane.lines:
            if line.name == tpu.MODULES:
                out += [(tpu.module_name(ev.name), plane.name, ev.start_ps, ev.duration_ps) for ev in line.events]
    return sorted(out, key=lambda e: (e[1], e[2]))


def _maps(space: XSpace) -> list[HostMap]:
    return sorted((HostMap(line.name, ev.start_ps, ev.duration_ps)
                   for plane in space.planes if plane.name.startswith("/host:")
                   for line in plane.lines for ev in line.events if ev.name in MAP_EVENTS),
                  key=lambda m: m.start_ps)


def read_host_lines(file: ProfileFile) -> tuple[HostExecution, ...] | None:
    """Each TPU execution with the host's buffer mappings before it; None when the file is not an
    XSpace with TPU module events (its host lines are not read). Unparsable bytes: None too (the
    profile's own reader says what is wrong with them)."""
    if file.form is not ProfileForm.XPLANE:
        return None
    try:
        space = parse_xspace(file.data)
    except WireError:
        return None
    runs = _executions(space)
    if not runs:
        return None
    maps = _maps(space)
    out: list[HostExecution] = []
    previous_end: dict[str, int] = {}
    for module, device, start, duration in runs:
        lo = previous_end.get(device, -1)
        end = start + duration
        mine = tuple(m for m in maps if lo <= m.start_ps + m.duration_ps <= end or lo <= m.start_ps < end)
        out.append(HostExecution(module, device, start, duration, mine))
        previous_end[device] = end
    return tuple(out)
