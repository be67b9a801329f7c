"""Rendering with each available renderer, and the ``hloscope dot`` command."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.errors import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EXIT_UNKNOWN_NAME
from hloscope.render.dot.draw import build_view, render_dot, render_view
from hloscope.render.dot.quote import node_id
from hloscope.render.dot.run import RENDERER_NAMES, available_renderers
from tests.conftest import FIXTURES, fixture_report

SVG = "{http://www.w3.org/2000/svg}"


def test_graphviz_pure_is_always_there() -> None:
    # It is a dependency, so at least one renderer is always exercised.
    assert "graphviz-pure" in available_renderers()


@pytest.mark.parametrize("renderer", RENDERER_NAMES)
def test_svg_has_the_nodes_and_edges(renderer: str) -> None:
    if renderer not in available_renderers():
        pytest.skip(f"{renderer} is not installed")
    diagram = build_view(fixture_report("mlp_offload.hlo.txt"), "transfer", "dynamic-slice-start.1", radius=0)
    source = diagram.graph.source
    want_nodes = set(re.findall(r'^\t+"?([^"\s]+)"? \[', source, re.M)) - {"node", "edge", "graph"}  # the legend is unquoted
    want_edges = {(a, b) for a, b, attrs in re.findall(r'^\t+"([^"]+)" -> "([^"]+)"(.*)$', source, re.M)
                  if "style=invis" not in attrs}
    rendered = render_dot(diagram.graph, "svg", renderer=renderer)
    assert rendered.renderer == renderer
    root = ET.fromstring(rendered.data)
    titles = {g.get("class"): set() for g in root.iter(f"{SVG}g")}
    for g in root.iter(f"{SVG}g"):
        t = g.find(f"{SVG}title")
        if t is not None and g.get("class") in ("node", "edge"):
            titles[g.get("class")].add(t.text or "")
    assert titles["node"] == want_nodes
    # Every visible edge of the DOT is in the SVG (invisible ones are not drawn).
    assert {tuple(t.split("->")) for t in titles["edge"]} == want_edges
    assert node_id("region_3.4_spmd", "dynamic-slice-done.1") in titles["node"]


@pytest.mark.parametrize("renderer", RENDERER_NAMES)
def test_png(renderer: str, tmp_path: Path) -> None:
    if renderer not in available_renderers():
        pytest.skip(f"{renderer} is not installed")
    out = tmp_path / "calls.png"
    result = render_view(fixture_report("llama_offload.hlo.txt"), "calls", out, renderer=renderer)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and result.renderer == renderer


def test_cli_writes_the_format_of_the_extension(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.svg"
    rc = main(["dot", str(FIXTURES / "mlp_offload.hlo.txt"), "--transfer", "dynamic-slice-start.1", "-o", str(out)])
    assert rc == 0
    ET.fromstring(out.read_bytes())
    err = capsys.readouterr().err
    assert re.search(r"rendered svg to .* with (dot|graphviz-pure) in", err)
    assert list(tmp_path.iterdir()) == [out]


def test_cli_dot_to_stdout(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["dot", str(FIXTURES / "llama_offload.hlo.txt"), "--calls"]) == 0
    assert capsysbinary.readouterr().out.startswith(b"digraph calls {")


@pytest.mark.parametrize(("argv", "code", "text"), [
    (["--transfer", "nope"], EXIT_UNKNOWN_NAME, "dynamic-slice-start.1"),
    (["--schedule", "nope"], EXIT_UNKNOWN_NAME, "region_3.4_spmd"),
    (["--calls", "--format", "pdf"], EXIT_UNKNOWN_NAME, "dot, svg, png"),
    (["--calls", "-o", "x.pdf"], EXIT_BAD_INPUT, "--format"),
    (["--calls", "--renderer", "neato"], EXIT_UNKNOWN_NAME, "graphviz-pure"),
    (["--calls", "--max-nodes", "0"], EXIT_BAD_INPUT, "--max-nodes"),
    (["--transfer", "x", "--calls"], EXIT_BAD_INPUT, "not allowed"),
])
def test_cli_errors_are_one_line(argv: list[str], code: int, text: str, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["dot", str(FIXTURES / "mlp_offload.hlo.txt"), *argv]) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and text in err
    assert list(tmp_path.iterdir()) == []  # nothing written on failure


def test_render_timeout_is_one_line_exit_7(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A big graph with a tiny timeout: the renderer is killed, nothing is written.
    out = tmp_path / "big.svg"
    rc = main(["dot", str(FIXTURES / "llama_offload.hlo.txt"), "--computation", "region_13.23_spmd",
               "--max-nodes", "1000", "--timeout", "0.01", "-o", str(out)])
    assert rc == EXIT_ENVIRONMENT
    assert "did not finish rendering within 0.01 s" in capsys.readouterr().err
    assert not out.exists()
