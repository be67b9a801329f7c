"""The notebook view of a report (``render/html.py``, ``StepReport._repr_html_``) on real steps.

Facts read in ``fixtures/llama_offload.hlo.txt`` (the table report says the same): 9 host
transfers, 1 exposed (``dynamic-slice-start.2.0``: nothing scheduled between its start and
done), 2 partial, 6 hidden; its FileNames table holds ``"<string>"`` (file 3), a string
from the module that must come out escaped.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hloscope.api import analyze
from hloscope.hlo.parser import parse_hlo
from hloscope.render import RENDERERS, render_to_string
from hloscope.render.html import VERDICT_COLOURS
from tests.conftest import FIXTURES, fixture_text

SVG = "{http://www.w3.org/2000/svg}"


def _rows(html: str) -> list[str]:
    return re.findall(r'<tr data-verdict="([a-z]+)">', html)


def test_table_rows_and_colours_are_the_reports() -> None:
    report = analyze(str(FIXTURES / "llama_offload.hlo.txt"))
    html = report._repr_html_()
    assert "html" in RENDERERS and html == render_to_string("html", report)
    assert sorted(_rows(html)) == sorted(str(v.verdict) for v in report.verdicts)
    assert _rows(html).count("exposed") == 1 and _rows(html).count("partial") == 2 and _rows(html).count("hidden") == 6
    exposed_row = next(r for r in html.split("<tr ") if r.startswith('data-verdict="exposed"'))
    exposed = next(v for v in report.verdicts if v.transfer.instruction.name == "dynamic-slice-start.2.0")
    assert "dynamic-slice-start.2.0" in exposed_row and VERDICT_COLOURS[exposed.verdict][0] in exposed_row
    assert "<script" not in html.lower() and "javascript:" not in html.lower()


def test_timeline_is_well_formed_svg_with_the_transfers_coloured() -> None:
    report = analyze(str(FIXTURES / "llama_offload.hlo.txt"))
    html = report._repr_html_()
    [svg] = re.findall(r"<svg .*?</svg>", html, re.S)
    root = ET.fromstring(svg)
    lanes = [t.text for t in root.iter(f"{SVG}text")][:-2]
    assert report.timeline is not None
    assert lanes == [str(r) for r in report.timeline.slices if report.timeline.slices[r]]
    transfer_fills = {r.get("fill") for r in root.iter(f"{SVG}rect") if r.get("data-kind") == "transfer"}
    assert transfer_fills == {VERDICT_COLOURS[v.verdict][0] for v in report.verdicts}


def test_every_module_string_is_escaped() -> None:
    # Given the real llama module with its user source file renamed to markup
    text = fixture_text("llama_offload.hlo.txt")
    evil = "/tmp/<img src=x onerror=alert(1)>&amp;.py"
    text = text.replace('"/work/main/hloscope/compile/workloads/llama.py"', f'"{evil}"')
    report = analyze(parse_hlo(text, "evil.hlo.txt"))
    html = report._repr_html_()
    # Then the markup appears only as text (the V projection's line, the source of its transfers)
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;&amp;amp;.py:71" in html
    # the module's own "<string>" file name likewise, wherever it shows
    assert "<string>" not in html
    md = report._repr_markdown_()
    assert "<img" not in md


def test_markdown_summary_names_the_exposed_transfer() -> None:
    report = analyze(str(FIXTURES / "llama_offload.hlo.txt"))
    md = report._repr_markdown_()
    assert "exposed 1" in md and "partial 2" in md and "hidden 6" in md
    assert "**EXPOSED** dynamic-slice-start.2.0:" in md


NOTEBOOK_CELLS = [
    "import hloscope",
    "report = hloscope.analyze({path!r})\nreport",
]


def test_a_real_kernel_displays_the_table_and_timeline(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat", reason="the notebook extra: pip install 'hloscope[notebook]'")
    nbclient = pytest.importorskip("nbclient", reason="the notebook extra")
    pytest.importorskip("ipykernel", reason="the notebook extra")
    # Given a notebook whose last cell shows a report, as a user types it
    nb = nbformat.v4.new_notebook()
    path = str(FIXTURES / "llama_offload.hlo.txt")
    nb.cells = [nbformat.v4.new_code_cell(c.format(path=path)) for c in NOTEBOOK_CELLS]
    # When a real IPython kernel executes it
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}},
                            ).execute()
    # Then the cell's display data is the HTML view, with the table and the SVG timeline
    [out] = nb.cells[1].outputs
    assert out["output_type"] == "execute_result"
    html = out["data"]["text/html"]
    assert sorted(_rows(html)) == ["exposed", "hidden", "hidden", "hidden", "hidden", "hidden", "hidden", "partial",
                                   "partial"]
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="hloscope-timeline"' in html
    assert out["data"]["text/markdown"].startswith("**hloscope report**")
    assert "text/plain" in out["data"]
    (tmp_path / "executed.ipynb").write_text(nbformat.writes(nb))
