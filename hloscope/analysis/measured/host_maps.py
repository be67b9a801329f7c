"""The host's buffer mappings a measured profile shows before each call's program (``--measured``).

``measure_host_maps(executions, module_name) -> MeasuredHostMaps | None``: of the profile's TPU
executions (:func:`hloscope.hlo.profiles.host_lines.read_host_lines`), those of the analyzed module;
per call, the runtime's ``MapDmaBuffer`` events between the previous execution and this one, and how
long they held the call before its program started. The first call is kept apart: it also maps the
host arguments (mapped once, on first use). ``hloscope.analysis.host_call`` puts it beside the model.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from hloscope.hlo.profiles.host_lines import HostExecution


@dataclass(frozen=True)
class MeasuredHostMaps:
    """calls: executions of the module in the profile. maps_per_call: mappings per call (median of the
    calls after the first). before_program_us: from a call's first mapping to its program's start,
    median of the calls after the first (the first call's alone when there is one). busy_us: the
    mappings' summed time over the runtime's threads, same calls. first_before_program_us: the first
    call's. threads: the threads that mapped (``pjrt-tpu-tasks/...``). program_us: the program,
    median over every call."""

    calls: int
    maps_per_call: float
    before_program_us: float
    busy_us: float
    first_before_program_us: float
    threads: tuple[str, ...]
    program_us: float


def measure_host_maps(executions: Sequence[HostExecution], module_name: str) -> MeasuredHostMaps | None:
    """The module's calls in ``executions`` and their host mappings; None when the profile has none of it."""
    runs = [e for e in executions if e.module == module_name]
    if not runs:
        return None
    device = min(e.device for e in runs)
    runs = [e for e in runs if e.device == device]
    steady = runs[1:] or runs
    return MeasuredHostMaps(
        calls=len(runs),
        maps_per_call=statistics.median(len(e.maps) for e in steady),
        before_program_us=statistics.median(e.before_program_ps / 1e6 for e in steady),
        busy_us=statistics.median(e.map_busy_ps / 1e6 for e in steady),
        first_before_program_us=runs[0].before_program_ps / 1e6,
        threads=tuple(sorted({m.thread for e in runs for m in e.maps})),
        program_us=statistics.median(e.duration_ps / 1e6 for e in runs),
    )
