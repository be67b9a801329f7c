"""What if the GPU had more (or less) memory: compile the same step twice and compare verdicts.

XLA's scheduler derives its memory limit from the HBM size in the target config
(docs/memory.md). :func:`what_if_memory` compiles a built-in workload once for the
target as it is and once with ``device_memory_size`` replaced, and returns, per
transfer name, the verdict and window size under each, plus both memory figures.
The CLI (``--what-if-memory GB``) only renders the result.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hloscope.analysis.report import Report
from hloscope.compile.result import memory_figures
from hloscope.request import CompileRequest
from hloscope.targets import get_target


@dataclass(frozen=True)
class TransferChange:
    """One transfer under both compiles.

    name: the transfer's instruction name (present in at least one compile).
    verdict_before / verdict_after: its verdict with the target's HBM / with the override;
        "" when the transfer does not exist in that compile.
    window_before / window_after: instructions between its start and done (0 when absent
        or when done follows start directly).
    """

    name: str
    verdict_before: str
    verdict_after: str
    window_before: int
    window_after: int

    @property
    def changed(self) -> bool:
        """Its verdict or its window differs between the two compiles."""
        return (self.verdict_before, self.window_before) != (self.verdict_after, self.window_after)


def open_windows(changes: tuple[TransferChange, ...]) -> tuple[int, int]:
    """Transfers whose done is not directly after its start: (before, after)."""
    return (sum(c.window_before > 0 for c in changes), sum(c.window_after > 0 for c in changes))


@dataclass(frozen=True)
class WhatIf:
    """Two compiles of the same step that differ only in HBM size (bytes, per device).

    hbm_before / hbm_after: the HBM sizes compiled for.
    memory_before / memory_after: the compile layer's memory figures of each.
    changes: one row per transfer name, in the order of the first compile then new names.
    """

    hbm_before: int
    hbm_after: int
    memory_before: dict[str, int]
    memory_after: dict[str, int]
    changes: tuple[TransferChange, ...]

    def open_windows(self) -> tuple[int, int]:
        """Transfers whose done is not directly after its start: (before, after)."""
        return open_windows(self.changes)


def _by_name(report: Report) -> dict[str, tuple[str, int]]:
    return {v.transfer.instruction.name: (str(v.verdict), v.window_size) for v in report.verdicts}


def compare_reports(before: Report, after: Report) -> tuple[TransferChange, ...]:
    """Per transfer name, verdict and window size in ``before`` and ``after`` reports."""
    a, b = _by_name(before), _by_name(after)
    names = list(a) + [n for n in b if n not in a]
    return tuple(TransferChange(n, a.get(n, ("", 0))[0], b.get(n, ("", 0))[0], a.get(n, ("", 0))[1],
                                b.get(n, ("", 0))[1]) for n in names)


def what_if_memory(request: CompileRequest, memory_override_bytes: int) -> WhatIf:
    """Compile ``request`` (a built-in workload) for its target as it is and with ``memory_override_bytes`` of HBM."""
    # lazy: the compile layer and the simulation, only when the what-if compiles
    from hloscope.compile.run.jobs import compile_request

    before = compile_request(request)
    after = compile_request(replace(request, memory_override_bytes=memory_override_bytes))
    return WhatIf(
        hbm_before=before.result.device_memory_size or get_target(request.target).device_memory_size,
        hbm_after=after.result.device_memory_size or memory_override_bytes,
        memory_before=memory_figures(before.result.memory), memory_after=memory_figures(after.result.memory),
        changes=compare_reports(before.report, after.report),
    )
