"""The check formats, one module each, under one registry.

A check format has a ``name``, a file ``extension`` and one method,
``render(result, out)``, which writes a :class:`~hloscope.check.run.CheckResult`
to the text stream ``out``. :data:`CHECK_FORMATS` maps names to formats:
``text`` (``text``), ``json`` (``json_format``), ``junit`` (``junit``), ``github``
(``github``), ``markdown`` (``markdown``), ``sarif`` (``sarif``, SARIF 2.1.0 for code
scanning), each a module of this package. Every format words a violation the same way,
through ``words``. To add a format, write its
module and add an instance to the tuple below.
"""

from __future__ import annotations

from typing import Protocol, TextIO

from hloscope.check.run import CheckResult
from hloscope.render.check.github import GithubFormat
from hloscope.render.check.json_format import CHECK_SCHEMA, JsonFormat
from hloscope.render.check.junit import JunitFormat
from hloscope.render.check.markdown import MarkdownFormat
from hloscope.render.check.sarif import SarifFormat
from hloscope.render.check.text import TextFormat
from hloscope.render.check.words import change_text, diff_lines, tensor_text, user_source, violation_lines
from hloscope.render.registry import pick


class CheckFormat(Protocol):
    name: str
    extension: str

    def render(self, result: CheckResult, out: TextIO) -> None: ...


CHECK_FORMATS: dict[str, CheckFormat] = {f.name: f for f in (TextFormat(), JsonFormat(), JunitFormat(), GithubFormat(),
                                                             MarkdownFormat(), SarifFormat())}


def get_check_format(name: str) -> CheckFormat:
    """The check format called ``name``; an unknown name is an unknown-name error (exit 3)."""
    return pick(name, CHECK_FORMATS)


__all__ = ["CHECK_FORMATS", "CHECK_SCHEMA", "CheckFormat", "GithubFormat", "JsonFormat", "JunitFormat", "TextFormat",
           "change_text", "diff_lines", "get_check_format", "tensor_text", "user_source", "violation_lines"]
