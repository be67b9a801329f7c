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


def test_the_search_index_reads_op_name_as_the_model_does_on_every_fixture_instruction() -> None:
    # op_name() finds metadata={...} without splitting the attribute list (0.5 s of the index
    # on the 32-layer module); on every instruction of every fixture module it must read what
    # Instruction.metadata reads, and the fast path must be the one taken for most of them.
    from hloscope.hlo.parser import parse_hlo
    from hloscope.tui.search import _METADATA_RE, op_name
    from tests.conftest import FIXTURES

    paths = sorted(FIXTURES.glob("*.hlo.txt"))
    assert len(paths) >= 10
    checked = named = unsplit = 0
    for path in paths:
        module = parse_hlo(path.read_text(), path.name)
        for comp in module.computations.values():
            for ins in comp.instructions:
                fast = op_name(ins)
                unsplit += ins._attrs is None  # the attribute list was not split for it
                assert fast == ins.metadata.get("op_name", ""), (path.name, ins.name)
                checked += 1
                named += bool(fast)
    assert checked > 15_000 and named > 10_000 and unsplit > 0.9 * checked
    # llama_offload's first op_name (read by hand): the fast path's regex finds it whole
    text = fixture_text("llama_offload.hlo.txt")
    line = next(line for line in text.splitlines() if "metadata={op_name=" in line)
    m = _METADATA_RE.search(line)
    assert m is not None and m.group(1).startswith('{op_name="')


def test_op_name_takes_the_model_s_path_where_the_shortcut_would_be_ambiguous() -> None:
    from hloscope.hlo.parser import parse_hlo
    from hloscope.tui.search import op_name

    cases = {
        # the usual form, and escapes inside the string
        'metadata={op_name="jit(f)/dot" source_file="a.py"}': "jit(f)/dot",
        r'metadata={op_name="p[\"w\"] \\ x" source_line=3}': 'p["w"] \\ x',
        # op_name not first, twice (the last wins), absent, a brace inside the string
        'metadata={op_type="dot" op_name="second"}': "second",
        'metadata={op_name="a" op_name="b"}': "b",
        'metadata={source_file="a.py"}': "",
        'metadata={op_name="a}b" source_line=1}, backend_config={"x":1}': "a}b",
        # "metadata={" inside another attribute's string, or nested in another value
        'custom_call_target="metadata={op_name=\\"no\\"}", metadata={op_name="yes"}': "yes",
        'custom_call_target="metadata={op_name=\\"no\\"}"': "",
        'frontend_attributes={x="1"}, metadata={op_name="after"}': "after",
    }
    for attrs, want in cases.items():
        module = parse_hlo(f"HloModule m\n\nENTRY e {{\n  ROOT p = f32[] parameter(0), {attrs}\n}}\n", "m")
        ins = module.computations[module.entry_name].instructions[0]
        assert ins.metadata.get("op_name", "") == want, attrs  # the model reads it so ...
        assert op_name(ins) == want, attrs  # ... and so does the index


def test_compare_pairs_as_diff_does_each_tensor_with_itself() -> None:
    # issue 46 item 1: the compare screen's pairs are diff's: the llama fixtures' 256 KiB query reload
    # (llama.py:69 in A, :66 in B, three lines apart) with the query's, not with a 64 KiB value.
    a = fixture_report("llama_offload.hlo.txt")
    b = fixture_report("llama_offload_nolhs.hlo.txt")
    matches = match_transfers(a, b)
    assert len(matches) == 9 and all(m.a is not None and m.b is not None for m in matches)
    assert all(m.a.transfer.bytes == m.b.transfer.bytes for m in matches if m.a and m.b)
    query = [m for m in matches if m.a and m.b and m.a.transfer.bytes == 256 * 1024
             and str(m.a.transfer.direction) == "to_device"]
    assert [(m.key.source, m.a.verdict.value, m.b.verdict.value) for m in query] == [
        ("workloads/llama.py:69", "hidden", "partial")]
