"""A loop XLA runs zero times costs nothing and runs nothing, in every pass.

The program is a ``lax.while_loop`` whose condition is false on entry (a step counter
already at its limit), lowered by JAX; the unoptimized module keeps the loop, and the
counted-loop reader finds 0 trips (``i = 0; while i < 0``), which is XLA's meaning of
``known_trip_count {n: 0}``: the body never runs.
"""

from __future__ import annotations

import pytest

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.simulate.step import simulate_step
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.pairs import pair_async_ops
from hloscope.analysis.structure.transfers import find_host_transfers
from hloscope.hlo.parser import parse_hlo
from hloscope.targets import get_target


def _lowered(limit: int) -> str:
    import jax
    import jax.numpy as jnp

    def step(x: jax.Array) -> jax.Array:
        return jax.lax.while_loop(lambda c: c[0] < limit, lambda c: (c[0] + 1, c[1] @ c[1]), (0, x))[1]

    return str(jax.jit(step).lower(jnp.ones((256, 256), jnp.float32)).compiler_ir("hlo").as_hlo_text())


@pytest.mark.xla
@pytest.mark.parametrize("limit", [0, 3])
def test_trip_count_agrees_in_call_graph_cost_model_and_simulation(limit: int) -> None:
    m = parse_hlo(_lowered(limit))
    index = ModuleIndex(m)
    (loop,) = index.loops
    body = loop.attr("body").lstrip("%")
    assert index.trip_count(loop) == limit
    assert index.executions(body) == limit  # the call graph: the body runs `limit` times per step
    cost = CostModel(index, get_target("h100-sxm"))
    # the body's one matmul, `limit` times (the cost model counted a zero-trip loop once)
    assert cost.instruction_us(loop) == pytest.approx(limit * cost.computation_us(body))
    tl = simulate_step(m, cost, pair_async_ops(index), find_host_transfers(index), index.callgraph)
    (run,) = tl.loops
    assert run.trip_count == limit and run.trip_known
    body_kernels = [s for ss in tl.slices.values() for s in ss if s.computation == body]
    assert bool(body_kernels) == (limit > 0)  # a loop that never runs puts nothing on any stream
