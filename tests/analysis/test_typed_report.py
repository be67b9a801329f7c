"""The report as data: windows, overlapped instructions and hints read without touching a string.

Facts read by hand in fixtures/mlp_offload.hlo.txt, computation region_3.4_spmd (the
backward loop body): param.2 (0), get-tuple-element.163 (1), loop_subtract_fusion (2),
get-tuple-element.175 (3), constant_81_0 (4), dynamic-slice-start.1 (5), then three
get-tuple-element + loop_dynamic_slice_fusion pairs (6-11), dynamic-slice-done.1 (12).
The done's value goes bitcast.241 -> tuple.11.0 at index 0 -> get-tuple-element.70.0
(index 0) -> bitcast.75.0 -> gemm_fusion_dot.14 (28). all-gather-start (22) reads
indices 2 and 3 of the same tuple, not index 0, so it is not the first real use.
"""

from __future__ import annotations

from hloscope.analysis.kinds import Direction, Reason, SegmentKind, VerdictKind
from tests.conftest import fixture_report


def _verdict(name: str):  # type: ignore[no-untyped-def]
    report = fixture_report("mlp_offload.hlo.txt")
    v = report.verdict_for(name)
    assert v is not None
    return report, v


def test_window_segment_and_instructions_are_data() -> None:
    # Given the backward reload dynamic-slice-start.1
    report, v = _verdict("dynamic-slice-start.1")
    # Then its window is one segment of its loop body, positions 6..11
    assert v.transfer.direction is Direction.TO_DEVICE
    assert [(s.computation, s.first, s.end, s.kind) for s in v.window] == [
        ("region_3.4_spmd", 6, 12, SegmentKind.BETWEEN)]
    assert v.window_size == 6 and v.done is not None and v.done.name == "dynamic-slice-done.1"
    assert v.done.position == 12 and v.transfer.instruction.position == 5
    # And the compute in it is the three layer-slice fusions, as instructions with a cost
    assert [w.instruction.opcode for w in v.compute] == ["fusion"] * 3
    assert v.overlapped_compute == ["loop_dynamic_slice_fusion.1", "loop_dynamic_slice_fusion.2",
                                    "loop_dynamic_slice_fusion"]
    assert all(w.est_us > 0 and w.fraction == 1.0 for w in v.compute)
    assert v.est_compute_us == sum(w.est_us for w in v.compute)
    assert v.collectives == () and v.other_transfers == ()
    assert [i.name for i in v.window_instructions(report.module)][::2] == [
        "get-tuple-element.176", "get-tuple-element.177", "get-tuple-element.178"]


def test_hints_are_typed_and_follow_the_tuple_element() -> None:
    _, v = _verdict("dynamic-slice-start.1")
    r = v.input_ready
    assert r is not None and r.producer.name == "loop_subtract_fusion" and not r.from_top
    assert r.ops_before_start == 2 and r.work_ops_between == 0  # a get-tuple-element and a constant
    u = v.first_use
    assert u is not None and u.user.name == "gemm_fusion_dot.14"  # not all-gather-start (indices 2, 3)
    assert u.ops_after_done == 15 and u.work_ops_between == 0 and not u.is_loop_state
    assert u.element == ()


def test_collectives_in_flight_and_loop_state_use() -> None:
    # dynamic-update-slice-start.2 (forward loop body): all-gather-start.1 runs inside its window,
    # and its done's value only goes into the body's root tuple (loop state) at index 2.
    _, v = _verdict("dynamic-update-slice-start.2")
    # The verdict comes from the simulated step: the stream never waits at the done. The 16 KiB
    # transfer (2 us DMA setup + 0.3 us) is over before the all-gather is issued (the kernels
    # before it take 1 us launch each), so the simulation saw no collective beside it.
    assert v.verdict is VerdictKind.HIDDEN and v.reason is Reason.SIMULATED
    assert v.timing is not None and v.timing.matched and v.timing.wait_us == 0.0
    assert v.timing.beside_collectives == ()
    assert v.timing.executions == v.transfer.executions
    assert [w.name for w in v.collectives] == ["all-gather-start.1"]
    assert v.collectives[0].fraction == 1.0
    u = v.first_use
    assert u is not None and u.is_loop_state and u.user.opcode == "tuple" and u.element == (2,)


def test_summary_is_typed() -> None:
    report = fixture_report("mlp_offload.hlo.txt")
    s = report.summary
    assert s.transfers == len(report.verdicts) == 3
    assert sum(s.by_verdict.values()) == 3
    assert s.to_host_bytes_per_step == sum(v.transfer.bytes * v.transfer.executions for v in report.verdicts
                                           if v.transfer.direction is Direction.TO_HOST)
    assert {lp.computation for lp in s.loops} == {v.transfer.computation for v in report.verdicts}
