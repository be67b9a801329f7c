"""Check results as a SARIF 2.1.0 log, for code-scanning services (GitHub, GitLab, Azure DevOps, VS Code).

One run, one result per violation. ``tool.driver.rules`` is the rule table
(``check.rules.RULES``) plus ``baseline``; a result's ``ruleIndex`` points into it.
A result's location is the user's source line of the moved tensor when the
report knows it (relative to the working folder, under ``uriBaseId``
``SRCROOT``, when it lies there; an absolute ``file://`` URI otherwise), else the
transfer instruction's line in the HLO file that was checked; its
``logicalLocations`` name the instruction in its computation. Every result has a
location (code scanning drops one without): a step-wide violation (``max-exposed-us``,
``max-exposed-fraction``, ``min-hidden-fraction``) is located at the transfer that
contributes most (the first its message names); an unaccounted request at its
source line; any other at the HLO file checked, else at the user line of the step's
largest transfer, else at the line of the step's offload request. Violations an allow
entry covers are results with an external ``suppressions`` entry holding its
reason, so code scanning shows them as dismissed, not gone.

``partialFingerprints['hloscopeTransfer/v1']`` is the baseline's transfer key
(name, source, direction, occurrence: ``check.keys``), stable across compiles that
renumber instructions, so an alert keeps its identity from one run to the next.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

from hloscope import __version__
from hloscope.analysis.intent.outcome import Accounted, account_of
from hloscope.analysis.report import Report
from hloscope.check.allow import AllowEntry
from hloscope.check.rules import RULES, Finding, Violation
from hloscope.check.run import CheckResult
from hloscope.render.check.meaning import rule_meaning
from hloscope.render.check.words import violation_lines

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
_BASELINE_MEANING = "no regression against the baseline (a transfer newly exposed, slower or gone)"


def _rule_descriptors() -> list[dict[str, Any]]:
    rules = [(r.name, rule_meaning(r.name)) for r in RULES.values()] + [("baseline", _BASELINE_MEANING)]
    return [{"id": name, "name": "".join(p.capitalize() for p in name.split("-")),
             "shortDescription": {"text": meaning},
             "help": {"text": f"hloscope check --{name}: passes when {meaning} (docs/ci.md)"},
             "defaultConfiguration": {"level": "error"}} for name, meaning in rules]


def _artifact(path: str) -> dict[str, Any]:
    """``path`` relative to the working folder under SRCROOT when it lies there, else an absolute file URI."""
    p = Path(path)
    absolute = p if p.is_absolute() else Path.cwd() / p
    try:
        rel = os.path.relpath(absolute)
    except ValueError:
        rel = ".."
    if not rel.startswith(".."):
        return {"uri": Path(rel).as_posix(), "uriBaseId": "SRCROOT"}
    return {"uri": absolute.as_uri()}


def _folder_uri(folder: Path) -> str:
    """A folder's absolute URI, ending in ``/`` as SARIF wants of a base (``file:///`` for the root)."""
    uri = folder.as_uri()
    return uri if uri.endswith("/") else uri + "/"


def _at_line(source: str) -> dict[str, Any] | None:
    """The physical location of ``file:line`` (None when it is not one)."""
    file, _, line = source.rpartition(":")
    if file and line.isdigit() and int(line) > 0:
        return {"artifactLocation": _artifact(file), "region": {"startLine": int(line)}}
    return None


def _step_line(report: Report) -> dict[str, Any] | None:
    """Where a step-wide finding with no transfer of its own is shown, with no HLO file to point at:
    the user line of the step's largest transfer, else the line of its first offload request."""
    for v in sorted(report.verdicts, key=lambda v: -v.transfer.bytes * v.transfer.executions):
        loc = report.source(v)
        if loc is not None and (at := _at_line(f"{loc.file}:{loc.line}")) is not None:
            return at
    account = account_of(report)
    for a in account.items if account is not None else ():
        if a.asked.where is not None and (at := _at_line(f"{a.asked.where.file}:{a.asked.where.line}")) is not None:
            return at
    return None


