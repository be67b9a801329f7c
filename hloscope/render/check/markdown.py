"""Check results as GitHub-flavoured Markdown, for a CI job summary.

``hloscope check --format markdown >> "$GITHUB_STEP_SUMMARY"`` shows, on the run's
page: the verdict, one row per rule, the violations table (which tensor, its
source line, what the schedule did with it, in the words of ``words``),
the transfers whose windows leave time exposed, what the allow-list accepted and
the baseline's changes.

Every string that comes from the module, a manifest, a file name or a config
(names, ``op_name``s, paths, reasons) and every sentence built from them goes
through :func:`md`: the punctuation GitHub's Markdown acts on inline is
backslash-escaped (``\\ ` * _ [ ] ( ) | ~ ! # @ $``, and the ``:`` of ``://`` and
the ``.`` of ``www.`` that start autolinks) and ``& < >`` become entities, so a name can
never end a table cell, open a code span, make a link, an image, an emphasis, a
mention, math or HTML; control characters become spaces. Other punctuation (``- / . :``
in ``hloscope-out/step/llama.py:67``) stays as it is, readable in the raw text.
"""

from __future__ import annotations

import re
from typing import TextIO

from hloscope.analysis.kinds import Direction, VerdictKind
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.check.rules import Violation
from hloscope.check.run import DEFAULT_WAIT_FRACTION, CheckResult
from hloscope.render.check.meaning import rule_meaning
from hloscope.render.check.words import (
    change_text,
    default_gate_words,
    empty_words,
    reading_words,
    user_source,
    violation_lines,
)
from hloscope.render.name_words import GUESS_MARK, legend, name_cell
from hloscope.render.verdict_words import explain
from hloscope.units import human_bytes

_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_ESCAPED = frozenset("\\`*_[]()|~!#@$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")

#: Verdicts listed under "exposed windows", worst first.
_NOT_HIDDEN = (VerdictKind.SYNC, VerdictKind.EXPOSED, VerdictKind.PARTIAL)


def md(text: object) -> str:
    """``text`` as inert Markdown inline text (safe in a table cell)."""
    s = _CONTROL.sub(" ", str(text))
    out = []
    for i, c in enumerate(s):
        if c in _ENTITIES:
            out.append(_ENTITIES[c])
        elif c in _ESCAPED or (c == ":" and s.startswith("//", i + 1)) or (c == "." and s[:i].lower().endswith("www")):
            out.append(f"\\{c}")
        else:
            out.append(c)
    return "".join(out)


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """The table's lines and the blank line that ends it."""
    return [_row(headers), _row(["---"] * len(headers)), *(_row(r) for r in rows), ""]


def _us(x: float) -> str:
    return f"{x:.1f}" if x == 0 or abs(x) >= 0.1 else f"{x:.3f}"


def _violation_row(v: Violation) -> list[str]:
    first, *rest = violation_lines(v)
    rec = v.record
    # The why is in the exposed windows table; here what broke, the tensor and what overlapped it.
    what = md(first) + "".join(f"<br>{md(line)}" for line in rest if not line.startswith("why: "))
    if rec is None:
        return [f"`{v.rule}`", "step", "", "", what]
    name = (rec.checkpoint + (GUESS_MARK if rec.name_guessed else "")) if rec.checkpoint else (rec.key.name or "")
    return [f"`{v.rule}`", md(rec.instruction) + (f"<br>{md(name)}" if name else ""), md(user_source(rec.full_source)),
            md(str(rec.verdict).upper()), what]


