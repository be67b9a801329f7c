"""The schedule layout (pure): lanes, spans, loops, read against facts in the fixture's HLO text."""

from __future__ import annotations

from hloscope.analysis.kinds import Direction
from hloscope.tui.rows import Lane, ScheduleLayout, window_positions
from tests.conftest import fixture_report

# Facts read in fixtures/llama_offload.hlo.txt: in %region_13.23_spmd (229 instructions, the body of
# %while.43, known_trip_count 2) %dynamic-slice-start.3 reads a bf16[2,1,256,8,64]{...:S(5)} slice
# (host to device) at position 10 and its %dynamic-slice-done.3 is at position 34.
BODY = "region_13.23_spmd"
START, DONE = 10, 34


def test_a_host_to_device_span_is_drawn_from_its_start_to_its_done() -> None:
    report = fixture_report("llama_offload.hlo.txt")
    cells = ScheduleLayout(report).cells(BODY)
    assert len(cells) == 229
    lane = Lane.TO_DEVICE
    assert cells[START][lane].starts and not cells[START][lane].ends
    assert cells[DONE][lane].ends
    assert all(cells[p][lane].active >= 1 for p in range(START, DONE + 1))
    assert not cells[START][Lane.TO_HOST].starts


def test_every_same_computation_transfer_starts_and_ends_in_its_direction_lane() -> None:
    report = fixture_report("llama_offload.hlo.txt")
    layout = ScheduleLayout(report)
    for v in report.verdicts:
        if v.done is None or v.done.computation != v.transfer.computation:
            continue
        lane = Lane.TO_HOST if v.transfer.direction is Direction.TO_HOST else Lane.TO_DEVICE
        cells = layout.cells(v.transfer.computation)
        assert cells[v.transfer.instruction.position][lane].starts, v.transfer.instruction.name
        assert cells[v.done.position][lane].ends, v.transfer.instruction.name
        assert layout.lane_of(v.transfer.instruction) is lane


def test_a_while_loop_shows_its_trip_count_and_expands_to_its_body() -> None:
    report = fixture_report("llama_offload.hlo.txt")
    layout = ScheduleLayout(report)
    entry = report.module.entry_name
    rows = layout.rows(entry)
    loop = next(r for r in rows if r.instruction.name == "while.43")
    assert loop.expandable and not loop.expanded and loop.trip_count == 2
    opened = layout.rows(entry, frozenset({(entry, "while.43")}))
    assert len(opened) == len(rows) + 229
    i = next(i for i, r in enumerate(opened) if r.instruction.name == "while.43")
    assert opened[i].expanded
    assert [r.instruction.computation for r in opened[i + 1:i + 230]] == [BODY] * 229
    assert opened[i + 1].depth == 1


def test_the_window_of_a_transfer_covers_its_segments_and_both_ends() -> None:
    report = fixture_report("llama_offload.hlo.txt")
    v = report.verdict_for("dynamic-slice-start.3")
    assert v is not None
    pos = window_positions(v)[BODY]
    assert {START, DONE} <= pos
    assert set(range(START + 1, DONE)) <= pos
