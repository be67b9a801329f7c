"""The opcode vocabulary (analysis/structure/opclass.py): value shapes of async starts, resources, opt-barrier walks."""

from __future__ import annotations

import pytest

from hloscope.analysis.kinds import Direction
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.opclass import Resource, is_done, resource_of, value_shape
from hloscope.analysis.structure.transfers import find_host_transfers
from hloscope.hlo.model import Module
from hloscope.hlo.parser import parse_hlo
from tests.conftest import DATA, fixture_text


def _module(name: str) -> Module:
    return parse_hlo((DATA / name).read_text() if name.startswith("opt_barrier") else fixture_text(name), name)


@pytest.mark.parametrize("name", ["mlp_offload.hlo.txt", "llama_offload.hlo.txt", "opt_barrier_offload.hlo.txt"])
def test_value_shape_of_a_start_is_what_its_done_returns(name: str) -> None:
    # XLA: copy-start is (destination, source, u32[] context) and copy-done returns element 0;
    # all-gather-start is ((operands), (results)) and async-start ((operands), result, context):
    # their dones return element 1; all-reduce-start's shape is its result.
    module = _module(name)
    seen: set[str] = set()
    for comp in module.computations.values():
        for done in comp.instructions:
            if not is_done(done) or not done.operands or done.operands[0] not in comp.by_name:
                continue
            start = comp.by_name[done.operands[0]]
            assert str(value_shape(start)) == str(done.shape), (start.name, done.name)
            seen.add(start.opcode)
    assert seen >= ({"copy-start"} if name.startswith("opt_barrier") else
                    {"async-start", "all-gather-start", "all-reduce-start"})


def test_copy_start_to_host_value_is_the_host_buffer() -> None:
    # opt_barrier_offload.hlo.txt (optimized): copy-start.1 = (f32[8,64]{1,0:S(5)}, f32[8,64]{1,0}, u32[]):
    # the value made is the S(5) destination, element 0; element 1 is the device source.
    module = _module("opt_barrier_offload.hlo.txt")
    start = next(i for c in module.computations.values() for i in c.instructions if i.name == "copy-start.1")
    assert value_shape(start).memory_space == 5 and value_shape(start).dims == (8, 64)
    source = start.shape.tuple_element(1)
    assert source is not None and source.memory_space != 5
    index = ModuleIndex(module)
    (t,) = find_host_transfers(index)
    assert t.instruction is start and t.direction is Direction.TO_HOST and t.bytes == 8 * 64 * 4


def test_resources_of_transfers_collectives_and_compute() -> None:
    module = parse_hlo(fixture_text("mlp_offload.hlo.txt"))
    by_name = {i.name: i for c in module.computations.values() for i in c.instructions}
    for t in find_host_transfers(ModuleIndex(module)):
        assert resource_of(t.instruction, t.direction) is (
            Resource.LINK_TO_HOST if t.direction is Direction.TO_HOST else Resource.LINK_TO_DEVICE)
    assert resource_of(by_name["all-gather-start"]) is Resource.COLLECTIVE
    assert resource_of(by_name["all-reduce-done"]) is Resource.COLLECTIVE
    assert resource_of(next(i for i in by_name.values() if i.opcode == "fusion")) is Resource.COMPUTE
    assert resource_of(next(i for i in by_name.values() if i.opcode == "bitcast")) is None
    # The lanes keep the names the trace and the timeline always printed.
    assert [str(r) for r in Resource] == ["compute", "collective", "async", "host link D->H", "host link H->D"]


def test_source_walk_passes_an_opt_barrier() -> None:
    # opt_barrier_step.py compiled unoptimized: device_put.1 (line 17, the placement annotation)
    # reads optimization_barrier.1 (line 16), which reads sin.1 (line 15: y = jnp.sin(x @ w)).
    # XLA prints the op as "opt-barrier"; the walk must pass it and name the line that made the value.
    text = (DATA / "opt_barrier_offload.before_optimizations.hlo.txt").read_text()
    module = parse_hlo(text)
    barrier = next(i for c in module.computations.values() for i in c.instructions if i.opcode == "opt-barrier")
    assert barrier.name == "optimization_barrier.1"
    index = ModuleIndex(module)
    (t,) = find_host_transfers(index)
    assert t.is_annotation and t.direction is Direction.TO_HOST
    assert t.source is not None and t.source.file.endswith("opt_barrier_step.py") and t.source.line == 15


def test_thresholds_judge_both_encodings_alike_and_reject_nonsense() -> None:
    from hloscope.analysis.kinds import VerdictKind
    from hloscope.analysis.simulate.verdict import Thresholds, verdict_from_wait

    t = Thresholds()
    # One encoding: the fraction of the transfer left exposed (by the window: 1 - hidden/transfer).
    assert [t.verdict(f) for f in (0.0, 0.05, 0.0501, 0.9499, 0.95, 1.0)] == [
        VerdictKind.HIDDEN, VerdictKind.HIDDEN, VerdictKind.PARTIAL, VerdictKind.PARTIAL, VerdictKind.EXPOSED,
        VerdictKind.EXPOSED]
    assert verdict_from_wait(100.0, 5.0) is VerdictKind.HIDDEN and verdict_from_wait(100.0, 300.0) is VerdictKind.EXPOSED
    with pytest.raises(ValueError):
        Thresholds(hidden_at_most=0.9, exposed_at_least=0.1)


def test_paused_gc_restores_the_collector() -> None:
    import gc

    from hloscope.hlo.gcpause import paused_gc

    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()  # a caller that paused it keeps it paused
    finally:
        gc.enable()
