"""The reference the report's margins are held to: every what-if a whole re-simulation of the step.

``measure_margins_brute(module, cost, pairs, transfers, callgraph, streams, timeline, thresholds)``:
``hloscope.analysis.simulate.margin.measure_margins``'s figures (``margin.margins_from``), each what-if
re-simulated from the step's first op to its end through ``simulate_step`` (one per what-if, on one cost
table), where the report's forks each from the point it first differs and stops it where it can differ
no more. The tests (test_margins_forked.py, test_margins_every_fixture.py) and
benchmarks/margins_vs_brute.py, bench_margins.py compare the two: every figure equal, the marginal costs
to float rounding. Not shipped in the package: nothing in a report runs it.
"""

from __future__ import annotations

from collections.abc import Sequence

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.simulate.costs import cost_table
from hloscope.analysis.simulate.margin import Key, Margins, margins_from
from hloscope.analysis.simulate.step import simulate_step
from hloscope.analysis.simulate.timeline import WHAT_IF_SETTINGS, SimScales, Timeline
from hloscope.analysis.simulate.verdict import Thresholds
from hloscope.analysis.structure.callgraph import CallGraph
from hloscope.analysis.structure.pairs import AsyncPair
from hloscope.analysis.structure.streams import StreamAssignment
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.hlo.model import Module


class WholeRuns:
    """Whole re-simulations through ``simulate_step`` (``margin.Resimulations``), on one cost table."""

    def __init__(self, module: Module, cost: CostModel, pairs: list[AsyncPair], transfers: list[HostTransfer],
                 callgraph: CallGraph, streams: StreamAssignment | None) -> None:
        self.args = (module, cost, pairs, transfers, callgraph)
        self.streams = streams
        self.count = 0
        self.table = cost_table(module, cost, {(t.computation, t.instruction.name): t for t in transfers}, callgraph)

    def __call__(self, scales: SimScales) -> Timeline:
        self.count += 1
        module, cost, pairs, transfers, callgraph = self.args
        return simulate_step(module, cost, pairs, transfers, callgraph, WHAT_IF_SETTINGS, streams=self.streams,
                             scales=scales, table=self.table)

    def free_each(self, keys: Sequence[Key]) -> list[float]:
        return [self(SimScales(free_transfers=frozenset({k}))).step_us for k in keys]

    def what_if(self, scales: SimScales, fork_at: frozenset[Key] | None = None) -> Whole:
        return Whole(self(scales))


class Whole:
    """A whole re-simulation, read as a ``hloscope.analysis.simulate.replay.WhatIf`` is."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline

    def upto(self, keys: frozenset[Key]) -> Timeline:
        return self.timeline

    def whole(self) -> Timeline:
        return self.timeline


def measure_margins_brute(module: Module, cost: CostModel, pairs: Sequence[AsyncPair],
                          transfers: Sequence[HostTransfer], callgraph: CallGraph, streams: StreamAssignment | None,
                          timeline: Timeline, thresholds: Thresholds) -> Margins:
    """``measure_margins`` by whole re-simulations of the step (``simulate_step``, one per what-if)."""
    runs = WholeRuns(module, cost, list(pairs), list(transfers), callgraph, streams)
    return margins_from(runs, cost, timeline, thresholds, transfers)
