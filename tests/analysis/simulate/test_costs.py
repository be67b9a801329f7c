"""The cost table (``hloscope.analysis.simulate.costs``): the costs the simulation reads, asked of the cost
model once per op before it runs, for the computations it runs and no others."""

from __future__ import annotations

import pytest

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.kinds import Direction
from hloscope.analysis.simulate.costs import DONE, START, WHILE, WORK, CostTable, cost_table
from hloscope.analysis.simulate.step import simulate_step
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.pairs import pair_async_ops
from hloscope.analysis.structure.transfers import find_host_transfers
from hloscope.hlo.model import Module
from hloscope.hlo.parser import parse_hlo
from hloscope.targets import get_target
from tests.analysis.simulate.test_timeline import _crossing
from tests.conftest import fixture_text

# A conditional whose false branch (a 256x256 matmul, then exp) costs more than its true one (one tanh):
# the simulation runs the most expensive branch, the table prices that one.
BRANCHES = """HloModule branches, is_scheduled=true

%small (p: f32[256,256]) -> f32[256,256] {
  %p = f32[256,256]{1,0} parameter(0)
  ROOT %t = f32[256,256]{1,0} tanh(%p)
}

%big (q: f32[256,256]) -> f32[256,256] {
  %q = f32[256,256]{1,0} parameter(0)
  %d = f32[256,256]{1,0} dot(%q, %q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %e = f32[256,256]{1,0} exponential(%d)
}

ENTRY %main (b: pred[], a: f32[256,256]) -> f32[256,256] {
  %b = pred[] parameter(0)
  %a = f32[256,256]{1,0} parameter(1)
  ROOT %c = f32[256,256]{1,0} conditional(%b, %a, %a), true_computation=%small, false_computation=%big
}
"""


def _table(m: Module, every_called: bool = False) -> tuple[CostModel, ModuleIndex, CostTable]:
    index = ModuleIndex(m)
    cost = CostModel(index, get_target("h100-sxm"))
    transfers = {(t.computation, t.instruction.name): t for t in find_host_transfers(index)}
    return cost, index, cost_table(m, cost, transfers, index.callgraph, every_called)


def test_a_conditional_runs_and_prices_its_most_expensive_branch() -> None:
    m = parse_hlo(BRANCHES)
    cost, index, table = _table(m)
    c = m.computations["main"].by_name["c"]
    assert cost.computation_us("big") > cost.computation_us("small")
    assert table.branch == {c: "big"}
    assert set(table.programs) == {"main", "big"}
    d, e = (m.computations["big"].by_name[n] for n in ("d", "e"))
    assert table.programs["big"] == [(WORK, d, cost.op_cost(d).us), (WORK, e, cost.op_cost(e).us)]
    assert table.device_bytes[d] == cost.moved_bytes(d).device
    # one stream, nothing else: the step is the branch's two ops
    tl = simulate_step(m, cost, pair_async_ops(index), find_host_transfers(index), index.callgraph)
    assert tl.step_us == pytest.approx(cost.op_cost(d).us + cost.op_cost(e).us)
    _cost, _index, every = _table(m, every_called=True)
    assert set(every.programs) == {"main", "big", "small"}


def test_a_loop_that_never_runs_has_no_body_in_the_table() -> None:
    # known_trip_count 0: the condition runs once, the body never (its ops are not priced).
    m = parse_hlo(_crossing(0))
    _cost, _index, table = _table(m)
    assert set(table.programs) == {"main", "cond"}
    assert [code for code, _ins, _us in table.programs["main"]] == [START, WHILE, DONE]
    _cost, _index, every = _table(m, every_called=True)
    assert set(every.programs) == {"main", "cond", "body"}
    _cost, _index, ran = _table(parse_hlo(_crossing(3)))
    assert set(ran.programs) == {"main", "cond", "body"}


def test_the_links_and_transfers_are_the_cost_models() -> None:
    m = parse_hlo(fixture_text("llama_offload.hlo.txt"))
    cost, index, table = _table(m)
    transfers = find_host_transfers(index)
    assert transfers
    for d in Direction:
        assert table.link_bandwidth[d] == cost.link_bandwidth(d)
    for t in transfers:
        if not t.is_annotation:
            assert table.transfer_us[(t.computation, t.instruction.name)] == cost.transfer_us(t.bytes, t.direction)
    # a table given to the simulation is the one it would build: the same timeline
    pairs = pair_async_ops(index)
    own = simulate_step(m, cost, pairs, transfers, index.callgraph)
    given = simulate_step(m, cost, pairs, transfers, index.callgraph, table=table)
    assert (given.step_us, given.transfers, given.slices) == (own.step_us, own.transfers, own.slices)
