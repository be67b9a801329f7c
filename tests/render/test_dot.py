"""The DOT views on real fixtures: golden files, and facts read from the HLO text.

Golden ``.dot`` files are the output contract (reviewed against the fixture HLO
when they change: ``HLOSCOPE_UPDATE_GOLDEN=1 pytest tests/render/test_dot.py``).
The fact tests find the instructions between a start and its done, the operands
and the trip counts with regular expressions over the fixture text, not with
hloscope's parser, and check the diagrams show them.
"""

from __future__ import annotations

import os
import re

import pytest

from hloscope.errors import EXIT_BAD_INPUT, EXIT_UNKNOWN_NAME, HloscopeError
from hloscope.render.dot.draw import DEFAULT_SCHEDULE_ROWS, build_view, find_transfer
from hloscope.render.dot.quote import node_id
from tests.conftest import FIXTURES, fixture_report, fixture_text

GOLDEN = FIXTURES.parent / "tests" / "golden"

# golden file -> (fixture, view, name, options)
CASES: dict[str, tuple[str, str, str | None, dict[str, int]]] = {
    "mlp_offload.transfer.dot": ("mlp_offload.hlo.txt", "transfer", "dynamic-slice-start.1", {}),
    "llama_offload.transfer_exposed.dot": ("llama_offload.hlo.txt", "transfer", "dynamic-slice-start.2.0", {}),
    "llama_offload.transfer_hidden.dot": ("llama_offload.hlo.txt", "transfer", "dynamic-update-slice-start.6",
                                          {"radius": 0, "max_nodes": 40}),
    "mlp_offload.computation.dot": ("mlp_offload.hlo.txt", "computation", "region_3.4_spmd", {}),
    "llama_offload.schedule.dot": ("llama_offload.hlo.txt", "schedule", "region_13.23_spmd", {}),
    "llama_offload.calls.dot": ("llama_offload.hlo.txt", "calls", None, {}),
}


@pytest.mark.parametrize("golden", CASES, ids=list(CASES))
def test_golden_dot(golden: str) -> None:
    fixture, view, name, opts = CASES[golden]
    source = build_view(fixture_report(fixture), view, name, **opts).graph.source
    path = GOLDEN / golden
    if os.environ.get("HLOSCOPE_UPDATE_GOLDEN"):
        path.write_text(source)
    assert source == path.read_text()


@pytest.mark.parametrize("golden", CASES, ids=list(CASES))
def test_same_input_same_dot(golden: str) -> None:
    fixture, view, name, opts = CASES[golden]
    first = build_view(fixture_report(fixture), view, name, **opts).graph.source
    again = build_view(fixture_report(fixture), view, name, **opts).graph.source
    assert first == again


def _between(text: str, start: str, done: str) -> list[str]:
    """Instruction names written between ``%start =`` and ``%done =`` in the HLO text."""
    a = text.index(f"%{start} = ")
    b = text.index(f"%{done} = ", a)
    return re.findall(r"^\s+(?:ROOT )?%([\w.\-]+) = ", text[a:b], re.M)


def _nodes(source: str) -> set[str]:
    return set(re.findall(r'^\t+"([^"]+)" \[', source, re.M))


def _edges(source: str) -> list[tuple[str, str, str]]:
    return re.findall(r'^\t+"([^"]+)" -> "([^"]+)"(?: \[(.*)\])?$', source, re.M)


def test_transfer_view_shows_the_window_from_the_hlo() -> None:
    # Given the mlp fixture, where dynamic-slice-start.1 (host to device) is
    # followed by its done six instructions later in region_3.4_spmd.
    text = fixture_text("mlp_offload.hlo.txt")
    window = _between(text, "dynamic-slice-start.1", "dynamic-slice-done.1")
    assert len(window) == 6
    start_line = next(ln for ln in text.splitlines() if "%dynamic-slice-start.1 = " in ln)
    producer = re.search(r"fusion-start\(%[\w.\-]+, %([\w.\-]+)", start_line)
    assert producer is not None and producer.group(1) == "loop_subtract_fusion"
    # When the transfer view is drawn with radius 0,
    source = build_view(fixture_report("mlp_offload.hlo.txt"), "transfer", "dynamic-slice-start.1",
                        radius=0).graph.source
    # Then it holds the start, the done and every window instruction,
    comp = "region_3.4_spmd"
    nodes = _nodes(source)
    expected = {node_id(comp, n) for n in ["dynamic-slice-start.1", "dynamic-slice-done.1", *window]}
    assert expected <= nodes
    # the async span is dashed, and the input-ready hint runs from the producer to the start.
    edges = {(a, b): attrs for a, b, attrs in _edges(source)}
    span = edges[(node_id(comp, "dynamic-slice-start.1"), node_id(comp, "dynamic-slice-done.1"))]
    assert "style=dashed" in span
    hint = edges[(node_id(comp, "loop_subtract_fusion"), node_id(comp, "dynamic-slice-start.1"))]
    assert "input ready" in hint
    assert "legend" in source


