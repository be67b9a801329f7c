"""How one training step is simulated along its schedule: when each op runs, and who waits.

:class:`Simulation` is the event loop of ``simulate_step`` (``hloscope.analysis.simulate.step``) and of
the margins' what-ifs (``hloscope.analysis.simulate.replay``: paused at a position of the entry
computation, copied with :meth:`Simulation.fork`, run on until it is :meth:`Simulation.quiet`). The links
and the ops in flight are ``hloscope.analysis.simulate.links``'; its running totals
``hloscope.analysis.simulate.tally``'. Every cost it reads (each op's time and bytes, the links' figures)
is in its :class:`~hloscope.analysis.simulate.costs.CostTable`, computed once before it runs.

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

from collections.abc import Iterable

from hloscope.analysis.kinds import Direction
from hloscope.analysis.simulate.costs import CALL, DONE, START, SYNC_COLL, SYNC_XFER, WHILE, WORK, CostTable, Program
from hloscope.analysis.simulate.links import AsyncOp, Flow, Link
from hloscope.analysis.simulate.tally import IterationSig, LastRun, StreamNumbers, Totals, same_iteration
from hloscope.analysis.simulate.timeline import DEFAULT_SETTINGS, LoopRun, SimScales, SimSettings, Slice, SliceKind
from hloscope.analysis.structure.callgraph import CallGraph, callee_name
from hloscope.analysis.structure.opclass import RESOURCES, Resource, collective_kind, link_of, value_shape
from hloscope.analysis.structure.pairs import AsyncPair
from hloscope.analysis.structure.streams import StreamAssignment
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.hlo.model import Instruction, Module

#: Collectives XLA runs on its point-to-point stream, beside the collective stream.
_P2P_KINDS = frozenset({"collective-permute", "send", "recv"})

def _collective_bytes(ins: Instruction) -> int:
    return value_shape(ins).byte_size


#: The fields a forked simulation shares with (or copies from) the one it forks; fork() then replaces
#: what must not be shared (links, flows, ops, totals, the small dicts).
SHARED_FIELDS = ("record", "transfers", "starts_of", "dma_latency", "links", "stream_tail", "stream_inflight",
               "hbm_per_us", "link_list", "t", "coll_free", "p2p_free", "async_free", "inflight", "live", "acc", "last",
               "slices", "loops", "reached", "influential", "programs", "iteration")


class Simulation:
    """One simulation of the step: ``table`` its costs (``hloscope.analysis.simulate.costs``, built for the
    same module and transfers), ``settings`` how it runs, ``scales`` its what-if."""

    def __init__(self, module: Module, table: CostTable, pairs: list[AsyncPair], transfers: list[HostTransfer],
                 callgraph: CallGraph, settings: SimSettings = DEFAULT_SETTINGS,
                 streams: StreamAssignment | None = None, scales: SimScales | None = None,
                 stream_numbers: StreamNumbers | None = None) -> None:
        self.module = module
        self.settings = settings
        self.detail = settings.detail
        self.record = True  # keep the slices (False: a what-if whose outcome alone is read: ``simulate.replay``)
        self.table = table
        self.scales = scales or SimScales()
        self.callgraph = callgraph
        self.max_iterations = max(2, settings.max_iterations)
        self.extrapolate = settings.extrapolate
        self.transfers = {(t.computation, t.instruction.name): t for t in transfers}
        self.starts_of: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for p in pairs:
            self.starts_of.setdefault((p.done.computation, p.done.name), []).append(
                (p.start.computation, p.start.name))
        self.dma_latency = table.dma_latency_us
        engines = table.host_copy_engines if settings.copy_engines is None else settings.copy_engines
        self.links = {d: Link(table.link_bandwidth[d] * self.scales.link / 1e6, self.dma_latency, engines)
                      for d in Direction}
        self.link_res = {d: link_of(d) for d in Direction}  # each direction's link resource
        self.streams = streams
        self.stream_tail: dict[int, AsyncOp] = {}  # the last op issued on each compute stream
        self.stream_inflight: dict[int, list[AsyncOp]] = {}  # issued there, done not yet reached
        self.stream_numbers = StreamNumbers(streams) if stream_numbers is None else stream_numbers
        self.hbm_per_us = table.hbm_bandwidth / 1e6
        self.device_bytes = table.device_bytes
        self.link_list = list(self.links.values())
        self.share_hbm = settings.share_hbm
        self.t = 0.0
        self.coll_free = 0.0
        self.p2p_free = 0.0
        self.async_free = 0.0
        self.inflight: dict[tuple[str, str], list[AsyncOp]] = {}
        self.live = 0  # ops in ``inflight`` (issued, done not yet reached)
        self.acc = Totals()
        self.last: dict[tuple[str, str], LastRun] = {}
        self.slices: dict[Resource, list[Slice]] = {r: [] for r in RESOURCES}
        self.loops: dict[tuple[str, str], LoopRun] = {}
        self.reached: dict[tuple[str, str], float] = {}  # host transfer -> when its start was last reached
        self.influential: set[tuple[str, str]] = set()  # transfers that held anything up
        self.programs: dict[str, Program] = {}
        self.iteration = -1

    def fork(self, scales: SimScales) -> Simulation:
        """A copy of this simulation, paused between two ops of the entry computation, to go on with
        ``scales`` (which must leave the programs as they are: a link factor, free transfers). What
        only the views read (slices) starts empty; every clock, flow, queue and total is copied."""
        # Built through __init__ (cheaply: no pairs, no transfers) and then given every field of this
        # one: a class compiled by mypyc has neither an instance __dict__ nor a __new__ without __init__.
        new = Simulation(self.module, self.table, [], [], self.callgraph, self.settings, self.streams, scales,
                         self.stream_numbers)
        for name in SHARED_FIELDS:
            setattr(new, name, getattr(self, name))
        new.scales = scales
        flows: dict[int, Flow] = {}
        links = {id(lk): lk.clone(flows) for lk in self.links.values()}
        new.links = {d: links[id(lk)] for d, lk in self.links.items()}
        if scales.link != self.scales.link:
            for d, lk in new.links.items():
                lk.bw = self.table.link_bandwidth[d] * scales.link / 1e6
        new.link_list = list(new.links.values())
        ops: dict[int, AsyncOp] = {}
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
                if code in (START, SYNC_XFER):
                    if (name, ins.name) in self.transfers:
                        got.add((name, ins.name))
                elif code in (WHILE, CALL):
                    for c in ins.called_computations:
                        if c in self.module.computations:
                            got |= within(c)
            return got

        out: dict[tuple[str, str], tuple[int, int]] = {}
        entry = self.module.entry_name
        for i, (code, ins, _us) in enumerate(self.program(entry)):
            reached: set[tuple[str, str]] = set()
            if code in (START, SYNC_XFER) and (entry, ins.name) in self.transfers:
                reached.add((entry, ins.name))
            elif code in (WHILE, CALL):
                for c in ins.called_computations:
                    if c in self.module.computations:
                        reached |= within(c)
            for k in reached:
                out[k] = (out[k][0] if k in out else i, i)
        return out

    # -- programs: each computation's schedule, classified once (the cost table's), scaled here -----

    def program(self, name: str) -> Program:
        prog = self.programs.get(name)
        if prog is not None:
            return prog
        base = self.table.programs[name]
        sc = self.scales
        if sc.per_op is None and not sc.free and sc.compute == 1.0:
            # Every factor is 1.0: each time is the base's (``us * 1.0 == us``), no op drops out (the base
            # keeps work of positive time only). The list is shared, never changed.
            self.programs[name] = base
            return base
        if sc.per_op is None and not sc.free:
            # One factor on every op (``_scale``'s, without a call per op).
            f = sc.compute
            prog = [(code, ins, us * f if us else us) for code, ins, us in base
                    if not (us and code == WORK and us * f <= 0)]
        else:
            prog = []
            for code, ins, us in base:
                if us:
                    us *= self._scale(ins)
                    if code == WORK and us <= 0:
                        continue
                prog.append((code, ins, us))
        self.programs[name] = prog
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

    def _run_ops(self, name: str, prog: Program) -> None:
        slices = self.slices
        for code, ins, us in prog:
            if code == WORK:
                if self.share_hbm and (self.link_list[0].active or self.link_list[1].active):
                    self._share_hbm(ins, us)
                if self.detail:
                    slices[Resource.COMPUTE].append(Slice(Resource.COMPUTE, self.t, self.t + us, name, ins.name,
                                                          SliceKind.COMPUTE, self.device_bytes[ins],
                                                          self.iteration))
                self.t += us
                self.acc.compute += us
            elif code == START:
                self._start(name, ins, us)
            elif code == DONE:
                self._done(name, ins)
            elif code == WHILE:
                self._while(name, ins)
            elif code == CALL:
                self._call(ins)
            elif code == SYNC_XFER:
                self._sync_transfer(name, ins)
            elif code == SYNC_COLL:
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
        demand = self.device_bytes[ins] / us if us > 0 else 0.0
        free = self.hbm_per_us - demand
        lk0, lk1 = self.link_list[0], self.link_list[1]
        # What the active links would draw (``sum`` of their bandwidths, in this order).
        draw = (lk0.bw + lk1.bw if lk1.active else lk0.bw) if lk0.active else lk1.bw if lk1.active else 0.0
        if free >= draw:
            return
        active = [lk for lk in self.link_list if lk.active]
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

    def _start(self, comp: str, ins: Instruction, us: float) -> None:
        key = (comp, ins.name)
        t = self.transfers.get(key)
        stream = self.stream_numbers.of_key(key)
        prev: AsyncOp | None = None
        live: list[AsyncOp] = []
        if stream is not None:
            prev = self.stream_tail.get(stream)
            live = self.stream_inflight.setdefault(stream, [])
        if t is not None and key in self.scales.free_transfers:
            self.reached[key] = self.t  # free: done the moment it is issued, holding nothing up
            op = AsyncOp(key, self.link_res[t.direction], self.t, finish=self.t)
        elif t is not None:
            self.reached[key] = self.t
            now = self.t
            ahead = tuple(o.key[1] for o in live if o.finish < 0 or o.finish > now)
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
            flow = Flow(key, t.bytes, ready, after)
            if held_by is not None:
                flow.hold(*held_by)
            link.add(flow)
            op = AsyncOp(key, self.link_res[t.direction], self.t, flow=flow, link=link)
            op.ahead = ahead
        elif collective_kind(ins):
            begin = self._collective_slot(ins, us)
            if self.record:
                self.slices[Resource.COLLECTIVE].append(Slice(Resource.COLLECTIVE, begin, begin + us, comp, ins.name,
                                                              SliceKind.COLLECTIVE, _collective_bytes(ins),
                                                              self.iteration))
            op = AsyncOp(key, Resource.COLLECTIVE, self.t, finish=begin + us)
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
                                                         SliceKind.ASYNC, self.device_bytes[ins],
                                                         self.iteration))
            op = AsyncOp(key, Resource.ASYNC, self.t, finish=begin + us)
        if stream is not None:
            self.stream_tail[stream] = op
            live.append(op)
            op.stream = stream
        ops = self.inflight.get(key)
        if ops is None:
            self.inflight[key] = [op]
        else:
            ops.append(op)
        self.live += 1

    def _done(self, comp: str, ins: Instruction) -> None:
        best: AsyncOp | None = None
        for skey in self.starts_of.get((comp, ins.name), ()):
            ops = self.inflight.get(skey)
            if ops and (best is None or ops[-1].issue > best.issue):
                best = ops[-1]
        if best is None:
            return  # its start never ran (an unmatched done): nothing to wait for
        self.inflight[best.key].pop()
        self.live -= 1
        if best.stream is not None:
            live = self.stream_inflight.get(best.stream)
            if live is not None and best in live:
                live.remove(best)
        finish = best.finish_time()
        wait = self._wait(comp, ins.name, finish, best.kind)
        if best.flow is not None:
            self._record_transfer(best, finish, wait, ins)

    def _record_transfer(self, op: AsyncOp, finish: float, wait: float, done: Instruction | None) -> None:
        key = op.key
        if self.record:
            t = self.transfers[key]
            res = self.link_res[t.direction]
            self.slices[res].append(Slice(res, op.issue, finish, key[0], key[1], SliceKind.TRANSFER, t.bytes,
                                          self.iteration))
        acc = self.acc
        acc.execs[key] = acc.execs.get(key, 0) + 1
        acc.waits[key] = acc.waits.get(key, 0.0) + wait
        flow = op.flow
        if flow is not None and flow.held:
            held = {k: us for k, us in flow.held.items() if k in self.transfers}
            self.influential.update(held)
            acc.charge(key, wait, held)
        elif flow is not None and wait > 0:
            acc.charge(key, wait, {})  # nothing held it: the wait is its own
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
            self.last[key] = LastRun(op.issue, finish, self.t - wait, wait, done, queued,
                                   op.ahead if queued > 1e-9 else (), engine_wait, behind)

    def _sync_transfer(self, comp: str, ins: Instruction) -> None:
        key = (comp, ins.name)
        t = self.transfers[key]
        self.reached[key] = self.t
        if key in self.scales.free_transfers:
            return
        link = self.links[t.direction]
        flow = Flow(key, t.bytes, self.t + self.dma_latency)
        link.add(flow)
        op = AsyncOp(key, link_of(t.direction), self.t, flow=flow, link=link)
        finish = link.finish_of(flow)
        wait = self._wait(comp, ins.name, finish, op.kind)
        self._record_transfer(op, finish, wait, None)

    def _call(self, ins: Instruction) -> None:
        called = [c for c in ins.called_computations if c in self.module.computations]
        if not called:
            return
        if ins.opcode == "conditional":
            called = [self.table.branch[ins]]  # its most expensive branch
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
        prev: IterationSig | None = None
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
            # it (its sum unchanged) is left out: 0 on both sides of the comparison (``same_iteration``).
            sig = (iter_us, (a.xfer - snap.xfer, a.coll - snap.coll, a.other - snap.other), len(a.waits),
                   {k: w - snap.waits.get(k, 0.0) for k, w in a.waits.items() if snap.waits.get(k) != w})
            if prev is not None and same_iteration(prev, sig):
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

    def _extrapolate(self, comp: str, name: str, snap: Totals, iter_us: float, remaining: int) -> None:
        """Take ``remaining`` more iterations as copies of the last: totals grow by
        its deltas, every clock and in-flight op moves on by their duration."""
        a = self.acc
        a.compute += (a.compute - snap.compute) * remaining
        a.xfer += (a.xfer - snap.xfer) * remaining
        a.coll += (a.coll - snap.coll) * remaining
        a.other += (a.other - snap.other) * remaining
        # Only what the iteration changed grows (an unchanged figure would add 0 times ``remaining``);
        # each figure is set once, from its own value, so the order they are visited in is no matter.
        for k, n in a.execs.items():
            if snap.execs.get(k) != n:
                a.execs[k] = n + (n - snap.execs.get(k, 0)) * remaining
        for k, w in a.waits.items():
            if snap.waits.get(k) != w:
                a.waits[k] = w + (w - snap.waits.get(k, 0.0)) * remaining
        for k, w in a.blame.items():
            if snap.blame.get(k) != w:
                a.blame[k] = w + (w - snap.blame.get(k, 0.0)) * remaining
        for kk, w in a.caused.items():
            if snap.caused.get(kk) != w:
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