def _window_row(v: Verdict) -> list[str]:
    t = v.transfer
    arrow = "D->H" if t.direction is Direction.TO_HOST else "H->D"
    loc = t.source
    window = ", ".join(x for x in (f"{len(v.compute)} compute" if v.compute else "",
                                   f"{len(v.collectives)} collective(s)" if v.collectives else "") if x) \
        or ("empty" if v.window_size == 0 else f"{v.window_size} free op(s)")
    return [md(t.instruction.name), md(name_cell(t, "")), md(f"{loc.file.rsplit('/', 1)[-1]}:{loc.line}")
            if loc else "", md(arrow), md(human_bytes(t.bytes)), str(t.executions), md(window),
            _us(v.est_transfer_us), _us(v.est_exposed_us), f"**{v.verdict.value.upper()}**", md(explain(v))]


class MarkdownFormat:
    """GitHub-flavoured Markdown: headline, rules, violations, exposed windows, allowed, baseline."""

    name = "markdown"
    extension = ".md"

    def render(self, result: CheckResult, out: TextIO) -> None:
        out.write("\n".join(self.lines(result)) + "\n")

    def lines(self, result: CheckResult) -> list[str]:
        rep = result.subject.report
        state = "passed" if result.passed else f"FAILED ({len(result.violations)} violation(s))"
        lines = [f"### hloscope check: {state}", "",
                 f"{md(result.subject.label)}, target {md(rep.target.name)}", ""]
        if result.empty:
            lines += [f"Nothing to check, passing because of allow-empty: {md(empty_words(result.empty))}", ""]
        if result.default_gate:
            lines += [md(default_gate_words(DEFAULT_WAIT_FRACTION)), ""]
        by_rule = {name: [v for v in result.violations if v.rule == name] for name in [*result.rules, "baseline"]}
        rows = []
        for name, value in result.rules.items():
            state_cell = f"**FAIL** ({len(by_rule[name])})" if by_rule[name] else "pass"
            setting = "" if value is True else md(value)
            rows.append([f"`{name}`", state_cell, setting, md(reading_words(name, result.readings.get(name))),
                         md(rule_meaning(name))])
        if result.diff is not None:
            d = result.diff
            rows.append(["`baseline`", f"**FAIL** ({len(by_rule['baseline'])})" if by_rule["baseline"] else "pass",
                         md(d.base.label), md(f"exposed {d.base.exposed_us_per_step:.1f} -> "
                                              f"{d.new.exposed_us_per_step:.1f} us/step"),
                         "no regression against the baseline"])
        lines += _table(["rule", "result", "setting", "this step", "fails when"], rows)
        if result.violations:
            lines += ["#### Violations", ""]
            lines += _table(["rule", "transfer", "source", "verdict", "what happened"],
                            [_violation_row(v) for v in result.violations])
        windows = sorted((v for v in rep.verdicts if v.verdict in _NOT_HIDDEN),
                         key=lambda v: (_NOT_HIDDEN.index(v.verdict), -v.est_exposed_us * v.transfer.executions))
        if windows:
            lines += ["#### Exposed windows", "",
                      "Transfers whose window does not hide them (times per execution, roofline estimates):", ""]
            lines += _table(["transfer", "name", "source", "dir", "bytes", "x/step", "window", "~xfer us",
                             "~exposed us", "verdict", "why"], [_window_row(v) for v in windows])
            for note in legend(v.transfer for v in windows):
                lines += [md(note), ""]
        if result.allowed:
            lines += ["#### Allowed", ""]
            lines += _table(["rule", "transfer", "reason"],
                            [[f"`{v.rule}`", md(violation_lines(v)[0]), md(entry.reason)]
                             for v, entry in result.allowed])
        if result.diff is not None:
            d = result.diff
            lines += ["#### Baseline", "",
                      md(f"{d.base.label}: {len(d.pairs)} transfer(s) matched, {len(d.regressions)} regression(s); "
                         f"exposed {d.base.exposed_us_per_step:.1f} -> {d.new.exposed_us_per_step:.1f} us/step"), ""]
            lines += [f"- {'**REGRESSION** ' if c.regression else ''}{md(change_text(c))}" for c in d.changes]
            if d.changes:
                lines.append("")
        lines.append("_All us figures are roofline estimates (docs/cost-model.md), not measurements._")
        return lines
