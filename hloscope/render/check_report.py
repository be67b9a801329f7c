"""Check results for people and for CI: text, JSON, GitHub annotations (JUnit in ``check_junit``).

A check format has a ``name`` and one method, ``render(result, out)``; the
registry :data:`CHECK_FORMATS` maps names to formats. Every format words a
violation the same way (:func:`violation_lines`): which tensor, which source
line, what the schedule put beside it and how much stays exposed, from the
verdict's facts through ``render.why`` — nobody has to open the HLO.
"""

from __future__ import annotations

import json
import os
from typing import Any, Protocol, TextIO

from hloscope.analysis.verdict import Verdict
from hloscope.check.baseline import BaselineDiff, Change
from hloscope.check.keys import TransferRecord
from hloscope.check.rules import RULES, Violation
from hloscope.check.run import CheckResult
from hloscope.render.why import explain
from hloscope.units import human_bytes

CHECK_SCHEMA = "hloscope.check/1"


class CheckFormat(Protocol):
    name: str

    def render(self, result: CheckResult, out: TextIO) -> None: ...




def _dims(leaf: Any) -> str:
    return f"{leaf.element_type}[{','.join(str(d) for d in leaf.dims)}]"


def tensor_text(v: Verdict) -> str:
    """``bf16[1,1,256,8,64] slice of host buffer bf16[2,1,256,8,64]`` from the transfer's shapes."""
    t = v.transfer
    leaves = [leaf for leaf in t.instruction.shape.leaves() if leaf.dims]
    host = next((leaf for leaf in leaves if leaf.memory_space == t.host_space), None)
    moved = next((leaf for leaf in leaves if leaf.memory_space != t.host_space and leaf.byte_size == t.bytes), None)
    parts = [_dims(moved)] if moved is not None else []
    if host is not None and (moved is None or host.byte_size != moved.byte_size):
        parts.append(f"{'slice of ' if moved is not None else ''}host buffer {_dims(host)}")
    return " ".join(parts)


def user_source(full: str) -> str:
    """The source path relative to the working folder when it lies under it (CI annotations want that)."""
    if not full:
        return ""
    file, _, line = full.rpartition(":")
    try:
        rel = os.path.relpath(file)
    except ValueError:
        return full
    return f"{rel}:{line}" if not rel.startswith("..") else full


def _record_head(r: TransferRecord) -> str:
    name = f"'{r.checkpoint}'" if r.checkpoint else (f"op {r.key.name}" if r.key.name else "")
    where = f" at {user_source(r.full_source)}" if r.full_source else ""
    detail = f"{r.key.direction} {r.op}, {human_bytes(r.bytes)} x{r.executions}/step"
    return f"{r.instruction} ({detail}{', ' + name if name else ''}){where}"


def _window_text(v: Verdict) -> str:
    ops = [(w.name, w.est_us) for w in (*v.compute, *v.collectives)]
    if not ops:
        return "nothing that does work"
    top = sorted(ops, key=lambda o: -o[1])[:3]
    more = f" and {len(ops) - len(top)} more" if len(ops) > len(top) else ""
    return (f"{len(v.compute)} compute op(s) ~{v.est_compute_us:.1f} us, {len(v.collectives)} collective(s) "
            f"~{v.est_collective_us:.1f} us (largest: {', '.join(f'{n} ~{us:.1f} us' for n, us in top)}{more})")


def violation_lines(v: Violation) -> list[str]:
    """The first line says what broke; the next ones, for a transfer, what the schedule did with it."""
    rec = v.record
    head = f"{_record_head(rec)}: {v.message}" if rec is not None else v.message
    lines = [head]
    verdict = v.verdict
    if verdict is not None and verdict.transfer.instruction.name == (rec.instruction if rec else "") \
            and not verdict.transfer.is_annotation:
        tensor = tensor_text(verdict)
        if tensor:
            lines.append(f"tensor: {tensor}")
        if verdict.pair is not None:
            exposed = verdict.est_exposed_us
            lines.append(f"overlapped by: {_window_text(verdict)}; exposed ~{exposed:.1f} of "
                         f"~{verdict.est_transfer_us:.1f} us per execution")
        lines.append(f"why: {explain(verdict)}")
    return lines


def change_text(c: Change) -> str:
    rec = c.new or c.base
    what = _record_head(rec) if rec is not None else "step"
    arrow = f"{c.before} -> {c.after}" if c.before and c.after else (c.before or c.after)
    return f"{c.kind}: {what}: {arrow}"


