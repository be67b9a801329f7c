"""What-if re-simulations of one step, each started where it first differs from the step and run only
as far as its reader needs (the margins, ``hloscope.analysis.simulate.margin``).

``Replayer(module, cost, pairs, transfers, callgraph, streams)``: ``run(scales)`` re-simulates the
whole step (:func:`~hloscope.analysis.simulate.step.simulate_step`'s simulation, without the
views' slices); ``what_if(scales, fork_at)`` starts one from a copy of the step's own simulation
paused at the first entry op that may reach ``fork_at`` (a what-if that changes nothing before it),
and :meth:`WhatIf.upto` runs it only until the figures of the transfers read are final;
``steps_from`` gives many free transfers' step times from one pass of the step. Every figure is a
whole re-simulation's bit for bit, but ``steps_from``'s step times (to float rounding:
docs/verdicts.md "How the re-simulations are cut short").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.simulate.costs import cost_table
from hloscope.analysis.simulate.engine import Simulation
from hloscope.analysis.simulate.tally import StreamNumbers
from hloscope.analysis.simulate.timeline import WHAT_IF_SETTINGS, HeldUp, HoldKind, SimScales, TransferTiming
from hloscope.analysis.structure.callgraph import CallGraph
from hloscope.analysis.structure.pairs import AsyncPair
from hloscope.analysis.structure.streams import StreamAssignment
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.hlo.model import Module


def _outcome(sim: Simulation, step: bool = True) -> Outcome:
    """What a finished (or stopped: ``step`` False, its step time unknown) re-simulation's readers read."""
    return Outcome(sim.t if step else None, _Timings(sim))


@dataclass(frozen=True)
class Outcome:
    """What a what-if re-simulation gives the margins (``hloscope.analysis.simulate.margin``): the step
    time, and per host transfer the figures its verdict reads (executions, waits and blame per step,
    matched, held_up with each waiter's share: the same figures, summed in the same order, as a
    :class:`Timeline`'s; its clocks, ``beside_*`` and holders' kinds are left out). step_us: None for a
    run stopped once the figures its reader asked for were final (:meth:`WhatIf.upto`)."""

    step_us: float | None
    transfers: _Timings

    def figures(self, key: tuple[str, str]) -> tuple[int, float, float, float] | None:
        """What a verdict reads of ``key`` (:meth:`_Timings.figures`)."""
        return self.transfers.figures(key)


