"""Simulate one training step along its schedule: when each op runs, and who waits.

Pass: ``simulate_step(module, cost, pairs, transfers, callgraph) -> Timeline``.

The scheduled order of the entry computation is replayed with separate
resources, all in microseconds from the start of the step:

- ``compute``: one stream; each op runs for its roofline time
  (:class:`~hloscope.analysis.cost.roofline.CostModel`), one after the other. A done
  blocks it until its async operation has finished: that wait is the op's
  *exposed* time. A synchronous collective or host copy blocks it for its whole
  duration.
- ``collective``: XLA's two collective streams: one for all-gather, reduce-scatter,
  all-reduce and all-to-all (NCCL runs them in order), one for point-to-point
  collectives (collective-permute, send, recv); each starts when issued and its
  stream is free, for its ring time
  (:meth:`~hloscope.analysis.cost.roofline.CostModel.collective_us`). Both are recorded on
  the ``collective`` resource, whose slices may then overlap.
- ``async``: other async ops (not transfers, not collectives), in order.
- XLA's execution streams (``hloscope.analysis.structure.streams``, when given): each compute stream
  (and, from XLA 0.12, each of the two memcpy streams host copies take) runs what is issued
  on it in order, so an async op or host copy issued behind another on the same stream
  starts when that one has finished (``TransferTiming.queued_us``).
- ``host link D->H`` / ``host link H->D``: one per direction, moved by
  ``Target.host_copy_engines`` copy engines (1: one copy of a direction moves at a time,
  the measured behaviour, docs/simulation.md "Copy engines"). A transfer is ready
  ``CostModel.transfer_latency_us`` after its start is issued (its DMA setup) and once
  nothing is ahead of it on its stream; ready transfers take a free engine or wait for
  one, first ready first served (``TransferTiming.engine_wait_us``). Those on engines
  share the link's per-GPU bandwidth (``CostModel.link_bandwidth``; each of n gets 1/n),
  so alone on its link a transfer takes ``CostModel.transfer_us`` (the windows' figure too).

A while loop runs its body once per trip, carrying in-flight operations across
the back edge, so a transfer started in one iteration and finished in the next
is timed as the schedule runs it. Iterations are simulated until two in a row
take the same time with the same waits (at least 2, at most
``max_iterations``); the rest are extrapolated from the last one, every clock
shifted by the remaining iterations times its duration, and the
:class:`LoopRun` says so. A ``call`` runs its callee; a ``conditional`` its most
expensive branch. Each op's time includes its kernel launch (the cost model's); the
copies moving share the HBM bandwidth a memory-bound kernel leaves (``share_hbm``,
docs/simulation.md).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.kinds import Direction
from hloscope.analysis.structure.callgraph import CallGraph, callee_name
from hloscope.analysis.structure.opclass import (
    RESOURCES,
    OpClass,
    Resource,
    collective_kind,
    link_of,
    value_shape,
)
from hloscope.analysis.structure.pairs import AsyncPair
from hloscope.analysis.structure.streams import ExecutionStream, StreamAssignment, StreamKind
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.hlo.model import Instruction, Module
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
    (``hloscope.analysis.simulate.timeline``'s blame, docs/verdicts.md): the part of its own waits it would
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


# -- the simulation -------------------------------------------------------------------------------

_EPS = 1e-9


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


class _Flow:
    """One transfer instance on a link: bytes left, issue and (once known) finish time."""

    __slots__ = ("key", "remaining", "issue", "finish", "bytes", "after", "ready", "began", "behind", "held")

    def __init__(self, key: tuple[str, str], nbytes: int, issue: float, after: _Flow | None = None) -> None:
        self.key = key
        self.bytes = nbytes
        self.remaining = float(nbytes)
        self.issue = issue
        self.finish = -1.0
        self.after = after  # the flow ahead of it on its execution stream (same link): it waits for it
        self.ready = -1.0  # when its stream let it go (DMA set up, nothing ahead of it on its stream)
        self.began = -1.0  # when its bytes began to flow (a copy engine took it)
        self.behind: tuple[str, ...] = ()  # the copies on the engines or waiting ahead when it became ready
        # Who held it up, µs: the flow ahead of it on its stream (until it let it go), the flows on
        # the engines while it waited for one, the flows sharing the link with it (each the part of
        # the time it would have moved alone). Its own setup and bytes are not in it.
        self.held: dict[tuple[str, str], float] = {}

    def hold(self, by: tuple[str, str], us: float) -> None:
        if us > 0 and by != self.key:
            self.held[by] = self.held.get(by, 0.0) + us

    def clone(self, flows: dict[int, _Flow]) -> _Flow:
        """A copy for a forked simulation; ``flows`` maps the originals (by id) to their copies, so
        that a flow shared by a link and an op (or ahead of another) stays one flow."""
        got = flows.get(id(self))
        if got is not None:
            return got
        f = _Flow(self.key, self.bytes, self.issue)  # (mypyc: no __new__ without __init__)
        flows[id(self)] = f
        f.key, f.bytes, f.remaining, f.issue, f.finish = self.key, self.bytes, self.remaining, self.issue, self.finish
        f.ready, f.began, f.behind, f.held = self.ready, self.began, self.behind, dict(self.held)
        f.after = self.after.clone(flows) if self.after is not None else None
        return f


class _Link:
    """A host link in one direction, moved by ``engines`` copy engines.

    A flow queued behind another on its execution stream waits (``queued``) until that one
    finishes, then for its DMA setup (``latency``); it is then *ready*. At most ``engines``
    ready flows move bytes at once (``active``), sharing ``bw`` (bytes/us) equally; the others
    wait (``waiting``) in the order they became ready (first come, first served: the copy
    engine takes the copy that became ready first, whatever stream it is on) and take an
    engine, with no new setup, the moment one frees."""

    __slots__ = ("bw", "now", "active", "queued", "waiting", "latency", "engines")

    def __init__(self, bw: float, latency: float = 0.0, engines: int = 1) -> None:
        self.bw = bw
        self.now = 0.0
        self.active: list[_Flow] = []
        self.queued: list[_Flow] = []
        self.waiting: list[_Flow] = []
        self.latency = latency
        self.engines = max(1, engines)

    def _ready(self, f: _Flow, at: float) -> None:
        """``f`` is ready at ``at`` (>= now): it takes a free engine, or waits for one."""
        f.ready = at
        if f.remaining <= 0:
            f.began = f.finish = at
        elif len(self.active) < self.engines:
            f.began = at
            self.active.append(f)
        else:
            f.behind = tuple(x.key[1] for x in (*self.active, *self.waiting))
            self.waiting.append(f)

    def _free_engines(self) -> None:
        """Engines freed at ``now`` take the waiting flows that became ready first."""
        while self.waiting and len(self.active) < self.engines:
            f = self.waiting.pop(0)
            f.began = self.now
            self.active.append(f)

    def _next_release(self) -> float:
        """Make ready the queued flows whose predecessor has finished and whose time has come;
        the earliest time a still-queued one will be (inf if none can yet)."""
        nxt = float("inf")
        if not self.queued:
            return nxt
        keep = []
        for f in self.queued:
            a = f.after
            if a is not None and a.finish >= 0:
                ready = max(f.issue, a.finish + self.latency)
                if ready <= self.now + _EPS:
                    f.hold(a.key, ready - f.issue)  # held on its stream by the flow ahead of it
                    self._ready(f, max(ready, 0.0))
                    continue
                nxt = min(nxt, ready)
            keep.append(f)
        self.queued = keep
        return nxt

    def advance(self, t: float, until: _Flow | None = None) -> None:
        """Move the link's clock to ``t`` (or until ``until`` finishes), finishing flows."""
        if until is None and t <= self.now:
            return  # never backwards: a flow whose bytes start later (DMA setup) moved it ahead
        while True:
            release = self._next_release()
            if not self.active:
                if release < float("inf") and (until is not None or release <= t):
                    self.now = release
                    continue
                break
            share = self.bw / len(self.active)
            first = min(f.remaining for f in self.active)
            dt = first / share
            if release < self.now + dt and (until is not None or release <= t):
                self._charge(release - self.now)
                moved = share * (release - self.now)
                for f in self.active:
                    f.remaining -= moved
                self.now = release
                continue
            if until is None and self.now + dt > t:
                self._charge(t - self.now)
                moved = share * (t - self.now)
                for f in self.active:
                    f.remaining -= moved
                self.now = t
                return
            self._charge(dt)
            self.now += dt
            moved = share * dt
            keep = []
            for f in self.active:
                f.remaining -= moved
                if f.remaining <= first * 1e-12 + _EPS:
                    f.remaining = 0.0
                    f.finish = self.now
                else:
                    keep.append(f)
            self.active = keep
            self._free_engines()
            if until is not None and until.finish >= 0:
                return
        if until is None:
            self.now = max(self.now, t)

    def _charge(self, dt: float) -> None:
        """``dt`` µs pass with the engines busy: each flow waiting for an engine is held by the
        flows on them (each its share of ``dt``), and each of n flows moving together is held by
        each of the others for dt/n (alone it would have moved n times as fast)."""
        if dt <= 0 or not self.active:
            return
        n = len(self.active)
        part = dt / n
        for f in self.waiting:
            for a in self.active:
                f.hold(a.key, part)
        if n > 1:
            for f in self.active:
                for a in self.active:
                    if a is not f:
                        f.hold(a.key, part)

    def add(self, flow: _Flow) -> None:
        if flow.after is not None and flow.after.finish < 0:
            self.advance(flow.issue)
            self.queued.append(flow)
            return
        if flow.after is not None:  # its predecessor has already finished
            flow.hold(flow.after.key, flow.after.finish + self.latency - flow.issue)
            flow.issue = max(flow.issue, flow.after.finish + self.latency)
            flow.after = None
        self.advance(flow.issue)
        self._ready(flow, max(flow.issue, self.now))

    def finish_of(self, flow: _Flow) -> float:
        if flow.finish < 0:
            self.advance(float("inf"), until=flow)
        return flow.finish

    def clone(self, flows: dict[int, _Flow]) -> _Link:
        """A copy for a forked simulation (its flows copied through ``flows``)."""
        lk = _Link(self.bw, self.latency, self.engines)
        lk.now = self.now
        lk.active = [f.clone(flows) for f in self.active]
        lk.queued = [f.clone(flows) for f in self.queued]
        lk.waiting = [f.clone(flows) for f in self.waiting]
        return lk

    def shift(self, dt: float) -> None:
        self.now += dt
        for f in (*self.active, *self.queued, *self.waiting):
            f.issue += dt
            if f.ready >= 0:
                f.ready += dt
            if f.began >= 0:
                f.began += dt


