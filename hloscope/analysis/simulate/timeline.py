"""The simulated step, as data: what each resource did and when, each host transfer's timing and who
held it up, how each loop was run (:class:`Timeline`), how a simulation is run (:class:`SimSettings`)
and the what-ifs a re-simulation takes (:class:`SimScales`).

Built by ``simulate_step`` (``hloscope.analysis.simulate.step``; how the step is simulated:
``hloscope.analysis.simulate.engine``, docs/simulation.md); read by the verdicts, slack, the margins,
the renderers, the TUI and the trace. All times in microseconds from the start of the step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from hloscope.analysis.kinds import Direction
from hloscope.analysis.structure.opclass import Resource
from hloscope.analysis.structure.pairs import AsyncPair
from hloscope.analysis.structure.streams import ExecutionStream
from hloscope.hlo.model import Instruction
from hloscope.vocab import LinkMode


class SliceKind(StrEnum):
    """What a slice of a resource's time was spent on."""

    COMPUTE = "compute"  # an op on the compute stream
    WAIT = "wait"  # the compute stream waiting at a done (or for a synchronous op)
    COLLECTIVE = "collective"  # a collective on the collective stream
    ASYNC = "async"  # another async op on its own stream
    TRANSFER = "transfer"  # a host transfer on a link
    EXTRAPOLATED = "extrapolated"  # loop iterations not simulated, taken as the last one


@dataclass(frozen=True, slots=True)
class Slice:
    """One interval of one resource.

    resource: the :class:`~hloscope.analysis.structure.opclass.Resource` it occupies.
    start_us / end_us: from the start of the step.
    computation / name: the instruction (the start of an async op; for a wait,
    the done). kind: :class:`SliceKind`. bytes: bytes moved (transfers,
    collectives) or HBM bytes (compute); 0 for waits. iteration: 0-based
    iteration of the innermost enclosing loop, -1 outside loops.
    """

    resource: Resource
    start_us: float
    end_us: float
    computation: str
    name: str
    kind: SliceKind
    bytes: int
    iteration: int = -1


class HoldKind(StrEnum):
    """Where one transfer held another up."""

    STREAM = "stream"  # ahead of it on its XLA execution stream
    ENGINE = "engine"  # on the copy engine it waited for
    LINK = "link"  # moving beside it on the link (sharing its bandwidth)


@dataclass(frozen=True, slots=True)
class HeldUp:
    """One transfer's share of another's waits: ``other`` (its start) waited, per step, ``us`` of
    which are charged to the holder; ``executions``: the other's executions per step; ``where``:
    how the holder held it (its last simulated execution)."""

    other: str
    us: float
    executions: int
    where: HoldKind

    @property
    def per_execution_us(self) -> float:
        return self.us / self.executions if self.executions else 0.0


