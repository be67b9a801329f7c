"""The host links and the async ops in flight, as the simulation (``hloscope.analysis.simulate.engine``)
moves them.

- :class:`Flow`: one execution of a host transfer on its link: bytes left, when it was issued, became
  ready and began to move, when it finished, and who held it up (µs per holder).
- :class:`Link`: one direction of the host link, moved by its copy engines: a flow queued behind
  another on its XLA execution stream, ready after its DMA setup, first ready first served onto a free
  engine, the flows on the engines sharing the bandwidth equally.
- :class:`AsyncOp`: an issued async op whose done is not reached yet (a flow, or an op on a stream
  with a known finish).

Each copies itself for a forked simulation (``clone``, ``hloscope.analysis.simulate.replay``).
"""

from __future__ import annotations

from hloscope.analysis.structure.opclass import Resource

EPS = 1e-9
INF = float("inf")


class Flow:
    """One transfer instance on a link: bytes left, issue and (once known) finish time."""

    __slots__ = ("key", "remaining", "issue", "finish", "bytes", "after", "ready", "began", "behind", "held")

    def __init__(self, key: tuple[str, str], nbytes: int, issue: float, after: Flow | None = None) -> None:
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

    def clone(self, flows: dict[int, Flow]) -> Flow:
        """A copy for a forked simulation; ``flows`` maps the originals (by id) to their copies, so
        that a flow shared by a link and an op (or ahead of another) stays one flow."""
        got = flows.get(id(self))
        if got is not None:
            return got
        f = Flow(self.key, self.bytes, self.issue)  # (mypyc: no __new__ without __init__)
        flows[id(self)] = f
        f.key, f.bytes, f.remaining, f.issue, f.finish = self.key, self.bytes, self.remaining, self.issue, self.finish
        f.ready, f.began, f.behind, f.held = self.ready, self.began, self.behind, dict(self.held)
        f.after = self.after.clone(flows) if self.after is not None else None
        return f


class Link:
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
        self.active: list[Flow] = []
        self.queued: list[Flow] = []
        self.waiting: list[Flow] = []
        self.latency = latency
        self.engines = max(1, engines)

    def _ready(self, f: Flow, at: float) -> None:
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
        nxt = INF
        if not self.queued:
            return nxt
        keep = []
        for f in self.queued:
            a = f.after
            if a is not None and a.finish >= 0:
                ready = max(f.issue, a.finish + self.latency)
                if ready <= self.now + EPS:
                    f.hold(a.key, ready - f.issue)  # held on its stream by the flow ahead of it
                    self._ready(f, max(ready, 0.0))
                    continue
                nxt = min(nxt, ready)
            keep.append(f)
        self.queued = keep
        return nxt

    def advance(self, t: float, until: Flow | None = None) -> None:
        """Move the link's clock to ``t`` (or until ``until`` finishes), finishing flows."""
        if until is None and t <= self.now:
            return  # never backwards: a flow whose bytes start later (DMA setup) moved it ahead
        while True:
            release = self._next_release()
            if not self.active:
                if release < INF and (until is not None or release <= t):
                    self.now = release
                    continue
                break
            active = self.active
            share = self.bw / len(active)
            first = active[0].remaining if len(active) == 1 else min(f.remaining for f in active)
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
                if f.remaining <= first * 1e-12 + EPS:
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

    def add(self, flow: Flow) -> None:
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

    def finish_of(self, flow: Flow) -> float:
        if flow.finish < 0:
            self.advance(INF, until=flow)
        return flow.finish

    def clone(self, flows: dict[int, Flow]) -> Link:
        """A copy for a forked simulation (its flows copied through ``flows``)."""
        lk = Link(self.bw, self.latency, self.engines)
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

class AsyncOp:
    """An in-flight async op: a link flow, or a stream op with a known finish."""

    __slots__ = ("key", "flow", "link", "finish", "issue", "kind", "shifted", "stream", "ahead")

    def __init__(self, key: tuple[str, str], kind: Resource, issue: float, finish: float = -1.0,
                 flow: Flow | None = None, link: Link | None = None) -> None:
        self.key = key
        self.kind = kind  # the resource it runs on: a host link, the collective or the async stream
        self.issue = issue
        self.finish = finish
        self.flow = flow
        self.link = link
        self.shifted = False  # carried across extrapolated iterations
        self.stream: int | None = None  # its XLA compute or memcpy stream, when known (``StreamNumbers``)
        self.ahead: tuple[str, ...] = ()  # starts still running on that stream when it was issued

    def clone(self, ops: dict[int, AsyncOp], flows: dict[int, Flow], links: dict[int, Link]) -> AsyncOp:
        """A copy for a forked simulation: one copy per op (``ops``), its flow and link the fork's."""
        got = ops.get(id(self))
        if got is not None:
            return got
        op = AsyncOp(self.key, self.kind, self.issue, self.finish,
                 self.flow.clone(flows) if self.flow is not None else None,
                 links[id(self.link)] if self.link is not None else None)
        op.shifted, op.stream, op.ahead = self.shifted, self.stream, self.ahead
        ops[id(self)] = op
        return op

    def finish_time(self) -> float:
        if self.flow is not None and self.link is not None:
            return self.link.finish_of(self.flow)
        return self.finish