class Replayer:
    """Re-simulations of one step (one module, cost model, pairs, transfers and streams).

    ``run(scales)`` simulates the whole step with ``scales``. A what-if that changes nothing before
    a set of transfers is first reached (free transfers; a factor on the host links, which carry
    nothing before the first transfer) need not replay the step up to there: ``what_if`` starts
    it from a copy of the unscaled simulation paused at that point of the entry computation, and
    runs it only as far as its reader needs (:class:`WhatIf`); ``steps_from`` runs many free
    transfers in one pass of the unscaled simulation, forking at each point. Every figure is the
    one a whole re-simulation gives, bit for bit (the same operations on the same state), but for
    ``steps_from``'s step times (its docstring). ``count``: re-simulations run (each what-if counts one).
    Every one runs with :data:`~hloscope.analysis.simulate.timeline.WHAT_IF_SETTINGS` on one cost table
    (``hloscope.analysis.simulate.costs``), built here: the programs of every computation the step's
    loops, calls and conditionals name (their positions, :meth:`position`).
    """

    def __init__(self, module: Module, cost: CostModel, pairs: list[AsyncPair], transfers: list[HostTransfer],
                 callgraph: CallGraph, streams: StreamAssignment | None) -> None:
        self.args = (module, pairs, transfers, callgraph)
        self.streams = streams
        self.count = 0
        self.table = cost_table(module, cost, {(t.computation, t.instruction.name): t for t in transfers}, callgraph,
                                every_called=True)
        self._paused: dict[int, Simulation] = {}
        self.stream_numbers = StreamNumbers(streams)
        self._positions: tuple[dict[tuple[str, str], tuple[int, int]], int] | None = None

    def _sim(self, scales: SimScales) -> Simulation:
        module, pairs, transfers, callgraph = self.args
        sim = Simulation(module, self.table, pairs, transfers, callgraph, WHAT_IF_SETTINGS, self.streams, scales,
                         self.stream_numbers)
        sim.record = False  # its outcome alone is read
        return sim

    def _program_positions(self) -> tuple[dict[tuple[str, str], tuple[int, int]], int]:
        if self._positions is None:
            sim = self._sim(SimScales())
            self._positions = (sim.entry_positions(), len(sim.program(self.args[0].entry_name)))
        return self._positions

    def position(self, keys: frozenset[tuple[str, str]] | set[tuple[str, str]]) -> int:
        """The first entry position that may reach one of ``keys`` (the program's end: none)."""
        first, end = self._program_positions()
        return min((first[k][0] for k in keys if k in first), default=end)

    def final_after(self, keys: frozenset[tuple[str, str]] | set[tuple[str, str]]) -> int:
        """The entry position after the last that may reach one of ``keys`` (0: none may)."""
        first, _end = self._program_positions()
        return max((first[k][1] for k in keys if k in first), default=-1) + 1

    def run(self, scales: SimScales) -> Outcome:
        """The whole step re-simulated with ``scales``."""
        return self.what_if(scales).whole()

    def what_if(self, scales: SimScales, fork_at: frozenset[tuple[str, str]] | None = None) -> WhatIf:
        """A re-simulation with ``scales``, not run yet (:class:`WhatIf`). ``fork_at``: transfers
        before whose first reach ``scales`` changes nothing; it then starts from a copy of the
        unscaled simulation paused there (kept for the next what-if forked at the same point)."""
        self.count += 1
        if fork_at is None:
            return WhatIf(self, self._sim(scales), 0)
        at = self.position(fork_at)
        paused = self._paused.get(at)
        if paused is None:
            paused = self._paused[at] = self._sim(SimScales())
            paused.run(paused.module.entry_name, 0, at)
        return WhatIf(self, paused.fork(scales), at)

    def steps_from(self, whatifs: list[tuple[frozenset[tuple[str, str]], SimScales]]) -> list[float]:
        """The step time of each (keys, scales) of ``whatifs``, each forked as :meth:`run_from` would,
        all from one pass of the unscaled simulation, and each stopped early: at the first point of
        the entry computation after its fork where both it and the unscaled simulation are quiet
        (nothing in flight, the links and streams idle), what is left of the step takes the same
        time in both, so its step is the unscaled step less what it had gained by there. That is the
        one figure not bit for bit a whole re-simulation's: the rest's ops are added to another
        clock, which rounds differently (docs/verdicts.md says by how much)."""
        entry = self.args[0].entry_name
        base = self._sim(SimScales())
        n = len(base.program(entry))
        at: dict[int, list[int]] = {}
        for i, (keys, _scales) in enumerate(whatifs):
            at.setdefault(self.position(keys), []).append(i)
        forks: list[tuple[int, Simulation]] = []
        quiet: dict[int, float] = {}  # entry position -> the unscaled clock there, where it is quiet
        for pos in range(n + 1):
            if pos:
                base.run(entry, pos - 1, pos)
            if base.quiet():
                quiet[pos] = base.t
            for i in at.get(pos, ()):
                forks.append((i, base.fork(whatifs[i][1])))
        base.drain()
        out = [0.0] * len(whatifs)
        for i, sim in forks:
            self.count += 1
            begin = self.position(whatifs[i][0])
            stopped = sim.run_to_quiet(entry, begin, [q for q in quiet if q > begin])
            if stopped >= 0:
                out[i] = base.t - (quiet[stopped] - sim.t)  # exactly the step's where its clock is the step's
                continue
            sim.drain()
            out[i] = sim.t
        return out