@dataclass(frozen=True, kw_only=True)
class TransferTiming:
    """The simulated timing of one host transfer.

    Times are those of its last simulated execution (the steady state for a
    loop; extrapolated iterations are not replayed), from the start of the
    step, in microseconds. transfer_us: its bytes
    alone on the link. duration_us: issue to finish, longer when it shares the
    link. wait_us: how long the compute stream waited at its done in that
    execution; wait_us_per_step: summed over all ``executions`` (extrapolated
    ones included). beside_*: what ran while it was in flight (names of compute
    ops, collectives, other transfers on the same link); compute_beside_us: the
    compute time among them; memory_bound_beside_us: the part of it spent in
    memory-bound kernels (``OpCost.memory_bound``), which share HBM with the copy.
    matched: a done was found and reached. stream: XLA's execution stream for its start
    (``hloscope.analysis.structure.streams``), when known. queued_us: how long its bytes waited, after
    its DMA setup, for the ops ahead of it on that stream (``queued_behind``: the starts
    still in flight there when it was issued), in that execution. engine_wait_us: how long it
    then waited for a free copy engine of its direction (``Target.host_copy_engines``), behind
    copies of other streams that became ready before it, in that execution (``engine_behind``:
    those on the engines or waiting ahead of it when it became ready).
    blame_us: the step's waits at host transfers' dones charged to this transfer, per step
    (the simulation's blame, docs/verdicts.md): the part of its own waits it would
    have waited had nothing held it up, plus its share of the waits of the transfers it held up
    (ahead of them on their stream, on the copy engine, or sharing the link). Over all
    transfers they add up to ``Timeline.exposed_transfer_us``. held_up: (start of a transfer it
    held up, µs per step of that one's waits charged to it), largest first; held_back_by: the
    same from the other side (who held this one up, and how much of its waits went to them).
    """

    computation: str
    start: str
    done: str | None
    done_computation: str | None
    direction: Direction
    bytes: int
    is_async: bool
    executions: int
    transfer_us: float
    issue_us: float
    finish_us: float
    done_us: float
    wait_us: float
    wait_us_per_step: float
    beside_compute: tuple[str, ...] = ()
    beside_collectives: tuple[str, ...] = ()
    beside_transfers: tuple[str, ...] = ()
    compute_beside_us: float = 0.0
    memory_bound_beside_us: float = 0.0
    matched: bool = True
    stream: ExecutionStream | None = None
    queued_us: float = 0.0
    queued_behind: tuple[str, ...] = ()
    engine_wait_us: float = 0.0
    engine_behind: tuple[str, ...] = ()
    blame_us: float = 0.0
    held_up: tuple[HeldUp, ...] = ()
    held_back_by: tuple[HeldUp, ...] = ()

    @property
    def held_up_us(self) -> float:
        """Per step, the waits of other transfers charged to this one."""
        return sum(h.us for h in self.held_up)

    @property
    def blame_per_execution_us(self) -> float:
        return self.blame_us / self.executions if self.executions else 0.0

    @property
    def duration_us(self) -> float:
        return self.finish_us - self.issue_us

    @property
    def mean_wait_us(self) -> float:
        """Wait at the done per execution, averaged over the step."""
        return self.wait_us_per_step / self.executions if self.executions else 0.0


@dataclass(frozen=True)
class LoopRun:
    """How one while loop was simulated (once per run of its caller; the last run).

    computation / instruction: the while op. body: its body computation.
    trip_count: iterations per run (1 when unknown: ``trip_known`` False).
    simulated: iterations simulated; extrapolated: the rest were taken as the
    last one; steady: the last two simulated iterations matched (time and waits).
    iteration_us: the last simulated iteration's duration.
    """

    computation: str
    instruction: str
    body: str
    trip_count: int
    trip_known: bool
    simulated: int
    extrapolated: bool
    steady: bool
    iteration_us: float


@dataclass(frozen=True)
class Timeline:
    """The simulated step.

    slices: per resource (``RESOURCES`` that were used), in start order.
    transfers: per transfer, keyed by (computation, start instruction name).
    step_us: the step's estimated time. compute_us: time the compute stream ran
    ops. exposed_transfer_us / exposed_collective_us / other_wait_us: time it
    waited for transfers / collectives / other async ops (synchronous ones
    included); the four add up to step_us. loops: every loop run simulated, and
    how. link_mode: the cost model's host-link figure. scheduled: the module carried a
    schedule (otherwise text order was replayed). reached: per host transfer, when the compute
    stream last reached its start (µs from the step start): in a loop body, in the last simulated
    iteration of its last run, the iteration whose slices come last; never moved by extrapolation
    (a transfer's ``issue_us`` is that of its last *fully* simulated execution, which for one in
    flight across extrapolated iterations is an earlier iteration's).
    influential: host transfers that held something up at some point (a copy behind them on
    their stream, on the copy engine or sharing the link, an op behind them on their stream, the
    other link's HBM share): one outside it that waited nothing costs nothing when made free
    (``hloscope.analysis.simulate.margin``).
    """

    slices: dict[Resource, tuple[Slice, ...]]
    transfers: dict[tuple[str, str], TransferTiming]
    step_us: float
    compute_us: float
    exposed_transfer_us: float
    exposed_collective_us: float
    other_wait_us: float
    loops: tuple[LoopRun, ...]
    link_mode: LinkMode
    scheduled: bool
    reached: dict[tuple[str, str], float] = field(default_factory=dict)
    influential: frozenset[tuple[str, str]] = frozenset()

    @property
    def extrapolated(self) -> bool:
        """Some loop iterations were extrapolated rather than simulated."""
        return any(lp.extrapolated for lp in self.loops)

    def self_check(self) -> None:
        """Invariants (used by tests): slices inside the step and in order per
        resource; the four totals add up to the step time."""
        eps = 1e-6 * max(1.0, self.step_us)
        for res, slices in self.slices.items():
            last = -1.0
            for s in slices:
                assert -eps <= s.start_us <= s.end_us <= self.step_us + eps, (res, s)
                assert s.start_us >= last - eps, (res, s)
                last = s.start_us
        total = self.compute_us + self.exposed_transfer_us + self.exposed_collective_us + self.other_wait_us
        assert abs(total - self.step_us) <= eps, (total, self.step_us)