class _Op:
    """An in-flight async op: a link flow, or a stream op with a known finish."""

    __slots__ = ("key", "flow", "link", "finish", "issue", "kind", "shifted", "stream", "ahead")

    def __init__(self, key: tuple[str, str], kind: Resource, issue: float, finish: float = -1.0,
                 flow: _Flow | None = None, link: _Link | None = None) -> None:
        self.key = key
        self.kind = kind  # the resource it runs on: a host link, the collective or the async stream
        self.issue = issue
        self.finish = finish
        self.flow = flow
        self.link = link
        self.shifted = False  # carried across extrapolated iterations
        self.stream: int | None = None  # XLA's compute or memcpy stream it runs on, when known (``_Sim.stream_ids``)
        self.ahead: tuple[str, ...] = ()  # starts still running on that stream when it was issued

    def clone(self, ops: dict[int, _Op], flows: dict[int, _Flow], links: dict[int, _Link]) -> _Op:
        """A copy for a forked simulation: one copy per op (``ops``), its flow and link the fork's."""
        got = ops.get(id(self))
        if got is not None:
            return got
        op = _Op(self.key, self.kind, self.issue, self.finish,
                 self.flow.clone(flows) if self.flow is not None else None,
                 links[id(self.link)] if self.link is not None else None)
        op.shifted, op.stream, op.ahead = self.shifted, self.stream, self.ahead
        ops[id(self)] = op
        return op

    def finish_time(self) -> float:
        if self.flow is not None and self.link is not None:
            return self.link.finish_of(self.flow)
        return self.finish