class WhatIf:
    """One what-if re-simulation (:meth:`Replayer.what_if`), run only as far as its readers need.

    ``upto(keys)`` runs it on to the first point of the entry computation, after the last that may
    reach one of ``keys``, where nothing is in flight (every done reached, the links and streams
    idle): what runs after that point reaches none of them, and nothing they held up is still
    waiting, so their executions, waits, blame and the waits they caused are final there, bit for
    bit a whole run's. A later call with other keys runs it on from where it stopped. ``whole()``
    runs it to the end of the step (its ``step_us`` is then known).
    """

    def __init__(self, replayer: Replayer, sim: Simulation, position: int) -> None:
        self.replayer = replayer
        self.sim = sim
        self.position = position  # the entry position it is paused at
        self.quiet = False  # it was stopped there because it was quiet
        self.done = False

    def upto(self, keys: frozenset[tuple[str, str]] | set[tuple[str, str]]) -> Outcome:
        if self.done:
            return _outcome(self.sim)
        after = self.replayer.final_after(keys)
        if after <= self.position and (self.quiet or after == 0):
            return _outcome(self.sim, step=False)
        _first, end = self.replayer._program_positions()
        sim = self.sim
        stopped = sim.run_to_quiet(sim.module.entry_name, self.position, range(max(after, self.position + 1), end + 1))
        if stopped >= 0:
            self.position, self.quiet = stopped, True
            return _outcome(sim, step=False)
        sim.drain()
        self.done = True
        return _outcome(sim)

    def whole(self) -> Outcome:
        if not self.done:
            self.sim.run(self.sim.module.entry_name, self.position)
            self.sim.drain()
            self.done = True
        return _outcome(self.sim)


class _Timings(Mapping[tuple[str, str], TransferTiming]):
    """A finished re-simulation's :class:`TransferTiming` per host transfer (annotations aside), each
    built when first read (the margins read those of the judged transfers only)."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.keys_ = [k for k, t in sim.transfers.items() if not t.is_annotation]
        self.built: dict[tuple[str, str], TransferTiming] = {}
        self.held: dict[tuple[str, str], list[tuple[float, str]]] | None = None

    def __len__(self) -> int:
        return len(self.keys_)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.keys_)

    def __contains__(self, key: object) -> bool:
        t = self.sim.transfers.get(key) if isinstance(key, tuple) else None
        return t is not None and not t.is_annotation

    def _held_by(self, key: tuple[str, str]) -> list[tuple[float, str]]:
        """The waits ``key`` caused, (µs, waiter's start), in :class:`TransferTiming`'s ``held_up`` order."""
        if self.held is None:
            self.held = {}
            for (holder, waiter), us in self.sim.acc.caused.items():
                self.held.setdefault(holder, []).append((us, waiter[1]))
        return sorted(self.held.get(key, ()), key=lambda h: (-h[0], h[1]))

    def figures(self, key: tuple[str, str]) -> tuple[int, float, float, float] | None:
        """What a verdict reads of ``key``'s :class:`TransferTiming` (``margin.verdicts_of``), without
        building it: (executions, waits per step, blame per step, ``held_up_us``), each the figure
        ``self[key]`` holds, summed in the same order; None when it is not judged there (absent, an
        annotation, unmatched or never run)."""
        t = self.sim.transfers.get(key)
        if t is None or t.is_annotation:
            return None
        last = self.sim.last.get(key)
        if last is None or (last.done is None and t.is_async):
            return None
        acc = self.sim.acc
        executions = acc.execs.get(key, 0)
        if executions == 0:
            return None
        return executions, acc.waits.get(key, 0.0), acc.blame.get(key, 0.0), sum(us for us, _w in self._held_by(key))

    def __getitem__(self, key: tuple[str, str]) -> TransferTiming:
        got = self.built.get(key)
        if got is not None:
            return got
        if key not in self:
            raise KeyError(key)
        sim, acc = self.sim, self.sim.acc
        t = sim.transfers[key]
        last = sim.last.get(key)
        ups = tuple(HeldUp(w, us, 0, HoldKind.LINK) for us, w in self._held_by(key))
        got = self.built[key] = TransferTiming(
            computation=key[0], start=key[1], done=None, done_computation=None, direction=t.direction,
            bytes=t.bytes, is_async=t.is_async, executions=acc.execs.get(key, 0) if last is not None else 0,
            transfer_us=0.0, issue_us=0.0, finish_us=0.0, done_us=0.0, wait_us=0.0,
            wait_us_per_step=acc.waits.get(key, 0.0) if last is not None else 0.0,
            matched=last is not None and (last.done is not None or not t.is_async),
            blame_us=acc.blame.get(key, 0.0) if last is not None else 0.0, held_up=ups)
        return got
