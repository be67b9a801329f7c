"""Host transfers and async pairs of the XLA test modules added for issue 28, against facts read by hand.

Each row: a module of fixtures/xla-tests/ (XLA's authors wrote it; jaxlib 0.10.2 accepts
it, tests/xla/test_corpus_vs_xla.py checks) and every host transfer in it as
(start, direction, bytes, done), read off the module text.
"""

from __future__ import annotations

import pytest

from hloscope.analysis.kinds import Direction
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.pairs import pair_async_ops
from hloscope.analysis.structure.transfers import find_host_transfers
from hloscope.hlo.parser import parse_hlo
from tests.xla_corpus import CORPUS

D2H, H2D = Direction.TO_HOST, Direction.TO_DEVICE
F32_1024 = 1024 * 4

FACTS = {
    # Two f32[1024] tensors copied to S(5) and back, the four copies interleaved with tanh/add.
    "gpu_offloading/CopyStartDoneHloStringTest.hlo": [
        ("copy-start", D2H, F32_1024, "copy-done"), ("copy-start.2", D2H, F32_1024, "copy-done.2"),
        ("copy-start.3", H2D, F32_1024, "copy-done.3"), ("copy-start.1", H2D, F32_1024, "copy-done.1")],
    # A weight s32[4,1] (16 B) offloaded, the done the root.
    "gpu_offloading/WeightOffloadingD2HWithWaitTest.hlo": [("copy-start.1", D2H, 16, "copy-done.1")],
    # A host send of f32[1000,1000] (4,000,000 B) over three negates; its shape is (data, token).
    "hlo_memory_scheduler/HostSendDoneSchedule.hlo": [("send", D2H, 4_000_000, "send-done")],
    # An async dynamic-slice of one f32[1,128,128] (65,536 B) out of a host parameter f32[256,128,128].
    "stream_attribute_annotator/DynamicSliceWrappedAndAnnotated.hlo": [
        ("dynamic-slice-start.2", H2D, 128 * 128 * 4, "dynamic-slice-done.2")],
}


@pytest.mark.parametrize("file", sorted(FACTS))
def test_transfers_as_read_by_hand(file: str) -> None:
    index = ModuleIndex(parse_hlo((CORPUS / file).read_text(), file))
    done_of = {p.start.name: p.done.name for p in pair_async_ops(index)}
    got = [(t.instruction.name, t.direction, t.bytes, done_of.get(t.instruction.name))
           for t in find_host_transfers(index)]
    assert sorted(got) == sorted(FACTS[file])


#: Async start -> done pairs of added modules, read by hand (every pair of the module).
PAIRS = {
    "convert_async_collectives_to_sync/SimpleAllReduce.hlo": {"start": "done"},
    # Two all-reduces in flight; their dones in start order, then crossed.
    "convert_async_collectives_to_sync/MultipleInFlightStreaming.hlo": {"start1": "done1", "start2": "done2"},
    "convert_async_collectives_to_sync/MultipleInFlightNested.hlo": {"start1": "done1", "start2": "done2"},
    # Four host copies (two out, two back), the second pair started before the first is done.
    "stream_attribute_annotator/CopyStartIsAnnotated.hlo": {
        "copy-start": "copy-done", "copy-start.2": "copy-done.2", "copy-start.3": "copy-done.3",
        "copy-start.1": "copy-done.1"},
    "hlo_memory_scheduler/HostSendDoneSchedule.hlo": {"send": "send-done"},
}


@pytest.mark.parametrize("file", sorted(PAIRS))
def test_async_pairs_as_read_by_hand(file: str) -> None:
    index = ModuleIndex(parse_hlo((CORPUS / file).read_text(), file))
    assert {p.start.name: p.done.name for p in pair_async_ops(index)} == PAIRS[file]