#: Collectives XLA runs on its point-to-point stream, beside the collective stream.
_P2P_KINDS = frozenset({"collective-permute", "send", "recv"})

# Step codes of a computation's precompiled program.
_SKIP, _WORK, _START, _DONE, _SYNC_XFER, _SYNC_COLL, _WHILE, _CALL = range(8)


@dataclass
class _Acc:
    """Running totals of the step (µs), and per transfer its executions and summed waits.
    A copy taken at the top of a loop iteration is that iteration's snapshot."""

    compute: float = 0.0
    xfer: float = 0.0
    coll: float = 0.0
    other: float = 0.0
    execs: dict[tuple[str, str], int] = field(default_factory=dict)
    waits: dict[tuple[str, str], float] = field(default_factory=dict)
    blame: dict[tuple[str, str], float] = field(default_factory=dict)  # transfer -> wait charged to it
    caused: dict[tuple[tuple[str, str], tuple[str, str]], float] = field(default_factory=dict)  # (holder, waiter)

    def snapshot(self) -> _Acc:
        return _Acc(self.compute, self.xfer, self.coll, self.other, dict(self.execs), dict(self.waits),
                    dict(self.blame), dict(self.caused))

    def charge(self, waiter: tuple[str, str], wait: float, held: dict[tuple[str, str], float]) -> None:
        """Charge a wait of ``wait`` µs at ``waiter``'s done: the transfers that held it up share
        ``min(wait, held in all)`` in proportion to what each held it; the rest (what it would have
        waited had nothing held it) is its own."""
        if wait <= 0:
            return
        total = sum(held.values())
        others = min(wait, total)
        self.blame[waiter] = self.blame.get(waiter, 0.0) + (wait - others)
        if others <= 0:
            return
        for holder, us in held.items():
            part = others * us / total
            self.blame[holder] = self.blame.get(holder, 0.0) + part
            self.caused[(holder, waiter)] = self.caused.get((holder, waiter), 0.0) + part


@dataclass
class _Last:
    """The last simulated execution of one transfer."""

    issue: float = 0.0
    finish: float = 0.0
    done_at: float = 0.0
    wait: float = 0.0
    done: Instruction | None = None
    queued: float = 0.0
    ahead: tuple[str, ...] = ()
    engine_wait: float = 0.0
    engine_behind: tuple[str, ...] = ()


#: The fields a forked simulation shares with (or copies from) the one it forks; fork() then replaces
#: what must not be shared (links, flows, ops, totals, the small dicts).
_SIM_SHARED = ("record", "transfers", "starts_of", "dma_latency", "links", "stream_tail", "stream_inflight",
               "hbm_per_us", "link_list", "t", "coll_free", "p2p_free", "async_free", "inflight", "live", "acc", "last",
               "slices", "loops", "reached", "influential", "programs", "iteration")


