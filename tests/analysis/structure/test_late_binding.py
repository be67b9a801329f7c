"""Late-bound async inputs (XLA 0.12): an async-update's first operand is its chain, the others are inputs.

XLA's docs/async_ops.md ("Late Binding") lets an async call bind its inputs over its chain:
``async-start`` binds the first ones (possibly none), each ``async-update(%chain, %x, ...)``
binds more, and the result may be bound at an update or at the done (``()`` at index 1 of the
start's shape). The first two modules are XLA's own, from
xla/hlo/analysis/async_update_dataflow_test.cc (LateBoundOperandDataflow and
LateBoundOutputDataflow, Apache-2.0, copied as data): XLA's dataflow analysis sends
``constant.1`` to the async computation's ``param0`` through ``async-update.0`` and
``constant.2`` to ``param1`` through ``async-update.1``. No GPU compile of jax 0.12 binds late
(none of the 153 dump files of docs/parser.md has an async-update), so the host transfer is
written by hand after the docs' rules. tests/xla/test_late_binding_vs_xla.py checks that jaxlib
0.12's parser reads all three as hloscope does (0.10.2's refuses each).
"""

from __future__ import annotations

from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.pairs import pair_async_ops
from hloscope.api import analyze
from hloscope.hlo.parser import parse_hlo

LATE_BOUND_OPERANDS = """HloModule LateBoundOperandDataflow, is_scheduled=true

%Subcomputation (param0: f32[], param1: f32[]) -> f32[] {
  %param0 = f32[] parameter(0)
  %param1 = f32[] parameter(1)
  ROOT %add = f32[] add(%param0, %param1)
}

ENTRY %entry () -> f32[] {
  %constant.1 = f32[] constant(1)
  %constant.2 = f32[] constant(2)
  // Initially, no parameters are bound.
  %async-start = ((), f32[], s32[]{:S(2)}) async-start(),
      calls=%Subcomputation, async_execution_thread="sparsecore"
  // Bind the first parameter (param0).
  %async-update.0 = ((f32[]), f32[], s32[]{:S(2)}) async-update(%async-start, %constant.1)
  // Bind the second parameter (param1) incrementally.
  %async-update.1 = ((f32[], f32[]), f32[], s32[]{:S(2)}) async-update(%async-update.0, %constant.2)
  ROOT %async-done = f32[] async-done(%async-update.1)
}
"""

LATE_BOUND_OUTPUT = """HloModule Module, is_scheduled=true

async_computation {
  p0 = f32[10] parameter(0)
  ROOT custom-call = f32[10] custom-call(p0), custom_call_target="foo"
}

ENTRY main {
  p = f32[10] parameter(0)
  async-start = ((f32[10]), (), s32[]) async-start(p), calls=async_computation
  async-update = ((f32[10]), f32[10], s32[]) async-update(async-start)
  ROOT async-done = f32[10] async-done(async-update)
}
"""


def test_the_chain_pairs_and_the_late_inputs_are_data() -> None:
    m = parse_hlo(LATE_BOUND_OPERANDS)
    m.self_check()
    index = ModuleIndex(m)
    entry = m.entry.by_name
    assert entry["async-update.0"].operands == ("async-start", "constant.1")
    assert entry["async-update.1"].operands == ("async-update.0", "constant.2")
    assert [(p.start.name, p.done.name) for p in pair_async_ops(index)] == [("async-start", "async-done")]
    # Each constant is used by the update that binds it; the chain runs start -> update.0 -> update.1 -> done.
    assert [u.name for u in index.users(entry["constant.1"])] == ["async-update.0"]
    assert [u.name for u in index.users(entry["constant.2"])] == ["async-update.1"]
    assert [u.name for u in index.users(entry["async-start"])] == ["async-update.0"]
    assert str(entry["async-start"].shape.tuple_shapes[0]) == "()"  # nothing bound at the start


def test_a_result_bound_at_an_update_pairs_the_same_way() -> None:
    m = parse_hlo(LATE_BOUND_OUTPUT)
    m.self_check()
    pairs = pair_async_ops(ModuleIndex(m))
    assert [(p.start.name, p.done.name) for p in pairs] == [("async-start", "async-done")]
    assert str(m.entry.by_name["async-start"].shape.tuple_shapes[1]) == "()"


#: The async dynamic-slice starts with its index bound and reads its pinned-host buffer, bound at the
#: update: 1 x 1024 f32 = 4096 bytes come to the device, the result bound at the update too.
LATE_BOUND_HOST_BUFFER = """HloModule m, is_scheduled=true

%slice (i: s32[], h: f32[4,1024]) -> f32[1,1024] {
  %i = s32[] parameter(0)
  %h = f32[4,1024]{1,0:S(5)} parameter(1)
  %z = s32[] constant(0)
  ROOT %ds = f32[1,1024]{1,0} dynamic-slice(%h, %i, %z), dynamic_slice_sizes={1,1024}
}

ENTRY %main (host: f32[4,1024], i: s32[]) -> f32[1,1024] {
  %i = s32[] parameter(1)
  %host = f32[4,1024]{1,0:S(5)} parameter(0)
  %s = ((s32[]), (), u32[]) async-start(%i), calls=%slice
  %u = ((s32[], f32[4,1024]{1,0:S(5)}), f32[1,1024]{1,0}, u32[]) async-update(%s, %host)
  ROOT %d = f32[1,1024]{1,0} async-done(%u)
}
"""
MODULES = {"operands": LATE_BOUND_OPERANDS, "output": LATE_BOUND_OUTPUT, "host buffer": LATE_BOUND_HOST_BUFFER}


def test_a_host_buffer_bound_late_is_still_a_host_transfer() -> None:
    report = analyze(parse_hlo(LATE_BOUND_HOST_BUFFER), "h100-sxm").to_dict()
    assert [(t["name"], t["direction"], t["bytes"], t["op"], t["done"]) for t in report["transfers"]] == [
        ("s", "to_device", 4096, "dynamic-slice", "d")]
