"""What XLA's scheduler believed about each transfer, beside hloscope's own estimate.

A pass like the others: ``compare_with_xla(log, verdicts)`` takes the figures read
from the compile's scheduler log (``hloscope.hlo.xla_log``) and the verdicts, and
returns one :class:`XlaTransferView` per async transfer: the latency XLA's estimator
assumed between its start and done, whether that was a fixed default rather than a
figure from the transfer's bytes, and what XLA expected the work in the window to
take (the sum of its per-instruction costs). The renderers put these beside
hloscope's own estimate: a window XLA believed long enough, filled with work that
hloscope costs lower (or a transfer XLA priced at a fixed default below its real
time), is often *why* a transfer is exposed.

Figures are µs only when the speed-of-light (SOL) estimator drove the schedule; under
XLA's approximate estimator the log holds no per-op figures (``estimator`` says which).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hloscope.analysis.simulate.verdict import Verdict
from hloscope.hlo.xla_log import LatencySource, XlaLog


@dataclass(frozen=True)
class XlaTransferView:
    """XLA's view of one async transfer (figures in µs per execution).

    transfer: the start instruction's name. latency_us: the latency XLA's estimator gave
    the pair (None when it logged none). default: that latency is the wrapped estimator's
    fixed figure, the same whatever the bytes. window_us: the sum of XLA's costs of the
    instructions hloscope found in the window (compute, and the collectives' share),
    None when XLA priced none of them. priced / window_ops: how many of the window's
    instructions XLA's log priced, of how many.
    """

    transfer: str
    latency_us: float | None
    default: bool
    window_us: float | None
    priced: int
    window_ops: int


@dataclass(frozen=True)
class XlaEstimates:
    """XLA's scheduler figures for a step: the estimator that drove it and one view per async transfer.

    profile: the profile file XLA scheduled with (PGLE), else None. step_us: the step as XLA's
    scheduler timed its own schedule (each computation's total after scheduling times its runs
    per step), when its costs are µs (SOL estimator or a profile); None otherwise.
    memory_limit_bytes: the memory limit XLA's scheduler logged for the step's module (None: not
    logged).
    """

    estimator: str | None
    transfers: dict[str, XlaTransferView]
    profile: str | None = None
    step_us: float | None = None
    memory_limit_bytes: int | None = None

    def for_transfer(self, start_name: str) -> XlaTransferView | None:
        return self.transfers.get(start_name)


def compare_with_xla(log: XlaLog, verdicts: Sequence[Verdict],
                     executions: Mapping[str, int] | None = None) -> XlaEstimates:
    """One :class:`XlaTransferView` per transfer that has an async pair, and XLA's step
    (``executions``: runs per step of each scheduled computation)."""
    views: dict[str, XlaTransferView] = {}
    for v in verdicts:
        if v.pair is None:
            continue
        name = v.transfer.instruction.name
        lat = log.latency(name)
        total = 0.0
        priced = 0
        ops = (*v.compute, *v.collectives)
        for op in ops:
            cost = _op_cost(log, op.name, op.fraction)
            if cost is not None:
                total += cost
                priced += 1
        views[name] = XlaTransferView(
            transfer=name,
            latency_us=None if lat is None else lat.us,
            default=bool(lat is not None and lat.source is LatencySource.DEFAULT),
            window_us=total if priced else None,
            priced=priced,
            window_ops=len(ops),
        )
    step = log.step_cycles(executions or {}) if log.cycles_are_us else None
    return XlaEstimates(log.estimator, views, log.profile, step, log.memory_limit_bytes)


def _op_cost(log: XlaLog, name: str, fraction: float) -> float | None:
    """XLA's figure for one instruction of a window: an async collective's latency
    (its share inside the window), else the instruction's own cost."""
    lat = log.latency(name)
    if lat is not None and lat.source is not LatencySource.DEFAULT:
        return lat.us * fraction
    return log.cost_us(name)