def test_radius_adds_producers_and_consumers() -> None:
    report = fixture_report("mlp_offload.hlo.txt")
    small = _nodes(build_view(report, "transfer", "dynamic-slice-start.1", radius=0).graph.source)
    wide = _nodes(build_view(report, "transfer", "dynamic-slice-start.1", radius=2).graph.source)
    assert small < wide
    # The start's host-side operand (first operand of the fusion-start) is one hop away.
    text = fixture_text("mlp_offload.hlo.txt")
    start_line = next(ln for ln in text.splitlines() if "%dynamic-slice-start.1 = " in ln)
    host_operand = re.search(r"fusion-start\(%([\w.\-]+)", start_line)
    assert host_operand is not None
    assert node_id("region_3.4_spmd", host_operand.group(1)) in wide


def test_node_limit_cuts_and_says_how_to_widen() -> None:
    report = fixture_report("llama_offload.hlo.txt")
    full = build_view(report, "transfer", "dynamic-update-slice-start.6", radius=2, max_nodes=10_000)
    cut = build_view(report, "transfer", "dynamic-update-slice-start.6", radius=2, max_nodes=12)
    assert not full.notes

    def instructions(source: str) -> set[str]:  # the legend and the possible-window note are not instructions
        return {n for n in _nodes(source) if not n.startswith(("legend/", "possible-window/"))}

    assert len(instructions(cut.graph.source)) == 12
    assert cut.notes and "--max-nodes" in cut.notes[0]
    total = len(instructions(full.graph.source))
    assert f"--max-nodes {total}" in cut.notes[0]
    # the note is in the drawing's title, wrapped into lines of quote.TITLE_WIDTH
    assert " ".join(cut.notes[0].split()) in " ".join(cut.graph.source.replace("\\n", " ").split())


def test_schedule_view_puts_ops_on_lanes() -> None:
    # The llama backward body holds the host-to-device slices and an all-gather.
    text = fixture_text("llama_offload.hlo.txt")
    body = text[text.index("%region_13.23_spmd "):]
    body = body[:body.index("\n}\n")]
    starts = re.findall(r"%(dynamic-slice-start[\w.\-]*) = ", body)
    gathers = re.findall(r"%(all-gather-start[\w.\-]*) = ", body)
    assert starts and gathers
    source = build_view(fixture_report("llama_offload.hlo.txt"), "schedule", "region_13.23_spmd",
                        max_nodes=1000).graph.source
    lanes = {m.group(1): m.group(2) for m in re.finditer(r"subgraph cluster_(\w+) \{(.*?)\n\t\}", source, re.S)}
    for s in starts:
        assert f'"{node_id("region_13.23_spmd", s)}"' in lanes["to_device"]
    for s in gathers:
        assert f'"{node_id("region_13.23_spmd", s)}"' in lanes["collectives"]
    assert "bitcast" not in lanes["compute"]  # free ops are not drawn


def test_calls_view_has_trip_counts_from_the_hlo() -> None:
    text = fixture_text("llama_offload.hlo.txt")
    trips = dict(re.findall(r"%(while\.\d+) = .*?known_trip_count\":\{\"n\":\"(\d+)\"", text))
    assert trips
    source = build_view(fixture_report("llama_offload.hlo.txt"), "calls").graph.source
    for name, n in trips.items():
        assert re.search(rf'label="while body x{n}\\nvia {re.escape(name)}"', source), name


def test_computation_view_draws_loops_with_trip_counts() -> None:
    text = fixture_text("llama_offload.hlo.txt")
    trips = dict(re.findall(r"%(while\.\d+) = .*?known_trip_count\":\{\"n\":\"(\d+)\"", text))
    report = fixture_report("llama_offload.hlo.txt")
    source = build_view(report, "computation", report.module.entry_name, max_nodes=10_000).graph.source
    for name, n in trips.items():
        assert f"{name}  x{n}" in source