@dataclass(frozen=True)
class SimSettings:
    """How one simulation is run (``simulate_step``, the margins' re-simulations); the defaults are the report's.

    max_iterations: the iterations simulated per loop run before the rest are extrapolated (at least 2).
    extrapolate: False simulates every iteration (slow on long loops; tests).
    share_hbm: False: transfers keep their link's bandwidth beside memory-bound kernels.
    copy_engines: host copies that move bytes at once per direction (the others wait, first ready first
    served); None: the target's ``host_copy_engines``. A number at least the count of copies ever in
    flight together gives the equal sharing of bandwidth among all of them.
    detail: False: the same simulation, the same step time, waits and blame, without what only the views
    read: no compute slices, and no transfer's ``beside_*`` / ``compute_beside_us`` /
    ``memory_bound_beside_us`` (the margins' re-simulations, which read verdicts and step times only).
    """

    max_iterations: int = 6
    extrapolate: bool = True
    share_hbm: bool = True
    copy_engines: int | None = None
    detail: bool = True


#: The report's settings.
DEFAULT_SETTINGS = SimSettings()
#: The margins' re-simulations: verdicts and step times only (``SimSettings.detail``).
WHAT_IF_SETTINGS = SimSettings(detail=False)


@dataclass(frozen=True)
class SimScales:
    """What-ifs for a re-simulation (``hloscope.analysis.simulate.margin``); the defaults change nothing.

    link: both host links' bandwidth times this. compute: every op's time on the compute,
    collective and async streams times this (host transfers aside). per_op: a further factor per
    instruction (its op class's error). free_transfers: host transfers (computation, start) that
    cost nothing: done when issued, holding nothing up. free: instructions (names) that cost nothing.
    """

    link: float = 1.0
    compute: float = 1.0
    per_op: Callable[[Instruction], float] | None = None
    free_transfers: frozenset[tuple[str, str]] = frozenset()
    free: frozenset[str] = frozenset()


def waits_by_start(timeline: Timeline | None, pairs: Sequence[AsyncPair]) -> dict[str, float]:
    """Start name -> the simulated compute stream's wait at its done per step, µs: a host transfer's
    ``wait_us_per_step`` (its extrapolated loop iterations included), else the wait slices the
    timeline holds."""
    if timeline is None:
        return {}
    start_of = {p.done.name: p.start.name for p in pairs}
    out: dict[str, float] = {}
    for slices in timeline.slices.values():
        for s in slices:
            if s.kind is SliceKind.WAIT and s.name in start_of:
                out[start_of[s.name]] = out.get(start_of[s.name], 0.0) + s.end_us - s.start_us
    per_step: dict[str, float] = {}
    for (_comp, start), t in timeline.transfers.items():
        per_step[start] = per_step.get(start, 0.0) + t.wait_us_per_step
    out.update(per_step)
    return out


def waits_per_step(timeline: Timeline | None, pairs: Sequence[AsyncPair]) -> dict[str, float]:
    """:func:`waits_by_start` with every wait per step: the waits at a done in the body of a loop
    whose last iterations were extrapolated (``LoopRun.extrapolated``) counted for every iteration,
    as the step's ``other_wait_us`` counts them (a host transfer's are already). What ``--measured``
    compares with the profile's waits (on the v5e ``big`` run, ``copy-done.2`` waits 41.0 us in each
    of the 2 simulated iterations of 8: 327.8 us per step, not 81.9)."""
    out = waits_by_start(timeline, pairs)
    if timeline is None:
        return out
    scale = {run.body: run.trip_count / run.simulated for run in timeline.loops
             if run.extrapolated and run.simulated > 0 and run.trip_count > run.simulated}
    moved = {start for _comp, start in timeline.transfers}
    for p in pairs:
        factor = scale.get(p.done.computation)
        if factor is not None and p.start.name in out and p.start.name not in moved:
            out[p.start.name] *= factor
    return out
