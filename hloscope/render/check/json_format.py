"""Check results as JSON (schema ``hloscope.check/1``, docs/json-schema.md)."""

from __future__ import annotations

import json
from typing import Any, TextIO

from hloscope.analysis.report import Report
from hloscope.check.rules import Reading, Violation
from hloscope.check.run import CheckResult
from hloscope.render.check.words import change_text, empty_words, violation_lines, violation_message

CHECK_SCHEMA = "hloscope.check/1"


def _violation_dict(v: Violation, report: Report | None = None) -> dict[str, Any]:
    rec = v.record
    d: dict[str, Any] = {"rule": v.rule, "finding": str(v.finding), "message": violation_message(v),
                         "lines": violation_lines(v, report), "actual": v.actual, "limit": v.limit}
    if rec is not None:
        d.update(instruction=rec.instruction, source=rec.full_source, verdict=str(rec.verdict),
                 key={"name": rec.key.name, "source": rec.key.source, "direction": rec.key.direction,
                      "occurrence": rec.key.occurrence}, name_guessed=rec.name_guessed,
                 exposed_us_per_step=round(rec.exposed_us_per_step, 3))
    return d


def _reading_dict(m: Reading) -> dict[str, Any]:
    """What a rule read on the step: ``value`` (the rule's unit), and ``of``, ``limit``, ``instruction`` where known."""
    d: dict[str, Any] = {"value": round(m.value, 6) if m.value is not None else None}
    if m.of is not None:
        d["of"] = m.of
    if m.limit is not None:
        d["limit"] = m.limit
    if m.record is not None:
        d["instruction"] = m.record.instruction
    return d


class JsonFormat:
    name = "json"
    extension = ".json"

    def render(self, result: CheckResult, out: TextIO) -> None:
        data: dict[str, Any] = {
            "schema": CHECK_SCHEMA,
            "subject": result.subject.label,
            "target": result.subject.report.target.name,
            "passed": result.passed,
            "empty": empty_words(result.empty),
            "rules": result.rules,
            "default_gate": result.default_gate,
            "readings": {name: _reading_dict(m) for name, m in result.readings.items()},
            "violations": [_violation_dict(v, result.subject.report) for v in result.violations],
            "allowed": [{**_violation_dict(v), "reason": e.reason, "entry": e.describe()} for v, e in result.allowed],
        }
        if result.diff is not None:
            data["baseline"] = {"path": result.diff.base.label, "matched": len(result.diff.pairs),
                                "changes": [{"kind": str(c.kind), "regression": c.regression, "text": change_text(c)}
                                            for c in result.diff.changes]}
        json.dump(data, out, indent=2)
        out.write("\n")