def test_transfer_lookup_by_done_and_op_name() -> None:
    report = fixture_report("mlp_offload.hlo.txt")
    assert find_transfer(report, "dynamic-slice-done.1").transfer.instruction.name == "dynamic-slice-start.1"
    # The op_name of the only host-to-device slice in the backward loop names it uniquely.
    v = find_transfer(report, "jit(step)/transpose(jvp())/while/body/jit(dynamic_index_in_dim)/dynamic_slice")
    assert v.transfer.instruction.name == "dynamic-slice-start.1"


def test_unknown_and_ambiguous_names_are_exit_3() -> None:
    report = fixture_report("llama_offload.hlo.txt")
    with pytest.raises(HloscopeError) as e:
        build_view(report, "transfer", "no-such-transfer")
    assert e.value.exit_code == EXIT_UNKNOWN_NAME and "dynamic-slice-start.2.0" in str(e.value)
    with pytest.raises(HloscopeError) as e:
        build_view(report, "transfer", "dynamic_slice")  # the last part of several op_names
    assert e.value.exit_code == EXIT_UNKNOWN_NAME and "is part of the op_name of" in str(e.value)
    with pytest.raises(HloscopeError) as e:
        build_view(report, "computation", "nope")
    assert e.value.exit_code == EXIT_UNKNOWN_NAME and "region_13.23_spmd" in str(e.value)
    with pytest.raises(HloscopeError) as e:
        build_view(report, "calls", max_nodes=0)
    assert e.value.exit_code == EXIT_BAD_INPUT


def test_schedule_is_limited_by_default_and_says_how_to_see_more() -> None:
    report = fixture_report("llama_offload.hlo.txt")
    diagram = build_view(report, "schedule", "region_13.23_spmd")
    full = build_view(report, "schedule", "region_13.23_spmd", max_nodes=10_000)
    drawn = [n for n in _nodes(diagram.graph.source) if not n.startswith(("legend", "lane/"))]
    every = [n for n in _nodes(full.graph.source) if not n.startswith(("legend", "lane/"))]
    assert len(drawn) == DEFAULT_SCHEDULE_ROWS < len(every) and not full.notes
    last = max(int(p) for p in re.findall(r"\\n#(\d+)\"", diagram.graph.source))
    assert f"continue with --from {last + 1}" in diagram.notes[0]
    assert f"--max-nodes {len(every)}" in diagram.notes[0]


def test_an_empty_lane_is_not_drawn() -> None:
    # The backward body only reads from host memory: no to-host transfer in it (read from the HLO text).
    text = fixture_text("llama_offload.hlo.txt")
    body = text[text.index("%region_13.23_spmd "):]
    body = body[:body.index("\n}\n")]
    assert "dynamic-update-slice-start" not in body and "dynamic-slice-start" in body
    source = build_view(fixture_report("llama_offload.hlo.txt"), "schedule", "region_13.23_spmd",
                        max_nodes=1000).graph.source
    assert "cluster_to_device" in source and "cluster_to_host" not in source
    assert "nothing on: host link D->H" in source


def test_legend_is_one_node_below_everything() -> None:
    source = build_view(fixture_report("mlp_offload.hlo.txt"), "transfer", "dynamic-slice-start.1").graph.source
    nodes = {n for n in _nodes(source) if n != "legend"}
    into_legend = set(re.findall(r'^\t+"([^"]+)" -> legend \[style=invis\]$', source, re.M))
    assert nodes == into_legend  # an edge from every node keeps it under the drawing
    assert "cluster_legend" not in source and len(re.findall(r"^\tlegend \[", source, re.M)) == 1


def test_calls_of_an_unscheduled_module_does_not_say_scheduled() -> None:
    text = fixture_text("mlp_offload.before_optimizations.hlo.txt")
    assert "is_scheduled=true" not in text.splitlines()[0]
    source = build_view(fixture_report("mlp_offload.before_optimizations.hlo.txt"), "calls").graph.source
    assert "scheduled computation(s)" not in source and "module NOT scheduled" in source


