"""Check results as text for people (``hloscope check``'s default format)."""

from __future__ import annotations

from typing import TextIO

from hloscope.check.run import DEFAULT_WAIT_FRACTION, CheckResult
from hloscope.render.check.meaning import rule_meaning
from hloscope.render.check.words import default_gate_words, diff_lines, empty_words, reading_words, violation_lines


class TextFormat:
    name = "text"
    extension = ".txt"

    def render(self, result: CheckResult, out: TextIO) -> None:
        rep = result.subject.report
        state = "passed" if result.passed else f"FAILED ({len(result.violations)} violation(s))"
        out.write(f"hloscope check: {result.subject.label}, target {rep.target.name}: {state}\n")
        if result.default_gate:
            out.write(f"{default_gate_words(DEFAULT_WAIT_FRACTION)}\n")
        if result.empty:
            out.write(f"note: nothing to check, passing because of allow-empty: {empty_words(result.empty)}\n")
        by_rule = {name: [v for v in result.violations if v.rule == name] for name in [*result.rules, "baseline"]}
        for name, value in result.rules.items():
            shown = "" if value is True else f" = {value}"
            got = reading_words(name, result.readings.get(name))
            shown += f" (this step: {got})" if got else ""
            out.write(f"{'FAIL' if by_rule[name] else 'pass'} {name}{shown}: {rule_meaning(name)}\n")
            for v in by_rule[name]:
                first, *rest = violation_lines(v, rep)
                out.write(f"  - {first}\n")
                out.writelines(f"      {line}\n" for line in rest)
        for v, entry in result.allowed:
            out.write(f"allowed {v.rule}: {violation_lines(v)[0]} -- {entry.reason}\n")
        if result.diff is not None:
            out.write(("FAIL " if by_rule["baseline"] else "pass ") + "\n  ".join(diff_lines(result.diff)) + "\n")
        out.write("all us figures are roofline estimates (docs/cost-model.md)\n")
