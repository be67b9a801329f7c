"""Check results as GitHub Actions workflow commands, followed by the text report for the log."""

from __future__ import annotations

from typing import TextIO

from hloscope.check.run import CheckResult
from hloscope.render.check.text import TextFormat
from hloscope.render.check.words import user_source, violation_lines


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


class GithubFormat:
    """GitHub Actions workflow commands: one ``::error`` per violation, at the user's source line."""

    name = "github"
    extension = ".txt"

    def render(self, result: CheckResult, out: TextIO) -> None:
        for v in result.violations:
            props = [f"title={_gh_escape('hloscope ' + v.rule, True)}"]
            # a step-wide rule is annotated at its largest contributor (its message names it first)
            rec = v.record if v.record is not None else (v.worst[0] if v.worst else None)
            src = user_source(rec.full_source) if rec is not None else ""
            if src:
                file, _, line = src.rpartition(":")
                props = [f"file={_gh_escape(file, True)}", f"line={line}", *props]
            out.write(f"::error {','.join(props)}::{_gh_escape(chr(10).join(violation_lines(v)))}\n")
        for v, entry in result.allowed:
            out.write(f"::notice title=hloscope allowed::{_gh_escape(violation_lines(v)[0] + ' -- ' + entry.reason)}\n")
        TextFormat().render(result, out)  # the log keeps the full report