class _Sim:
    def __init__(self, module: Module, cost: CostModel, pairs: list[AsyncPair], transfers: list[HostTransfer],
                 callgraph: CallGraph, max_iterations: int, extrapolate: bool,
                 share_hbm: bool = True, streams: StreamAssignment | None = None,
                 copy_engines: int | None = None, scales: SimScales | None = None, detail: bool = True,
                 base_programs: dict[str, list[tuple[int, Instruction, float]]] | None = None,
                 stream_numbers: _StreamNumbers | None = None) -> None:
        self.module = module
        self.detail = detail
        self.record = True  # keep the slices (False: a what-if whose outcome alone is read: ``simulate.replay``)
        self.base_programs = {} if base_programs is None else base_programs
        self.scales = scales or SimScales()
        self.callgraph = callgraph
        self.cost = cost
        self.max_iterations = max(2, max_iterations)
        self.extrapolate = extrapolate
        self.transfers = {(t.computation, t.instruction.name): t for t in transfers}
        self.starts_of: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for p in pairs:
            self.starts_of.setdefault((p.done.computation, p.done.name), []).append(
                (p.start.computation, p.start.name))
        self.dma_latency = cost.transfer_latency_us
        engines = cost.target.host_copy_engines if copy_engines is None else copy_engines
        self.links = {d: _Link(cost.link_bandwidth(d) * self.scales.link / 1e6, self.dma_latency, engines)
                      for d in Direction}
        self.streams = streams
        self.stream_tail: dict[int, _Op] = {}  # the last op issued on each compute stream
        self.stream_inflight: dict[int, list[_Op]] = {}  # issued there, done not yet reached
        self.stream_numbers = _StreamNumbers(streams) if stream_numbers is None else stream_numbers
        self.hbm_per_us = cost.target.hbm_bandwidth / 1e6
        self.link_list = list(self.links.values())
        self.share_hbm = share_hbm
        self.t = 0.0
        self.coll_free = 0.0
        self.p2p_free = 0.0
        self.async_free = 0.0
        self.inflight: dict[tuple[str, str], list[_Op]] = {}
        self.live = 0  # ops in ``inflight`` (issued, done not yet reached)
        self.acc = _Acc()
        self.last: dict[tuple[str, str], _Last] = {}
        self.slices: dict[Resource, list[Slice]] = {r: [] for r in RESOURCES}
        self.loops: dict[tuple[str, str], LoopRun] = {}
        self.reached: dict[tuple[str, str], float] = {}  # host transfer -> when its start was last reached
        self.influential: set[tuple[str, str]] = set()  # transfers that held anything up
        self.programs: dict[str, list[tuple[int, Instruction, float]]] = {}
        self.iteration = -1

    def fork(self, scales: SimScales) -> _Sim:
        """A copy of this simulation, paused between two ops of the entry computation, to go on with
        ``scales`` (which must leave the programs as they are: a link factor, free transfers). What
        only the views read (slices) starts empty; every clock, flow, queue and total is copied."""
        # Built through __init__ (cheaply: no pairs, no transfers) and then given every field of this
        # one: a class compiled by mypyc has neither an instance __dict__ nor a __new__ without __init__.
        new = _Sim(self.module, self.cost, [], [], self.callgraph, self.max_iterations, self.extrapolate,
                   self.share_hbm, self.streams, scales=scales, detail=self.detail,
                   base_programs=self.base_programs, stream_numbers=self.stream_numbers)
        for name in _SIM_SHARED:
            setattr(new, name, getattr(self, name))
        new.scales = scales
        flows: dict[int, _Flow] = {}
        links = {id(lk): lk.clone(flows) for lk in self.links.values()}
        new.links = {d: links[id(lk)] for d, lk in self.links.items()}
        if scales.link != self.scales.link:
            for d, lk in new.links.items():
                lk.bw = self.cost.link_bandwidth(d) * scales.link / 1e6
        new.link_list = list(new.links.values())
        ops: dict[int, _Op] = {}
        new.inflight = {k: [o.clone(ops, flows, links) for o in v] for k, v in self.inflight.items()}
        new.stream_tail = {s: o.clone(ops, flows, links) for s, o in self.stream_tail.items()}
        new.stream_inflight = {s: [o.clone(ops, flows, links) for o in v] for s, v in self.stream_inflight.items()}
        new.acc = self.acc.snapshot()
        new.last = dict(self.last)
        new.reached = dict(self.reached)
        new.influential = set(self.influential)
        new.loops = dict(self.loops)
        new.slices = {r: [] for r in RESOURCES}
        return new

    def quiet(self) -> bool:
        """Nothing in flight: every done reached, the links idle, the collective and async streams
        free by now. What runs next then depends on the clock alone."""
        t = self.t
        if self.live or self.coll_free > t or self.p2p_free > t or self.async_free > t:
            return False
        return all(not (lk.active or lk.queued or lk.waiting or lk.now > t) for lk in self.link_list)

    def entry_positions(self) -> dict[tuple[str, str], tuple[int, int]]:
        """Per host transfer, the first and the last position of the entry computation's program
        whose op may reach it (its start, or a loop, call or conditional whose computations hold it)."""
        held: dict[str, set[tuple[str, str]]] = {}

        def within(name: str) -> set[tuple[str, str]]:
            got = held.get(name)
            if got is not None:
                return got
            held[name] = got = set()
            for code, ins, _us in self.program(name):
                if code in (_START, _SYNC_XFER):
                    if (name, ins.name) in self.transfers:
                        got.add((name, ins.name))
                elif code in (_WHILE, _CALL):
                    for c in ins.called_computations:
                        if c in self.module.computations:
                            got |= within(c)
            return got

        out: dict[tuple[str, str], tuple[int, int]] = {}
        entry = self.module.entry_name
        for i, (code, ins, _us) in enumerate(self.program(entry)):
            reached: set[tuple[str, str]] = set()
            if code in (_START, _SYNC_XFER) and (entry, ins.name) in self.transfers:
                reached.add((entry, ins.name))
            elif code in (_WHILE, _CALL):
                for c in ins.called_computations:
                    if c in self.module.computations:
                        reached |= within(c)
            for k in reached:
                out[k] = (out[k][0] if k in out else i, i)
        return out

    # -- programs: each computation's schedule, classified once ----------------------------------

    def program(self, name: str) -> list[tuple[int, Instruction, float]]:
        prog = self.programs.get(name)
        if prog is not None:
            return prog
        base = self.base_programs.get(name)
        if base is None:
            base = self.base_programs[name] = self._base_program(name)
        sc = self.scales
        if sc.per_op is None and not sc.free and sc.compute == 1.0:
            # Every factor is 1.0: each time is the base's (``us * 1.0 == us``), no op drops out (the base
            # keeps work of positive time only). The list is shared, never changed.
            self.programs[name] = base
            return base
        prog = []
        for code, ins, us in base:
            if us:
                us *= self._scale(ins)
                if code == _WORK and us <= 0:
                    continue
            prog.append((code, ins, us))
        self.programs[name] = prog
        return prog

    def _base_program(self, name: str) -> list[tuple[int, Instruction, float]]:
        """The computation's schedule classified, each op's time unscaled (shared by re-simulations)."""
        prog: list[tuple[int, Instruction, float]] = []
        cost = self.cost
        transfers = self.transfers
        instructions = self.module.computations[name].instructions
        for ins, cls in zip(instructions, cost.index.op_classes(name), strict=True):
            if cls is OpClass.FREE or cls is OpClass.UPDATE:
                continue
            if cls is OpClass.WORK:
                key = (name, ins.name)
                if key in transfers and not transfers[key].is_annotation:
                    prog.append((_SYNC_XFER, ins, 0.0))
                    continue
                us = cost.op_cost(ins).us
                if us > 0:
                    prog.append((_WORK, ins, us))
            elif cls is OpClass.CONTROL:
                prog.append((_WHILE if ins.opcode == "while" else _CALL, ins, 0.0))
            elif cls is OpClass.START:
                measured = cost.measured_us(ins)  # a profile's time (by the wrapped op's name too)
                prog.append((_START, ins, 0.0 if (name, ins.name) in transfers else
                             (measured if measured is not None else cost.collective_us(ins) if collective_kind(ins)
                              else cost.op_cost(ins).us)))
            elif cls is OpClass.DONE:
                prog.append((_DONE, ins, 0.0))
            else:  # a synchronous collective, or a synchronous host copy
                key = (name, ins.name)
                if key in transfers and not transfers[key].is_annotation:
                    prog.append((_SYNC_XFER, ins, 0.0))
                else:
                    prog.append((_SYNC_COLL, ins, cost.collective_us(ins)))
        return prog

    def _scale(self, ins: Instruction) -> float:
        sc = self.scales
        if sc.free and ins.name in sc.free:
            return 0.0
        f = sc.compute
        if sc.per_op is not None:
            f *= sc.per_op(ins)
        return f

    # -- running -----------------------------------------------------------------------------------

    def run(self, name: str, begin: int = 0, end: int | None = None) -> None:
        """Run computation ``name``'s program from position ``begin`` up to ``end`` (not included;
        None: to its end). A run paused at a position goes on from there (``hloscope.analysis.simulate.replay``)."""
        prog = self.program(name)
        self._run_ops(name, prog[begin:end] if begin or end is not None else prog)

    def run_to_quiet(self, name: str, begin: int, at: Iterable[int]) -> int:
        """Run computation ``name``'s program from position ``begin``, stopping before the op at the
        first position of ``at`` (ascending, none before ``begin``) where the simulation is
        :meth:`quiet` (the program's length: after its last op); that position, or -1 when it ran to
        the end without being quiet at any of them."""
        prog = self.program(name)
        for q in at:
            if q > begin:
                self._run_ops(name, prog[begin:q])
                begin = q
            if self.quiet():
                return q
        self._run_ops(name, prog[begin:])
        return -1

    def _run_ops(self, name: str, prog: list[tuple[int, Instruction, float]]) -> None:
        slices = self.slices
        for code, ins, us in prog:
            if code == _WORK:
                if self.share_hbm and (self.link_list[0].active or self.link_list[1].active):
                    self._share_hbm(ins, us)
                if self.detail:
                    slices[Resource.COMPUTE].append(Slice(Resource.COMPUTE, self.t, self.t + us, name, ins.name,
                                                          SliceKind.COMPUTE, self.cost.moved_bytes(ins).device,
                                                          self.iteration))
                self.t += us
                self.acc.compute += us
            elif code == _START:
                self._start(name, ins, us)
            elif code == _DONE:
                self._done(name, ins)
            elif code == _WHILE:
                self._while(name, ins)
            elif code == _CALL:
                self._call(ins)
            elif code == _SYNC_XFER:
                self._sync_transfer(name, ins)
            elif code == _SYNC_COLL:
                begin = self._collective_slot(ins, us)
                end = begin + us
                if self.record:
                    slices[Resource.COLLECTIVE].append(Slice(Resource.COLLECTIVE, begin, end, name, ins.name,
                                                             SliceKind.COLLECTIVE, _collective_bytes(ins),
                                                             self.iteration))
                self._wait(name, ins.name, end, Resource.COLLECTIVE)

    def _collective_slot(self, ins: Instruction, us: float) -> float:
        """When a collective issued now starts on its stream (and book the stream until it ends):
        point-to-point ones (collective-permute, send, recv) run on XLA's P2P stream, the others
        in order on its collective stream."""
        if collective_kind(ins) in _P2P_KINDS:
            begin = max(self.t, self.p2p_free)
            self.p2p_free = begin + us
        else:
            begin = max(self.t, self.coll_free)
            self.coll_free = begin + us
        return begin

    def _share_hbm(self, ins: Instruction, us: float) -> None:
        """Transfers in flight while a kernel runs get the HBM bandwidth it leaves: a kernel
        moving ``b`` bytes in ``us`` leaves ``hbm - b/us``; when that is below what the
        active links would draw, they share it for the kernel's duration."""
        demand = self.cost.moved_bytes(ins).device / us if us > 0 else 0.0
        free = self.hbm_per_us - demand
        active = [lk for lk in self.link_list if lk.active]
        if free >= sum(lk.bw for lk in active):
            return
        end = self.t + us
        if len(active) > 1:  # each link's share depends on the other's being busy
            self.influential.update(f.key for lk in active for f in lk.active)
        for lk in active:
            base = lk.bw
            lk.advance(self.t)
            lk.bw = max(free / len(active), base * 1e-6)  # never zero: the flow still ends
            lk.advance(end)
            lk.bw = base

    def _wait(self, comp: str, name: str, until: float, kind: Resource) -> float:
        """The compute stream waits until ``until`` for an op on resource ``kind``."""
        w = until - self.t
        if w <= 0:
            return 0.0
        if self.record:
            self.slices[Resource.COMPUTE].append(Slice(Resource.COMPUTE, self.t, until, comp, name, SliceKind.WAIT,
                                                       0, self.iteration))
        self.t = until
        if kind in (Resource.LINK_TO_HOST, Resource.LINK_TO_DEVICE):
            self.acc.xfer += w
        elif kind is Resource.COLLECTIVE:
            self.acc.coll += w
        else:
            self.acc.other += w
        return w

    def _stream(self, comp: str, ins: Instruction) -> int | None:
        return self.stream_numbers.of(comp, ins.name)

    def _start(self, comp: str, ins: Instruction, us: float) -> None:
        key = (comp, ins.name)
        t = self.transfers.get(key)
        stream = self._stream(comp, ins)
        prev = self.stream_tail.get(stream) if stream is not None else None
        ahead: tuple[str, ...] = ()
        if stream is not None:
            live = self.stream_inflight.setdefault(stream, [])
            ahead = tuple(o.key[1] for o in live if o.finish < 0 or o.finish > self.t)
        if t is not None and key in self.scales.free_transfers:
            self.reached[key] = self.t  # free: done the moment it is issued, holding nothing up
            op = _Op(key, link_of(t.direction), self.t, finish=self.t)
        elif t is not None:
            self.reached[key] = self.t
            link = self.links[t.direction]
            after = None
            ready = self.t + self.dma_latency  # its bytes flow once the DMA is set up
            held_by: tuple[tuple[str, str], float] | None = None
            if prev is not None and prev.flow is not None and prev.link is link:
                after = prev.flow  # waits for it on the stream (the link knows when it ends)
            elif prev is not None:
                later = max(ready, prev.finish_time() + self.dma_latency)
                held_by = (prev.key, later - ready)
                ready = later
            flow = _Flow(key, t.bytes, ready, after)
            if held_by is not None:
                flow.hold(*held_by)
            link.add(flow)
            op = _Op(key, link_of(t.direction), self.t, flow=flow, link=link)
            op.ahead = ahead
        elif collective_kind(ins):
            begin = self._collective_slot(ins, us)
            if self.record:
                self.slices[Resource.COLLECTIVE].append(Slice(Resource.COLLECTIVE, begin, begin + us, comp, ins.name,
                                                              SliceKind.COLLECTIVE, _collective_bytes(ins),
                                                              self.iteration))
            op = _Op(key, Resource.COLLECTIVE, self.t, finish=begin + us)
        else:
            if stream is not None:
                begin = max(self.t, prev.finish_time()) if prev is not None else self.t
                if prev is not None and begin > self.t and prev.key in self.transfers:
                    self.influential.add(prev.key)
            else:
                begin = max(self.t, self.async_free)
                self.async_free = begin + us
            if us > 0 and self.record:
                self.slices[Resource.ASYNC].append(Slice(Resource.ASYNC, begin, begin + us, comp, ins.name,
                                                         SliceKind.ASYNC, self.cost.moved_bytes(ins).device,
                                                         self.iteration))
            op = _Op(key, Resource.ASYNC, self.t, finish=begin + us)
        if stream is not None:
            self.stream_tail[stream] = op
            self.stream_inflight[stream].append(op)
            op.stream = stream
        self.inflight.setdefault(key, []).append(op)
        self.live += 1

    def _done(self, comp: str, ins: Instruction) -> None:
        best: _Op | None = None
        for skey in self.starts_of.get((comp, ins.name), ()):
            ops = self.inflight.get(skey)
            if ops and (best is None or ops[-1].issue > best.issue):
                best = ops[-1]
        if best is None:
            return  # its start never ran (an unmatched done): nothing to wait for
        self.inflight[best.key].pop()
        self.live -= 1
        if best.stream is not None:
            live = self.stream_inflight.get(best.stream, [])
            if best in live:
                live.remove(best)
        finish = best.finish_time()
        wait = self._wait(comp, ins.name, finish, best.kind)
        if best.flow is not None:
            self._record_transfer(best, finish, wait, ins)

    def _record_transfer(self, op: _Op, finish: float, wait: float, done: Instruction | None) -> None:
        key = op.key
        t = self.transfers[key]
        res = link_of(t.direction)
        if self.record:
            self.slices[res].append(Slice(res, op.issue, finish, key[0], key[1], SliceKind.TRANSFER, t.bytes,
                                          self.iteration))
        self.acc.execs[key] = self.acc.execs.get(key, 0) + 1
        self.acc.waits[key] = self.acc.waits.get(key, 0.0) + wait
        if op.flow is not None:
            held = {k: us for k, us in op.flow.held.items() if k in self.transfers}
            self.influential.update(held)
            self.acc.charge(key, wait, held)
        if not op.shifted or key not in self.last:
            # An execution carried over extrapolated iterations ran beside them, not
            # beside simulated slices: the last fully simulated one represents it.
            queued = engine_wait = 0.0
            behind: tuple[str, ...] = ()
            if op.flow is not None and op.flow.ready >= 0:
                queued = max(0.0, op.flow.ready - op.issue - self.dma_latency)
                if op.flow.began >= 0:
                    engine_wait = max(0.0, op.flow.began - op.flow.ready)
                    behind = op.flow.behind if engine_wait > 1e-9 else ()
            self.last[key] = _Last(op.issue, finish, self.t - wait, wait, done, queued,
                                   op.ahead if queued > 1e-9 else (), engine_wait, behind)

    def _sync_transfer(self, comp: str, ins: Instruction) -> None:
        key = (comp, ins.name)
        t = self.transfers[key]
        self.reached[key] = self.t
        if key in self.scales.free_transfers:
            return
        link = self.links[t.direction]
        flow = _Flow(key, t.bytes, self.t + self.dma_latency)
        link.add(flow)
        op = _Op(key, link_of(t.direction), self.t, flow=flow, link=link)
        finish = link.finish_of(flow)
        wait = self._wait(comp, ins.name, finish, op.kind)
        self._record_transfer(op, finish, wait, None)

    def _call(self, ins: Instruction) -> None:
        called = [c for c in ins.called_computations if c in self.module.computations]
        if not called:
            return
        if ins.opcode == "conditional":
            called = [max(called, key=self.cost.computation_us)]
        for c in called:
            self.run(c)

    def _while(self, comp: str, ins: Instruction) -> None:
        body = callee_name(ins, "body")
        cond = callee_name(ins, "condition")
        if body not in self.module.computations:
            return
        known = self.callgraph.trip_count(ins)
        trips = known if known is not None else 1
        outer_iteration = self.iteration
        prev: _Sig | None = None
        simulated = 0
        steady = False
        iter_us = 0.0
        while simulated < trips:
            start_t = self.t
            snap = self.acc.snapshot()
            self.iteration = simulated
            if cond in self.module.computations:
                self.run(cond)
            self.run(body)
            simulated += 1
            iter_us = self.t - start_t
            a = self.acc
            # The iteration's time, totals and each transfer's waits; a transfer that waited nothing in
            # it (its sum unchanged) is left out: 0 on both sides of the comparison (``_same``).
            sig = (iter_us, (a.xfer - snap.xfer, a.coll - snap.coll, a.other - snap.other), len(a.waits),
                   {k: w - snap.waits.get(k, 0.0) for k, w in a.waits.items() - snap.waits.items()})
            if prev is not None and _same(prev, sig):
                steady = True
            prev = sig
            remaining = trips - simulated
            if remaining > 0 and self.extrapolate and (steady or simulated >= self.max_iterations):
                self._extrapolate(comp, ins.name, snap, iter_us, remaining)
                break
        if cond in self.module.computations:
            self.run(cond)  # the final test that exits the loop
        self.iteration = outer_iteration
        self.loops[(comp, ins.name)] = LoopRun(comp, ins.name, body, trips, known is not None, simulated,
                                               simulated < trips, steady, iter_us)

    def _extrapolate(self, comp: str, name: str, snap: _Acc, iter_us: float, remaining: int) -> None:
        """Take ``remaining`` more iterations as copies of the last: totals grow by
        its deltas, every clock and in-flight op moves on by their duration."""
        a = self.acc
        a.compute += (a.compute - snap.compute) * remaining
        a.xfer += (a.xfer - snap.xfer) * remaining
        a.coll += (a.coll - snap.coll) * remaining
        a.other += (a.other - snap.other) * remaining
        # Only what the iteration changed grows (an unchanged figure would add 0 times ``remaining``).
        for k, n in a.execs.items() - snap.execs.items():
            a.execs[k] = n + (n - snap.execs.get(k, 0)) * remaining
        for k, w in a.waits.items() - snap.waits.items():
            a.waits[k] = w + (w - snap.waits.get(k, 0.0)) * remaining
        for k, w in a.blame.items() - snap.blame.items():
            a.blame[k] = w + (w - snap.blame.get(k, 0.0)) * remaining
        for kk, w in a.caused.items() - snap.caused.items():
            a.caused[kk] = w + (w - snap.caused.get(kk, 0.0)) * remaining
        dt = iter_us * remaining
        gap_start = self.t
        self.t += dt
        self.coll_free = self.coll_free + dt if self.coll_free > gap_start else self.coll_free
        self.p2p_free = self.p2p_free + dt if self.p2p_free > gap_start else self.p2p_free
        self.async_free = self.async_free + dt if self.async_free > gap_start else self.async_free
        for link in self.links.values():
            link.shift(dt)
        for ops in self.inflight.values():
            for op in ops:
                # A copy whose bytes had all moved before the gap keeps its issue, as its flow keeps
                # its finish (the link shifts only unfinished flows): moved, its issue came after its
                # finish (a 405B step's copy-start.22: issued 48.3 s, finished 1.7 s).
                if op.flow is None or op.flow.finish < 0 or op.flow.finish > gap_start:
                    op.issue += dt
                op.shifted = True
                if op.flow is None and op.finish >= 0:
                    op.finish += dt
        if dt > 0 and self.record:
            self.slices[Resource.COMPUTE].append(Slice(Resource.COMPUTE, gap_start, self.t, comp, name,
                                                       SliceKind.EXTRAPOLATED, 0, self.iteration))

    def drain(self) -> None:
        """Wait for whatever is still in flight when the entry computation ends."""
        for ops in list(self.inflight.values()):
            for op in ops:
                finish = op.finish_time()
                wait = self._wait(op.key[0], op.key[1], finish, op.kind)
                if op.flow is not None:
                    self._record_transfer(op, finish, wait, None)
            ops.clear()
        self.live = 0


