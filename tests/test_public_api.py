"""docs/api.md lists the public API (issue 35): every exported name, and nothing that is not one.

Exported: ``hloscope.__all__``, ``hloscope.api.__all__`` and the public members of ``StepReport``
(its dataclass fields, methods and properties). The page names each in backticks in the first
column of its tables (a call as ``name(...)``).
"""

from __future__ import annotations

import re
from pathlib import Path

import hloscope
import hloscope.api as api

PAGE = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text()


def _section(title: str) -> str:
    start = PAGE.index(f"## {title}\n")
    end = PAGE.find("\n## ", start + 1)
    return PAGE[start:end if end >= 0 else None]


def _first_column(text: str) -> set[str]:
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| name") and not line.startswith("| ---"):
            cell = line.split("|")[1]
            names |= {re.split(r"[(]", n)[0].replace("print", "").strip() for n in re.findall(r"`([^`]+)`", cell)}
    return {n for n in names if n}


def test_every_top_level_name_is_on_the_page_and_nothing_else() -> None:
    assert _first_column(_section("`hloscope`")) == set(hloscope.__all__)


def test_every_api_name_is_on_the_page_and_nothing_else() -> None:
    assert _first_column(_section("`hloscope.api`")) == set(api.__all__)


def test_every_public_member_of_the_report_is_on_the_page() -> None:
    section = _section("`StepReport`")
    documented = _first_column(section) | set(re.findall(r"`(\w+)`", section.split("\n\n")[1]))
    members = {m for m in dir(api.StepReport) if not m.startswith("_")} | {"_repr_html_", "_repr_markdown_"}
    assert members <= documented, sorted(members - documented)
    assert {m for m in _first_column(section) if m.isidentifier()} <= members
