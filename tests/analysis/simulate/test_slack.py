"""The window each transfer could have had (hloscope.analysis.simulate.slack), against facts read in the fixtures.

mlp_offload_nolhs.hlo.txt (LHS off), backward loop body region_3.4_spmd: dynamic-slice-start.1
(position 7) reads the host buffer with the index loop_subtract_fusion computes (position 5); its
done comes right after it (8); the fetched value goes through bitcast.241 into tuple.11.0 as element
0, out again as get-tuple-element.70.0 and bitcast.75.0, and is first really read by
gemm_fusion_dot.14 (position 31). Between 5 and 31 lie three slice fusions of the stacked weights
(loop_dynamic_slice_fusion.1, .2 and the kLoop one, positions 11, 14 and 17) and an all-gather; so
its own window holds nothing, and the one it could have had holds those three.

opt_state_offload.hlo.txt: the last moment write-back copy-start.15.0 (line 481) copies
get-tuple-element.1, the second output of the step's last update fusion (line 480): nothing
follows it but the result tuple, so no placement could hide it: the optimizer's write-backs end the
step. The first moment fetch copy-start.2.0 reads a parameter (ready at the top) and is first used by
loop_add_subtract_fusion.2, the update dozens of ops later, all of the backward pass between.
"""

from __future__ import annotations

from tests.conftest import fixture_report


def _slack(fixture: str, start: str):  # type: ignore[no-untyped-def]
    report = fixture_report(fixture)
    v = report.verdict_for(start)
    assert v is not None
    return v, report.slack_for(v)


def test_a_prefetch_placed_next_to_its_done_could_have_had_three_slice_fusions() -> None:
    v, s = _slack("mlp_offload_nolhs.hlo.txt", "dynamic-slice-start.1")
    assert s is not None and v.verdict.value == "exposed" and s.got_ops == 0
    assert (s.ready_after, s.needed_by) == ("loop_subtract_fusion", "gemm_fusion_dot.14")
    (seg,) = s.segments
    assert (seg.computation, seg.first, seg.end) == ("region_3.4_spmd", 6, 31)
    assert s.possible_ops == 3 and s.could_hide and s.possible_compute_us > s.transfer_us


def test_the_optimizer_write_back_that_ends_the_step_could_not_be_hidden() -> None:
    v, s = _slack("opt_state_offload.hlo.txt", "copy-start.15.0")
    assert s is not None and s.ready_after == "get-tuple-element.1" and s.needed_by is None
    assert s.possible_ops == 0 and not s.could_hide
    d = next(t for t in fixture_report("opt_state_offload.hlo.txt").to_dict()["transfers"]
             if t["name"] == "copy-start.15.0")
    assert d["slack"]["could_hide"] is False and d["slack"]["possible_ops"] == 0
    # Its input is the update fusion's output, not a parameter: the hint no longer says "from the top".
    assert v.input_ready is not None and not v.input_ready.from_top


def test_a_fetch_issued_at_its_use_could_have_run_under_the_backward_pass() -> None:
    _, s = _slack("opt_state_offload.hlo.txt", "copy-start.2.0")
    assert s is not None and s.ready_after is None and s.needed_by == "loop_add_subtract_fusion.2"
    assert s.got_ops == 0 and s.possible_ops > 10 and s.could_hide


def test_the_text_report_words_it_for_exposed_transfers_only() -> None:
    text = fixture_report("mlp_offload_nolhs.hlo.txt").to_text()
    assert ("could have had 3 compute op(s)" in text and "its first real use (gemm_fusion_dot.14)" in text
            and "enough to hide" in text)
    hidden = fixture_report("mlp_offload.hlo.txt").to_text()  # LHS on: every transfer hidden
    assert "could have had" not in hidden