#: One loop iteration: its time, its three wait totals, how many transfers have waits so far, and the
#: waits of each transfer whose waits it changed.
_Sig = tuple[float, tuple[float, float, float], int, dict[tuple[str, str], float]]


class _StreamNumbers:
    """Each async start's XLA execution stream as a small number (None: none known, or a communication
    stream, which the simulation does not serialize), looked up once and shared by the re-simulations
    of one step (a number is a cheaper key than the stream itself)."""

    def __init__(self, streams: StreamAssignment | None) -> None:
        self.streams = streams
        self.of_start: dict[tuple[str, str], int | None] = {}
        self.numbers: dict[ExecutionStream, int] = {}

    def of(self, comp: str, name: str) -> int | None:
        key = (comp, name)
        if key in self.of_start:
            return self.of_start[key]
        s = self.streams.stream_of(comp, name) if self.streams is not None else None
        got = (self.numbers.setdefault(s, len(self.numbers))
               if s is not None and s.kind is not StreamKind.COMMUNICATION else None)
        self.of_start[key] = got
        return got


def _same(a: _Sig, b: _Sig) -> bool:
    """Two iterations alike: the same time, totals and waits per transfer, each within 1e-6 (relative
    to the first's, at least 1 µs); a transfer missing from one iteration's changes waited 0 in it."""
    if a[2] != b[2] or abs(a[0] - b[0]) > 1e-6 * max(1.0, abs(a[0])):
        return False
    if not all(abs(x - y) <= 1e-6 * max(1.0, abs(x)) for x, y in zip(a[1], b[1], strict=True)):
        return False
    da, db = a[3], b[3]
    return all(abs(da.get(k, 0.0) - db.get(k, 0.0)) <= 1e-6 * max(1.0, abs(da.get(k, 0.0)))
               for k in da.keys() | db.keys())


