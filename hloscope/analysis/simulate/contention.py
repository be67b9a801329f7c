"""What a transfer's window holds: how much of the work beside it is memory-bound.

A host copy reads (offload) or writes (reload) HBM while it runs, and so do the kernels
beside it. A memory-bound kernel keeps HBM busy for its whole run, so a copy beside it
is hidden less than one beside a GEMM (xla#45983, xla#46150: a copy scheduled next to a
memory-bound transpose). The simulation shares HBM between them (docs/simulation.md);
:func:`memory_bound_share` turns a transfer's simulated timing into the typed hint the
verdict's ``why`` prints: the memory-bound part of the compute that ran beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.simulate.timeline import TransferTiming

__all__ = ["MEMORY_BOUND_HINT_AT", "MemoryBoundShare", "memory_bound_share"]

#: The share of the compute beside a transfer from which the hint is shown.
MEMORY_BOUND_HINT_AT = 0.5


@dataclass(frozen=True)
class MemoryBoundShare:
    """memory_bound_us of the compute_us that ran beside a transfer was memory-bound kernels."""

    memory_bound_us: float
    compute_us: float

    @property
    def fraction(self) -> float:
        return self.memory_bound_us / self.compute_us if self.compute_us > 0 else 0.0


def memory_bound_share(timing: TransferTiming | None) -> MemoryBoundShare | None:
    """The memory-bound share of the compute beside a simulated transfer (None without compute)."""
    if timing is None or timing.compute_beside_us <= 0:
        return None
    return MemoryBoundShare(timing.memory_bound_beside_us, timing.compute_beside_us)
