"""Hostile names and metadata cannot break or inject into the DOT or the SVG.

Each hostile string goes through the quoting layer into a real diagram; the DOT
must keep exactly the nodes and edges built, every available renderer must
accept it, and the SVG must be well-formed XML whose text shows the string literally.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import graphviz
import pytest

from hloscope.render.dot.draw import render_dot
from hloscope.render.dot.quote import label, line, node_id
from hloscope.render.dot.run import available_renderers
from tests.conftest import fixture_text

HOSTILE = {
    "quote": 'a"b',
    "escaped quote": 'a\\"b',
    "trailing backslash": "name\\",
    "graphviz escapes": "\\N \\G \\l \\n \\E",
    "braces": "}} ] [ { subgraph x {",
    "html label": "<b>bold</b>",
    "svg injection": "</text><script>alert(1)</script>",
    "newline": "first\nsecond\r\tthird",
    "dot statement": '"]; evil -> pwned; a [label="',
    "port separator": "comp:port:n",
    "unicode": "\u03c3\u2192\u2211 \u540d\u524d \u2028 emoji \U0001f642",
    "keyword": "subgraph",
}

SVG_NS = "{http://www.w3.org/2000/svg}"


def _graph(s: str) -> graphviz.Digraph:
    g = graphviz.Digraph("t")
    g.node(node_id("comp", s), label=label(line(s, 200), "second line"))
    g.node(node_id("comp", "other"), label=label("other"))
    g.edge(node_id("comp", s), node_id("comp", "other"), xlabel=label(line(s, 200)))
    g.attr(label=label(line(s, 200)))
    return g


@pytest.mark.parametrize("s", HOSTILE.values(), ids=list(HOSTILE))
def test_node_ids_are_inert(s: str) -> None:
    nid = node_id("comp", s)
    assert re.fullmatch(r"[A-Za-z0-9_./\-]+", nid)
    assert node_id("comp", s) != node_id("comp", s + "x")


@pytest.mark.parametrize("s", HOSTILE.values(), ids=list(HOSTILE))
def test_dot_keeps_its_structure(s: str) -> None:
    source = _graph(s).source
    # Two node statements, one edge, nothing else at statement level.
    statements = [ln for ln in source.splitlines()[1:-1] if not ln.startswith("\tlabel=")]
    assert len(statements) == 3, source
    assert "pwned" not in "".join(re.findall(r"^\t[^\"]*", source, re.M))
    assert "<b>" not in re.sub(r'"(?:[^"\\]|\\.)*"', "", source)  # HTML only ever inside quotes


@pytest.mark.parametrize("renderer", ["dot", "graphviz-pure"])
@pytest.mark.parametrize("s", HOSTILE.values(), ids=list(HOSTILE))
def test_svg_is_well_formed_and_literal(s: str, renderer: str) -> None:
    if renderer not in available_renderers():
        pytest.skip(f"{renderer} is not installed")
    svg = render_dot(_graph(s), "svg", renderer=renderer).data.decode("utf-8")
    root = ET.fromstring(svg)  # well-formed: no markup got in
    assert not [e for e in root.iter() if e.tag in (f"{SVG_NS}script", "script")]
    assert len([g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "node"]) == 2
    assert len([g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "edge"]) == 1
    texts = "".join(t.text or "" for t in root.iter(f"{SVG_NS}text"))
    assert "second line" in texts
    visible = line(s, 200).replace(" ", "")
    assert visible in texts.replace(" ", "").replace("\xa0", "")


def test_hostile_op_name_in_real_hlo() -> None:
    # Given the mlp fixture with the transfer's op_name replaced by a hostile string
    # (written with HLO's own string escapes),
    from hloscope.analysis.report import analyze_module
    from hloscope.hlo.parser import parse_hlo
    from hloscope.render.dot.draw import build_view
    from hloscope.targets import get_target

    text = fixture_text("mlp_offload.hlo.txt")
    old = 'op_name="jit(step)/transpose(jvp())/while/body/jit(dynamic_index_in_dim)/dynamic_slice" ' \
          'scheduling_name="dynamic-slice-start.1"'
    assert old in text
    evil = 'op_name="x\\"]; evil -> pwned; <b>\\\\N</b>\\n{}" scheduling_name="dynamic-slice-start.1"'
    module = parse_hlo(text.replace(old, evil), "evil.hlo.txt")
    report = analyze_module(module, get_target("h100-sxm"))
    # When the transfer is looked up by that op_name and drawn,
    op_name = report.verdict_for("dynamic-slice-start.1").transfer.instruction.metadata["op_name"]  # type: ignore[union-attr]
    source = build_view(report, "transfer", op_name).graph.source
    # Then the DOT holds the text only inside a quoted label.
    assert "pwned" not in "".join(re.findall(r"^\t[^\"]*", source, re.M))
    for r in available_renderers():
        ET.fromstring(render_dot(source, "svg", renderer=r).data)


def test_hostile_names_in_the_possible_window_stay_data(monkeypatch: pytest.MonkeyPatch) -> None:
    # The possible window's note names computations and instructions: given a slack whose segment
    # computation is a hostile string,
    import dataclasses

    from hloscope.analysis.kinds import SegmentKind
    from hloscope.analysis.report import Report
    from hloscope.analysis.simulate.verdict import WindowSegment
    from hloscope.render.dot.draw import build_view, find_transfer
    from tests.conftest import fixture_report

    report = fixture_report("mlp_offload.hlo.txt")
    v = find_transfer(report, "dynamic-slice-start.1")
    real = report.slack_for(v)
    assert real is not None
    evil = '"]; evil -> pwned; <b>\\N</b>\n{'
    hostile = dataclasses.replace(real, segments=(WindowSegment(evil, 0, 1, SegmentKind.BETWEEN),))
    monkeypatch.setattr(Report, "slack_for", lambda self, w: hostile if w is v else None)
    # when the transfer is drawn, the DOT holds it only inside a quoted label, literally,
    source = build_view(report, "transfer", "dynamic-slice-start.1").graph.source
    assert "pwned" not in "".join(re.findall(r"^\t[^\"]*", source, re.M))
    assert "<b>" not in re.sub(r'"(?:[^"\\]|\\.)*"', "", source)
    assert "possible-window" in source
    # and every renderer makes well-formed SVG of it.
    for r in available_renderers():
        ET.fromstring(render_dot(source, "svg", renderer=r).data)