def _memory_bound(module: Module, cost: CostModel, s: Slice) -> bool:
    ins = module.computations[s.computation].by_name.get(s.name)
    return ins is not None and cost.op_cost(ins).memory_bound


def _collective_bytes(ins: Instruction) -> int:
    return value_shape(ins).byte_size


class _Spans:
    """Slices of one resource in start order that may overlap each other (transfers sharing a link)."""

    def __init__(self, slices: list[Slice]) -> None:
        self.slices = slices
        self.starts = [s.start_us for s in slices]
        self.longest = max((s.end_us - s.start_us for s in slices), default=0.0)

    def overlapping(self, lo: float, hi: float) -> list[Slice]:
        """Slices with ``start < hi`` and ``end > lo`` (none starting before ``lo - longest`` can)."""
        first = bisect.bisect_left(self.starts, lo - self.longest - 1e-9 * max(1.0, abs(lo)))  # rounding margin
        last = bisect.bisect_left(self.starts, hi)
        return [s for s in self.slices[first:last] if s.end_us > lo]


def _overlapping(slices: list[Slice], starts: list[float], lo: float, hi: float) -> list[Slice]:
    """Slices of one in-order, non-overlapping resource that intersect (lo, hi)."""
    i = max(0, bisect.bisect_right(starts, lo) - 1)
    out = []
    while i < len(slices) and slices[i].start_us < hi:
        s = slices[i]
        if s.end_us > lo and s.end_us > s.start_us:
            out.append(s)
        i += 1
    return out