def _location(v: Violation, hlo_file: str | None, report: Report) -> dict[str, Any] | None:
    # a step-wide rule's largest contributor stands for it (its message names it first)
    rec = v.record if v.record is not None else (v.worst[0] if v.worst else None)
    loc: dict[str, Any] = {}
    phys = _at_line(rec.full_source) if rec is not None and rec.full_source else None
    asked = v.arg("accounted") if v.finding in (Finding.INTENT_UNACCOUNTED, Finding.PRESET_NOT_TAGGED) else None
    where = asked.asked.where if isinstance(asked, Accounted) else None
    if phys is None and where is not None:
        phys = _at_line(f"{where.file}:{where.line}")
    if phys is None and hlo_file is not None:
        phys = {"artifactLocation": _artifact(hlo_file)}
        if rec is not None and rec.line > 0:
            phys["region"] = {"startLine": rec.line}
    if phys is None:
        phys = _step_line(report)
    if phys is not None:
        loc["physicalLocation"] = phys
    if rec is not None and rec.instruction:
        loc["logicalLocations"] = [{"name": rec.instruction, "kind": "instruction",
                                    "fullyQualifiedName": f"{rec.computation}/{rec.instruction}"}]
    return loc or None


def _result(v: Violation, index: dict[str, int], hlo_file: str | None, result: CheckResult,
            allowed: AllowEntry | None = None) -> dict[str, Any]:
    lines = violation_lines(v, result.subject.report)
    out: dict[str, Any] = {"ruleId": v.rule, "ruleIndex": index[v.rule], "level": "error",
                           "message": {"text": "\n".join(lines)}}
    loc = _location(v, hlo_file, result.subject.report)
    if loc is not None:
        out["locations"] = [loc]
    rec = v.record
    if rec is not None:
        k = rec.key
        key = f"{v.rule}|{k.direction}|{k.name}|{k.source}|{k.occurrence}"
        out["partialFingerprints"] = {"hloscopeTransfer/v1": key}
    props: dict[str, Any] = {}
    if v.actual is not None:
        props["actual"] = v.actual
    if v.limit is not None:
        props["limit"] = v.limit
    if rec is not None:
        props.update(verdict=str(rec.verdict), bytes=rec.bytes, executions=rec.executions,
                     exposedUsPerStep=round(rec.exposed_us_per_step, 3))
    if props:
        out["properties"] = props
    if allowed is not None:
        out["suppressions"] = [{"kind": "external", "justification": allowed.reason or allowed.describe()}]
    return out


def _hlo_file(result: CheckResult) -> str | None:
    """The HLO file checked, when the subject is one file (a folder's module has no single line to point at)."""
    label = result.subject.report.inputs.label
    return label if label and label != "-" and Path(label).is_file() else None


def sarif_log(result: CheckResult) -> dict[str, Any]:
    """The SARIF 2.1.0 log of ``result`` as a JSON-ready dict."""
    rules = _rule_descriptors()
    index = {r["id"]: i for i, r in enumerate(rules)}
    hlo = _hlo_file(result)
    results = [_result(v, index, hlo, result) for v in result.violations]
    results += [_result(v, index, hlo, result, entry) for v, entry in result.allowed]
    rep = result.subject.report
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "hloscope", "version": __version__, "rules": rules}},
        "originalUriBaseIds": {"SRCROOT": {"uri": _folder_uri(Path.cwd())}},
        "results": results,
        "invocations": [{"executionSuccessful": True}],
        "properties": {"subject": result.subject.label, "target": rep.target.name,
                       "platform": str(rep.platform), "passed": result.passed,
                       "rules": {k: v if isinstance(v, (bool, int, float, str, list)) else str(v)
                                 for k, v in result.rules.items()}},
    }
    return {"$schema": SARIF_SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}


class SarifFormat:
    """SARIF 2.1.0: one result per violation at the user's source line (else the HLO line)."""

    name = "sarif"
    extension = ".sarif"

    def render(self, result: CheckResult, out: TextIO) -> None:
        json.dump(sarif_log(result), out, indent=2)
        out.write("\n")
