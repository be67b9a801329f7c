"""The schedule's time axis (pure), read against the simulated step of a real fixture.

Facts read in fixtures/llama_offload.hlo.txt: %while.43 in the entry runs the body
%region_13.23_spmd with known_trip_count 2; its %dynamic-slice-start.3 reads from host
(S(5)) and %dynamic-slice-done.3 waits for it later in the body.
"""

from __future__ import annotations

import pytest

from hloscope.analysis.simulate.timeline import SliceKind
from hloscope.analysis.structure.opclass import Resource
from hloscope.tui.timeaxis import TimeAxis
from tests.conftest import fixture_report

BODY = "region_13.23_spmd"


@pytest.fixture(scope="module")
def report():  # type: ignore[no-untyped-def]
    return fixture_report("llama_offload.hlo.txt")


def test_a_loop_body_shows_its_last_simulated_iteration(report) -> None:  # type: ignore[no-untyped-def]
    tl = report.timeline
    axis = TimeAxis(tl)
    loop = next(lp for lp in tl.loops if lp.body == BODY)
    assert loop.trip_count == 2 and loop.simulated == 2  # known_trip_count 2, both simulated
    last = [s for s in tl.slices[Resource.COMPUTE] if s.computation == BODY and s.iteration == loop.simulated - 1
            and s.kind in (SliceKind.COMPUTE, SliceKind.WAIT)]
    assert last
    for s in last:
        at = axis.at(BODY, s.name)
        assert at is not None and at.start_us == s.start_us and at.end_us == s.end_us
    assert "last simulated iteration (2 of 2)" in axis.caption(BODY)


def test_work_in_one_computation_starts_in_schedule_order(report) -> None:  # type: ignore[no-untyped-def]
    axis = TimeAxis(report.timeline)
    for comp in (report.module.entry_name, BODY):
        starts = [at.start_us for ins in report.module.computations[comp].instructions
                  if (at := axis.at(comp, ins.name)) is not None and not at.issued]
        assert len(starts) > 10 and starts == sorted(starts), comp
    assert axis.caption(report.module.entry_name) == "start µs: simulated, from the step start"


def test_a_transfer_start_shows_its_issue_and_its_done_the_wait(report) -> None:  # type: ignore[no-untyped-def]
    axis = TimeAxis(report.timeline)
    v = report.verdict_for("dynamic-slice-start.3")
    assert v is not None and v.timing is not None and v.done is not None
    start = axis.at(BODY, "dynamic-slice-start.3")
    assert start is not None and start.issued and start.start_us == v.timing.issue_us
    done = axis.at(v.done.computation, v.done.name)
    if v.timing.wait_us > 0:  # the compute stream stopped at the done: its wait slice
        assert done is not None and done.wait_us == pytest.approx(v.timing.wait_us)
        assert done.end_us == pytest.approx(v.timing.finish_us)
    else:
        assert done is None or done.wait_us == 0


def test_a_computation_the_step_never_ran_says_so(report) -> None:  # type: ignore[no-untyped-def]
    axis = TimeAxis(report.timeline)
    fusion_body = next(c for c in report.module.computations if c.startswith("fused_") or "fusion" in c)
    assert axis.at(fusion_body, report.module.computations[fusion_body].instructions[0].name) is None
    assert "not reached" in axis.caption(fusion_body)


def _rows(report, comp: str) -> list[tuple[str, float, bool]]:  # type: ignore[no-untyped-def]
    axis = TimeAxis(report.timeline)
    return [(ins.name, at.start_us, at.issued) for ins in report.module.computations[comp].instructions
            if (at := axis.at(comp, ins.name)) is not None]


def test_a_start_in_flight_across_extrapolated_iterations_shows_the_iteration_the_border_names() -> None:
    # issue 36 item 6: the start of a copy whose done is in the next iteration (pipelined offload) is
    # still in flight when the loop's remaining iterations are extrapolated, so its last *fully*
    # simulated execution (TransferTiming.issue_us) is the iteration before: the row showed that
    # iteration's time among the last iteration's rows, and the column ran backwards.
    from hloscope.analysis.inputs import StepInputs
    from hloscope.analysis.report import analyze_step
    from hloscope.hlo.parser import parse_hlo
    from hloscope.targets import get_target
    from tests.analysis.simulate.test_timeline import _crossing

    report = analyze_step(StepInputs(parse_hlo(_crossing(1000)), "crossing"), get_target("h100-sxm"))
    tl = report.timeline
    [loop] = tl.loops
    assert loop.extrapolated and loop.simulated == 3  # iterations 0..2 simulated, 997 extrapolated
    axis = TimeAxis(tl)
    assert "last simulated iteration (3 of 1000" in axis.caption("body")
    last = {s.name: s for s in tl.slices[Resource.COMPUTE]
            if s.computation == "body" and s.iteration == loop.simulated - 1
            and s.kind in (SliceKind.COMPUTE, SliceKind.WAIT)}
    start = axis.at("body", "start")
    assert start is not None and start.issued
    # %w (the copy's operand) ends and %n (the counter) starts the instant the stream reaches %start
    assert start.start_us == last["w"].end_us == last["n"].start_us
    assert tl.transfers[("body", "start")].issue_us < last["done"].start_us  # the older figure, an iteration back
    times = [t for _, t, _ in _rows(report, "body")]
    assert times == sorted(times)


@pytest.mark.parametrize("name", ["llama_offload.hlo.txt", "llama405b_hostmem.hlo.txt", "llama405b_hostbuf.hlo.txt"])
def test_every_row_of_a_computation_with_transfers_runs_forwards(name: str) -> None:
    # every row, transfer starts included (the test above excludes them): llama405b_hostmem's entry
    # showed copy-start.22 at 48,318,826 us (its issue moved by an extrapolated loop it was issued
    # before, past its own finish at 1,716,205) above input_reduce_fusion.15 at 1,550,363
    report = fixture_report(name)
    for comp in {v.transfer.computation for v in report.verdicts}:
        times = [t for _, t, _ in _rows(report, comp)]
        assert times == sorted(times), (name, comp)