def simulate_step(module: Module, cost: CostModel, pairs: list[AsyncPair], transfers: list[HostTransfer],
                  callgraph: CallGraph, max_iterations: int = 6,
                  extrapolate: bool = True, share_hbm: bool = True,
                  streams: StreamAssignment | None = None, copy_engines: int | None = None,
                  scales: SimScales | None = None, detail: bool = True,
                  base_programs: dict[str, list[tuple[int, Instruction, float]]] | None = None) -> Timeline:
    """Replay the entry computation's schedule and time every op, transfer and wait.

    Host links run at the cost model's bandwidth (its ``link_mode``); ``max_iterations`` bounds the
    iterations simulated per loop run before the rest are extrapolated;
    ``extrapolate=False`` simulates every iteration (slow on long loops; tests).
    ``callgraph``: the module's call graph (its trip counts, computed once per loop).
    ``share_hbm=False``: transfers keep their link's bandwidth beside memory-bound kernels.
    ``streams``: XLA's stream assignment; each compute stream then runs its ops in order.
    ``copy_engines``: host copies that move bytes at once per direction (the others wait, first
    ready first served); None: the target's ``host_copy_engines``. A number at least the count of
    copies ever in flight together gives the equal sharing of bandwidth among all of them.
    ``scales``: a what-if (:class:`SimScales`), for margins and marginal costs.
    ``detail=False``: the same simulation, the same step time, waits and blame, without what only
    the views read: no compute slices, and no transfer's ``beside_*`` / ``compute_beside_us`` /
    ``memory_bound_beside_us`` (the margins' re-simulations, which read verdicts and step times only).
    ``base_programs``: each computation's classified schedule with unscaled times, filled on first
    use; re-simulations of one module with one cost model and transfers share it.
    """
    sim = _Sim(module, cost, pairs, transfers, callgraph, max_iterations, extrapolate, share_hbm, streams,
               copy_engines, scales, detail, base_programs)
    sim.run(module.entry_name)
    sim.drain()
    step = sim.t
    slices = {r: sorted(v, key=lambda s: s.start_us) for r, v in sim.slices.items() if v}
    compute = [s for s in slices.get(Resource.COMPUTE, []) if s.kind in (SliceKind.COMPUTE, SliceKind.EXTRAPOLATED)]
    compute_starts = [s.start_us for s in compute]
    coll = slices.get(Resource.COLLECTIVE, [])
    coll_spans = _Spans(coll)  # the two collective streams' slices may overlap
    links = {r: _Spans(slices.get(r, [])) for r in (Resource.LINK_TO_HOST, Resource.LINK_TO_DEVICE)}
    timings: dict[tuple[str, str], TransferTiming] = {}
    held_up: dict[tuple[str, str], list[HeldUp]] = {}
    held_back: dict[tuple[str, str], list[HeldUp]] = {}
    for (holder, waiter), us in sim.acc.caused.items():
        lw = sim.last.get(waiter)
        where = (HoldKind.ENGINE if lw is not None and holder[1] in lw.engine_behind
                 else HoldKind.STREAM if lw is not None and holder[1] in lw.ahead else HoldKind.LINK)
        held_up.setdefault(holder, []).append(HeldUp(waiter[1], us, sim.acc.execs.get(waiter, 0), where))
        held_back.setdefault(waiter, []).append(HeldUp(holder[1], us, sim.acc.execs.get(holder, 0), where))
    for key, t in sim.transfers.items():
        if t.is_annotation:
            continue
        last = sim.last.get(key)
        transfer_us = cost.transfer_us(t.bytes, t.direction)
        if last is None:
            timings[key] = TransferTiming(
                computation=t.computation, start=t.instruction.name, done=None, done_computation=None,
                direction=t.direction, bytes=t.bytes, is_async=t.is_async, executions=0, transfer_us=transfer_us,
                issue_us=0.0, finish_us=0.0, done_us=0.0, wait_us=0.0, wait_us_per_step=0.0, matched=False)
            continue
        # What ran beside it: the views read it, the margins' re-simulations (detail=False) do not.
        beside = _overlapping(compute, compute_starts, last.issue, last.finish) if detail else []
        beside_collectives = (tuple(dict.fromkeys(s.name for s in coll_spans.overlapping(last.issue, last.finish)))
                              if detail else ())
        on_link = links[link_of(t.direction)].overlapping(last.issue, last.finish) if detail else []
        beside_transfers = tuple(sorted({s.name for s in on_link if s.name != key[1]}))
        timings[key] = TransferTiming(
            computation=t.computation, start=t.instruction.name,
            done=last.done.name if last.done else None,
            done_computation=last.done.computation if last.done else None,
            direction=t.direction, bytes=t.bytes, is_async=t.is_async, executions=sim.acc.execs.get(key, 0),
            transfer_us=transfer_us, issue_us=last.issue, finish_us=last.finish, done_us=last.done_at,
            wait_us=last.wait, wait_us_per_step=sim.acc.waits.get(key, 0.0),
            matched=last.done is not None or not t.is_async,
            stream=streams.stream_of(key[0], key[1]) if streams is not None else None,
            queued_us=last.queued, queued_behind=last.ahead, engine_wait_us=last.engine_wait,
            engine_behind=last.engine_behind, blame_us=sim.acc.blame.get(key, 0.0),
            held_up=tuple(sorted(held_up.get(key, ()), key=lambda h: (-h.us, h.other))),
            held_back_by=tuple(sorted(held_back.get(key, ()), key=lambda h: (-h.us, h.other))),
            beside_compute=tuple(s.name for s in beside), beside_collectives=beside_collectives,
            beside_transfers=beside_transfers,
            compute_beside_us=sum(min(s.end_us, last.finish) - max(s.start_us, last.issue) for s in beside),
            memory_bound_beside_us=sum(min(s.end_us, last.finish) - max(s.start_us, last.issue) for s in beside
                                       if s.kind is SliceKind.COMPUTE and _memory_bound(module, cost, s)),
        )
    a = sim.acc
    return Timeline({r: tuple(v) for r, v in slices.items()}, timings, step, a.compute, a.xfer, a.coll, a.other,
                    tuple(sim.loops.values()), cost.link_mode, module.is_scheduled, dict(sim.reached),
                    frozenset(sim.influential))
