"""The step's totals (:class:`Summary`): bytes per step per direction, verdict counts, the
simulated step time, the estimates that cannot be. Pass:
``summarize(verdicts, unknown_trip_counts, timeline, implausible_ops) -> Summary``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hloscope.analysis.cost.plausible import STEP_LIMIT_US, Implausible, ImplausibleOp
from hloscope.analysis.kinds import Direction, VerdictKind
from hloscope.analysis.simulate.timeline import Timeline
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.vocab import LinkMode


@dataclass(frozen=True)
class LoopBytes:
    """Bytes moved by one execution of a computation that holds transfers."""

    computation: str
    executions: int
    to_host_bytes: int
    to_device_bytes: int
    transfers: int


@dataclass(frozen=True)
class StepTime:
    """The simulated step (analysis/simulate/step.py), µs: step = compute + the three waits.

    link_mode: host link figures used. extrapolated_loops: loops whose later iterations
    were extrapolated from a steady one rather than replayed.
    """

    step_us: float
    compute_us: float
    exposed_transfer_us: float
    exposed_collective_us: float
    other_wait_us: float
    link_mode: LinkMode
    extrapolated_loops: int


@dataclass(frozen=True)
class Summary:
    """Step totals. Bytes are per step (``bytes * executions``); times are estimates in µs.

    implausible: the ops whose estimate exceeds what their shapes allow at 1 % of peak and the
    step when it is a day or more (``hloscope.analysis.cost.plausible``); None when there are none.
    """

    transfers: int
    to_host_bytes_per_step: int
    to_device_bytes_per_step: int
    by_verdict: dict[VerdictKind, int]
    est_exposed_us_per_step: float
    loops: tuple[LoopBytes, ...]
    unknown_trip_counts: tuple[str, ...]
    step: StepTime | None = None
    implausible: Implausible | None = None


def summarize(verdicts: Sequence[Verdict], unknown_trip_counts: Sequence[str],
              timeline: Timeline | None = None, implausible_ops: Sequence[ImplausibleOp] = ()) -> Summary:
    per_step = {d: 0 for d in Direction}
    by_verdict = {k: 0 for k in VerdictKind}
    rows: dict[str, list[int]] = {}
    order: dict[str, int] = {}
    exposed = 0.0
    for v in verdicts:
        t = v.transfer
        per_step[t.direction] += t.bytes * t.executions
        by_verdict[v.verdict] += 1
        exposed += v.est_exposed_us * t.executions
        r = rows.setdefault(t.computation, [0, 0, 0])
        order.setdefault(t.computation, t.executions)
        r[0 if t.direction is Direction.TO_HOST else 1] += t.bytes
        r[2] += 1
    loops = tuple(LoopBytes(c, order[c], r[0], r[1], r[2]) for c, r in rows.items())
    step = None
    if timeline is not None:
        step = StepTime(timeline.step_us, timeline.compute_us, timeline.exposed_transfer_us,
                        timeline.exposed_collective_us, timeline.other_wait_us, timeline.link_mode,
                        sum(lp.extrapolated for lp in timeline.loops))
    long_step = step.step_us if step is not None and step.step_us >= STEP_LIMIT_US else None
    implausible = Implausible(tuple(implausible_ops), long_step) if implausible_ops or long_step is not None else None
    return Summary(len(verdicts), per_step[Direction.TO_HOST], per_step[Direction.TO_DEVICE], by_verdict,
                   exposed, loops, tuple(unknown_trip_counts), step, implausible)


