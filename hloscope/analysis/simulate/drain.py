"""Host copies that XLA scheduled as overlapping but that drain one after another.

Pass: ``find_serial_drains(timeline) -> tuple[SerialDrain, ...]``.

XLA's GPU scheduler may place several large host copies in one direction so that they are
in flight together (marin-community/marin's logbook measured three 70 ms optimizer-state
D->H copies, scheduled so, draining in series at the end of a GB200 step). The GPU's one
copy engine per direction moves their bytes one copy after another, first ready first served
(``Target.host_copy_engines``; shared among more engines the last would end at the same time):
the last of them finishes the sum of their times after the first is issued. The simulation
(``hloscope.analysis.simulate.engine``) already runs them so; this pass groups the copies that
were in flight together on one link, moving or waiting for the engine (connected through
``TransferTiming.beside_transfers``)
and, per copy, the wait at its done beyond what it would have waited alone on the link
(issue + its own transfer time, against when the compute stream reached the done). A group
is reported when those extra waits, per step, add up to at least 1% of the simulated step
(:data:`MATERIAL_STEP_FRACTION`, a reporting threshold), so a microsecond of two small copies
sharing the link is not a finding.
Facts only: the words are in ``hloscope.render``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.kinds import Direction
from hloscope.analysis.simulate.timeline import Timeline, TransferTiming

#: A group counts when its copies' extra waits per step add up to this fraction of the step.
MATERIAL_STEP_FRACTION = 0.01


@dataclass(frozen=True)
class SerialDrain:
    """Host copies in flight together on one link whose dones waited for each other's bytes.

    direction: the link. computation: where the first of them is issued. starts: their start
    instructions, in issue order (last simulated execution). bytes: their bytes together.
    priced_us: the longest of them alone on the link (µs): what the group takes if they
    overlapped at full bandwidth each, as XLA's scheduler prices them. drain_us: first issue to
    last finish in the simulation (µs). lost_us: the waits at their dones beyond each copy's
    wait alone on the link, per execution (µs); lost_us_per_step: times their executions.
    """

    direction: Direction
    computation: str
    starts: tuple[str, ...]
    bytes: int
    priced_us: float
    drain_us: float
    lost_us: float
    lost_us_per_step: float


def _lost_us(t: TransferTiming) -> float:
    """Wait at the done beyond the wait the copy would have had alone on its link (µs)."""
    alone = max(0.0, t.issue_us + t.transfer_us - t.done_us)  # done_us: when the compute stream reached it
    return max(0.0, t.wait_us - alone)


def find_serial_drains(timeline: Timeline) -> tuple[SerialDrain, ...]:
    """Groups of host copies that drained in series with material waits, largest loss first."""
    copies = {t.start: t for t in timeline.transfers.values()
              if t.is_async and t.matched and t.executions > 0}
    seen: set[str] = set()
    out: list[SerialDrain] = []
    for name in copies:
        if name in seen:
            continue
        group, todo = [], [name]
        seen.add(name)
        while todo:
            t = copies[todo.pop()]
            group.append(t)
            for other in t.beside_transfers:
                if other in copies and other not in seen and copies[other].direction is t.direction:
                    seen.add(other)
                    todo.append(other)
        if len(group) < 2:
            continue
        group.sort(key=lambda t: (t.issue_us, t.start))
        lost = sum(_lost_us(t) for t in group)
        per_step = sum(_lost_us(t) * t.executions for t in group)
        if per_step <= 0 or per_step < MATERIAL_STEP_FRACTION * timeline.step_us:
            continue
        out.append(SerialDrain(
            direction=group[0].direction, computation=group[0].computation,
            starts=tuple(t.start for t in group), bytes=sum(t.bytes for t in group),
            priced_us=max(t.transfer_us for t in group),
            drain_us=max(t.finish_us for t in group) - group[0].issue_us, lost_us=lost, lost_us_per_step=per_step))
    return tuple(sorted(out, key=lambda d: -d.lost_us_per_step))