def diff_lines(diff: BaselineDiff) -> list[str]:
    lines = [f"baseline {diff.base.label}: {len(diff.pairs)} transfer(s) matched, "
             f"{len(diff.regressions)} regression(s); exposed {diff.base.exposed_us_per_step:.1f} -> "
             f"{diff.new.exposed_us_per_step:.1f} us/step (estimates)"]
    lines += [("  REGRESSION " if c.regression else "  ") + change_text(c) for c in diff.changes]
    return lines


class TextFormat:
    name = "text"

    def render(self, result: CheckResult, out: TextIO) -> None:
        rep = result.subject.report
        state = "passed" if result.passed else f"FAILED ({len(result.violations)} violation(s))"
        out.write(f"hloscope check: {result.subject.label}, target {rep.target.name}: {state}\n")
        if result.empty:
            out.write(f"note: nothing to check, passing because of allow-empty: {result.empty}\n")
        by_rule = {name: [v for v in result.violations if v.rule == name] for name in [*result.rules, "baseline"]}
        for name, value in result.rules.items():
            shown = "" if value is True else f" = {value}"
            out.write(f"{'FAIL' if by_rule[name] else 'pass'} {name}{shown}: {RULES[name].meaning}\n")
            for v in by_rule[name]:
                first, *rest = violation_lines(v)
                out.write(f"  - {first}\n")
                out.writelines(f"      {line}\n" for line in rest)
        for v, entry in result.allowed:
            out.write(f"allowed {v.rule}: {violation_lines(v)[0]} -- {entry.reason}\n")
        if result.diff is not None:
            out.write(("FAIL " if by_rule["baseline"] else "pass ") + "\n  ".join(diff_lines(result.diff)) + "\n")
        out.write("all us figures are roofline estimates (docs/cost-model.md)\n")


def _violation_dict(v: Violation) -> dict[str, Any]:
    rec = v.record
    d: dict[str, Any] = {"rule": v.rule, "message": v.message, "lines": violation_lines(v),
                         "actual": v.actual, "limit": v.limit}
    if rec is not None:
        d.update(instruction=rec.instruction, source=rec.full_source, verdict=str(rec.verdict),
                 key={"name": rec.key.name, "source": rec.key.source, "direction": rec.key.direction,
                      "occurrence": rec.key.occurrence},
                 exposed_us_per_step=round(rec.exposed_us_per_step, 3))
    return d


class JsonFormat:
    name = "json"

    def render(self, result: CheckResult, out: TextIO) -> None:
        data: dict[str, Any] = {
            "schema": CHECK_SCHEMA,
            "subject": result.subject.label,
            "target": result.subject.report.target.name,
            "passed": result.passed,
            "empty": result.empty,
            "rules": result.rules,
            "violations": [_violation_dict(v) for v in result.violations],
            "allowed": [{**_violation_dict(v), "reason": e.reason, "entry": e.describe()} for v, e in result.allowed],
        }
        if result.diff is not None:
            data["baseline"] = {"path": result.diff.base.label, "matched": len(result.diff.pairs),
                                "changes": [{"kind": str(c.kind), "regression": c.regression, "text": change_text(c)}
                                            for c in result.diff.changes]}
        json.dump(data, out, indent=2)
        out.write("\n")


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


class GithubFormat:
    """GitHub Actions workflow commands: one ``::error`` per violation, at the user's source line."""

    name = "github"

    def render(self, result: CheckResult, out: TextIO) -> None:
        for v in result.violations:
            props = [f"title={_gh_escape('hloscope ' + v.rule, True)}"]
            src = user_source(v.record.full_source) if v.record is not None else ""
            if src:
                file, _, line = src.rpartition(":")
                props = [f"file={_gh_escape(file, True)}", f"line={line}", *props]
            out.write(f"::error {','.join(props)}::{_gh_escape(chr(10).join(violation_lines(v)))}\n")
        for v, entry in result.allowed:
            out.write(f"::notice title=hloscope allowed::{_gh_escape(violation_lines(v)[0] + ' -- ' + entry.reason)}\n")
        TextFormat().render(result, out)  # the log keeps the full report


def _formats() -> dict[str, CheckFormat]:
    from hloscope.render.check_junit import JunitFormat

    return {f.name: f for f in (TextFormat(), JsonFormat(), JunitFormat(), GithubFormat())}


CHECK_FORMATS: dict[str, CheckFormat] = _formats()


def get_check_format(name: str) -> CheckFormat:
    from hloscope.render import pick

    return pick(name, CHECK_FORMATS)
