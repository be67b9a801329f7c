"""History, search and Compare's matching (pure), on real fixtures."""

from __future__ import annotations

from hloscope.tui.history import History
from hloscope.tui.matching import match_transfers
from hloscope.tui.search import SearchIndex
from tests.conftest import fixture_report, fixture_text


def test_history_goes_back_and_forward_and_a_new_visit_drops_the_forward_list() -> None:
    h = History()
    for p in (("a", "x"), ("b", None), ("c", "y")):
        h.visit(p)
    assert h.back() == ("b", None)
    assert h.back() == ("a", "x")
    assert h.back() is None
    assert h.forward() == ("b", None)
    h.visit(("d", "z"))
    assert h.forward() is None
    assert h.back() == ("b", None)


def test_search_finds_instructions_by_name_opcode_and_op_name() -> None:
    report = fixture_report("llama_offload.hlo.txt")
    index = SearchIndex(report)
    assert len(index) == report.module.instruction_count()
    hits, total = index.find("dynamic-slice-start.3")
    assert [h.name for h in hits] == ["dynamic-slice-start.3"] and total == 1
    # every all-gather instruction of the text (its opcode, as written), found by opcode
    text = fixture_text("llama_offload.hlo.txt")
    n = sum(1 for line in text.splitlines() if " all-gather-start(" in line)
    hits, _ = index.find("all-gather-start")
    assert n > 0 and sum(1 for h in hits if h.name.startswith("all-gather-start")) == n
    # op_name metadata: the scan body's dynamic_index_in_dim
    hits, total = index.find("dynamic_index_in_dim")
    assert total > 0 and all(h.label.count("dynamic_index_in_dim") for h in hits)
    assert index.find("  ") == ([], 0)


def test_compare_of_a_schedule_with_itself_matches_everything_unchanged() -> None:
    report = fixture_report("llama_offload.hlo.txt")
    matches = match_transfers(report, report)
    assert len(matches) == len(report.verdicts)
    assert all(m.a is m.b and not m.changed for m in matches)


def test_compare_pipelined_against_not_pipelined_pairs_by_source_and_marks_changes() -> None:
    a = fixture_report("llama_offload.hlo.txt")
    b = fixture_report("llama_offload_nopipe.hlo.txt")
    matches = match_transfers(a, b)
    assert {id(m.a.transfer) for m in matches if m.a} == {id(v.transfer) for v in a.verdicts}
    assert {id(m.b.transfer) for m in matches if m.b} == {id(v.transfer) for v in b.verdicts}
    both = [m for m in matches if m.a and m.b]
    assert both and all(m.a.transfer.direction is m.b.transfer.direction for m in both)
    for m in matches:
        if m.a and m.b and m.a.verdict is not m.b.verdict:
            assert m.changed
