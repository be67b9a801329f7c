"""Simulate one training step along its schedule: when each op runs, and who waits.

Pass: ``simulate_step(module, cost, pairs, transfers, callgraph, settings) -> Timeline``: the step's costs
put in a table once (``hloscope.analysis.simulate.costs``), the step replayed by
:class:`~hloscope.analysis.simulate.engine.Simulation` (how: that module's docstring, docs/simulation.md),
read into the :class:`~hloscope.analysis.simulate.timeline.Timeline`, with per transfer what ran beside
it (the views' figures; :class:`~hloscope.analysis.simulate.timeline.SimSettings` ``detail=False`` leaves
them out).
"""

from __future__ import annotations

import bisect

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.simulate.costs import CostTable, cost_table
from hloscope.analysis.simulate.engine import Simulation
from hloscope.analysis.simulate.timeline import (
    DEFAULT_SETTINGS,
    HeldUp,
    HoldKind,
    SimScales,
    SimSettings,
    Slice,
    SliceKind,
    Timeline,
    TransferTiming,
)
from hloscope.analysis.structure.callgraph import CallGraph
from hloscope.analysis.structure.opclass import Resource, link_of
from hloscope.analysis.structure.pairs import AsyncPair
from hloscope.analysis.structure.streams import StreamAssignment
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.hlo.model import Module


def _memory_bound(module: Module, table: CostTable, s: Slice) -> bool:
    ins = module.computations[s.computation].by_name.get(s.name)
    return ins is not None and ins in table.memory_bound


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
                  callgraph: CallGraph, settings: SimSettings = DEFAULT_SETTINGS, *,
                  streams: StreamAssignment | None = None, scales: SimScales | None = None,
                  table: CostTable | None = None) -> Timeline:
    """Replay the entry computation's schedule and time every op, transfer and wait.

    Host links run at the cost model's bandwidth (its ``link_mode``); ``settings``: how the loops are
    run, whether the links share HBM with kernels, the copy engines and what the views read
    (:class:`SimSettings`). ``callgraph``: the module's call graph (its trip counts, computed once per loop).
    ``streams``: XLA's stream assignment; each compute stream then runs its ops in order.
    ``scales``: a what-if (:class:`SimScales`), for margins and marginal costs.
    ``table``: the step's costs (:func:`~hloscope.analysis.simulate.costs.cost_table` of this module, cost
    model and transfers), built here when None; re-simulations of one step share one.
    """
    by_key = {(t.computation, t.instruction.name): t for t in transfers}
    if table is None:
        table = cost_table(module, cost, by_key, callgraph)
    sim = Simulation(module, table, pairs, transfers, callgraph, settings, streams, scales)
    sim.run(module.entry_name)
    sim.drain()
    detail = settings.detail
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
        transfer_us = table.transfer_us[key]
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
                                       if s.kind is SliceKind.COMPUTE and _memory_bound(module, table, s)),
        )
    a = sim.acc
    return Timeline({r: tuple(v) for r, v in slices.items()}, timings, step, a.compute, a.xfer, a.coll, a.other,
                    tuple(sim.loops.values()), table.link_mode, module.is_scheduled, dict(sim.reached),
                    frozenset(sim.influential))