def test_transfer_view_shows_the_possible_window_beside_the_one_it_got() -> None:
    # Given llama_offload's backward loop, read from the HLO text: dynamic-slice-start.2.0 (position 5
    # of region_13.23_spmd) reads loop_subtract_fusion (position 2), its done is at 8 and the first
    # instruction really reading the fetched slice is gemm_fusion_dot.77 (position 76),
    text = fixture_text("llama_offload.hlo.txt")
    a = text.index("%region_13.23_spmd")
    names = re.findall(r"^\s+(?:ROOT )?%([\w.\-]+) = ", text[a:text.index("\n}\n", a)], re.M)
    assert [names.index(n) for n in ("loop_subtract_fusion", "dynamic-slice-start.2.0", "dynamic-slice-done.2.0",
                                     "gemm_fusion_dot.77")] == [2, 5, 8, 76]
    report = fixture_report("llama_offload.hlo.txt")
    v = find_transfer(report, "dynamic-slice-start.2.0")
    slack = report.slack_for(v)
    assert slack is not None and slack.got_ops == 0 and slack.possible_ops > 0 and slack.could_hide
    # when its transfer view is drawn,
    source = build_view(report, "transfer", "dynamic-slice-start.2.0").graph.source
    comp = "region_13.23_spmd"
    note = node_id("possible-window", comp, "dynamic-slice-start.2.0")
    # then a note beside the window it got holds the possible window: the range between the input's
    # producer and the first real use, its compute against the window's (none), and the verdict,
    labels = dict(re.findall(r'^\t+"([^"]+)" \[label="((?:[^"\\]|\\.)*)"', source, re.M))
    assert labels[note].split("\\n") == [
        "possible window (dependency graph)", f"{comp} [3, 76) between",
        f"{slack.possible_ops} compute op(s) ~{slack.possible_compute_us:.1f} us", "window it got: 0 op(s) ~0.0 us",
        f"transfer ~{slack.transfer_us:.1f} us: enough to hide it"]
    # tied by dotted edges to the producer and to the first real use, both drawn,
    edges = {(x, y): attrs for x, y, attrs in _edges(source)}
    assert "possible from here" in edges[(node_id(comp, "loop_subtract_fusion"), note)]
    assert "possible until here" in edges[(note, node_id(comp, "gemm_fusion_dot.77"))]
    # and the title says it in words.
    assert f"could have had {slack.possible_ops} compute op(s)" in source



def test_a_write_back_that_only_the_result_reads_has_a_possible_window_too_small_to_hide_it() -> None:
    # opt_state_offload, read from the HLO text: copy-start.15.0 (line 481) copies get-tuple-element.1,
    # written on the line before it; its done (line 483) is read only by the ROOT tuple. Nothing but
    # the pair and its done lies between its input and the end: no compute could hide its 8 MiB.
    text = fixture_text("opt_state_offload.hlo.txt")
    lines = text.splitlines()
    i = next(n for n, ln in enumerate(lines) if "%copy-start.15.0 = " in ln)
    assert "%get-tuple-element.1 = " in lines[i - 1] and "copy-start(%get-tuple-element.1)" in lines[i]
    report = fixture_report("opt_state_offload.hlo.txt")
    source = build_view(report, "transfer", "copy-start.15.0").graph.source
    note = node_id("possible-window", "main.0_spmd", "copy-start.15.0")
    labels = dict(re.findall(r'^\t+"([^"]+)" \[label="((?:[^"\\]|\\.)*)"', source, re.M))
    assert labels[note].endswith("0 compute op(s) ~0.0 us\\nwindow it got: 0 op(s) ~0.0 us\\n"
                                 "transfer ~154.5 us: not enough: no placement hides it")
    edges = {(x, y): attrs for x, y, attrs in _edges(source)}
    assert "possible from here" in edges[(node_id("main.0_spmd", "get-tuple-element.1"), note)]
    assert not any(x == note and "possible until here" in (attrs or "") for (x, _), attrs in edges.items())


def test_a_cut_computation_says_which_positions_and_that_constants_are_among_them() -> None:
    # issue 36 item 13: "(positions 0..150)" for the first 150 read as an off-by-one; positions count the
    # constants, which are not drawn. Read from the llama fixture's entry computation: its first 80
    # non-constant instructions end at the position below, with the constants between them counted.
    report = fixture_report("llama_offload.hlo.txt")
    entry = report.module.entry
    drawn = [i for i in entry.instructions if i.opcode != "constant"][:80]
    among = sum(1 for i in entry.instructions
                if i.opcode == "constant" and drawn[0].position < i.position < drawn[-1].position)
    assert among > 0 and drawn[-1].position - drawn[0].position + 1 == 80 + among
    [note] = build_view(report, "computation", entry.name, max_nodes=80).notes
    total = sum(1 for i in entry.instructions if i.opcode != "constant")
    assert note == (f"showing the first 80 of {total} instructions in schedule order (positions "
                    f"{drawn[0].position}..{drawn[-1].position}, with {among} constant(s) among them not drawn); "
                    f"widen with --max-nodes {total}")
