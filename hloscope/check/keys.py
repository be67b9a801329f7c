"""Transfers as records that survive a recompile, and the key that matches them across compiles.

XLA numbers instructions afresh on every compile (``dynamic-slice-start.3`` may be
``.5`` tomorrow), so a baseline cannot match transfers by instruction name. A
:class:`TransferKey` names a transfer by what the user wrote instead:

- ``name``: the ``checkpoint_name`` of the offloaded tensor when the analysis
  knows it, else a label derived from the JAX ``op_name`` metadata (the op path
  without its outer ``jit(fn)/``), else ``""`` (XLA's offload ops often carry no
  metadata at all);
- ``source``: the user's ``file:line``, the file cut to its last two path parts
  so that checkouts in different folders match;
- ``direction``: ``to_host`` or ``to_device``;
- ``occurrence``: 1-based rank among transfers with the same name, source and
  direction, largest first (then most executions, then best verdict), so the
  peeled and the in-loop copy of a pipelined offload stay apart.

A :class:`TransferRecord` holds the facts a baseline compares. It is built from
a live :class:`~hloscope.analysis.report.Report` or from a JSON report
(docs/json-schema.md), so a committed ``report.json`` works as a baseline.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any

from hloscope.analysis.kinds import Direction, VerdictKind
from hloscope.analysis.report import Report
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError

#: Worst first; a higher rank is a better verdict.
_RANK = {VerdictKind.SYNC: 0, VerdictKind.EXPOSED: 1, VerdictKind.PARTIAL: 2, VerdictKind.HIDDEN: 3,
         VerdictKind.UNSCHEDULED: -1}


def verdict_rank(v: VerdictKind) -> int:
    """Higher is better: sync 0 < exposed 1 < partial 2 < hidden 3 (unscheduled -1: unjudged)."""
    return _RANK[v]


@dataclass(frozen=True, order=True)
class TransferKey:
    """How a transfer is matched across compiles (see the module docstring)."""

    name: str
    source: str
    direction: str
    occurrence: int = 1

    def group(self) -> tuple[str, str, str]:
        return (self.name, self.source, self.direction)

    def __str__(self) -> str:
        what = self.name or "(unnamed)"
        where = f" at {self.source}" if self.source else ""
        return f"{self.direction} {what}{where} #{self.occurrence}"


@dataclass(frozen=True)
class TransferRecord:
    """The facts of one transfer that a baseline compares, from a report or a JSON report.

    instruction / computation / line: where it is in this compile's HLO (display only,
    never matched on). bytes: per execution. est_*: microseconds per execution.
    checkpoint: the checkpoint name when known; name_guessed: only its bytes decided it (a
    guess, ``hloscope.analysis.intent.naming``). judged: the live verdict (None when the record
    comes from JSON).
    """

    key: TransferKey
    instruction: str
    computation: str
    op: str
    bytes: int
    executions: int
    verdict: VerdictKind
    est_transfer_us: float
    est_hidden_us: float
    full_source: str = ""
    op_name: str = ""
    checkpoint: str | None = None
    line: int = 0
    judged: Verdict | None = field(default=None, compare=False, repr=False)
    exposed_us: float | None = None
    name_guessed: bool = False

    @property
    def est_exposed_us(self) -> float:
        """Per execution: the analysis's own figure (which may come from the timeline simulation),
        else the part of the transfer its window does not hide."""
        if self.verdict is VerdictKind.UNSCHEDULED:
            return 0.0
        if self.exposed_us is not None:
            return self.exposed_us
        return max(0.0, self.est_transfer_us - self.est_hidden_us)

    @property
    def exposed_us_per_step(self) -> float:
        return self.est_exposed_us * self.executions

    def window_exposed_us_per_step(self) -> float:
        """Per step, from the window alone (transfer - hidden): comparable with a JSON report that
        carries no per-transfer exposed figure."""
        if self.verdict is VerdictKind.UNSCHEDULED:
            return 0.0
        return max(0.0, self.est_transfer_us - self.est_hidden_us) * self.executions

    @property
    def bytes_per_step(self) -> int:
        return self.bytes * self.executions


def op_label(op_name: str) -> str:
    """The op path without its outer ``jit(fn)/`` (renaming the step function keeps the label)."""
    parts = [p for p in op_name.split("/") if p]
    if parts and parts[0].startswith(("jit(", "pjit(")):
        parts = parts[1:]
    return "/".join(parts)


def source_key(source: str) -> str:
    """``/home/ci/repo/model/layers.py:140`` -> ``model/layers.py:140``."""
    if not source:
        return ""
    file, sep, line = source.rpartition(":")
    if not sep or not line.isdigit():
        file, line = source, ""
    tail = "/".join(PurePath(file).parts[-2:])
    return f"{tail}:{line}" if line else tail


def _checkpoint_of(v: Verdict) -> str | None:
    # Set by the analysis once it reads checkpoint names (op_name metadata / the unoptimized module).
    name = getattr(v.transfer, "checkpoint_name", None)
    return str(name) if name else None


def _record_from_verdict(report: Report, v: Verdict, digits: int | None = None) -> TransferRecord:
    def us(x: float) -> float:
        return x if digits is None else round(x, digits)

    t = v.transfer
    loc = report.source(v)
    op_name = t.instruction.metadata.get("op_name", "")
    checkpoint = _checkpoint_of(v)
    full = str(loc) if loc else ""
    key = TransferKey(checkpoint or op_label(op_name), source_key(full), str(t.direction))
    return TransferRecord(key, t.instruction.name, t.computation, t.op, t.bytes, t.executions, v.verdict,
                          us(v.est_transfer_us), us(v.est_hidden_us), full, op_name, checkpoint, t.instruction.line,
                          v, us(v.est_exposed_us), bool(checkpoint) and bool(getattr(t, "name_guessed", False)))


def number_occurrences(records: Iterable[TransferRecord]) -> list[TransferRecord]:
    """Give each record its occurrence within its (name, source, direction) group; order kept."""
    recs = list(records)
    groups: dict[tuple[str, str, str], list[int]] = {}
    for i, r in enumerate(recs):
        groups.setdefault(r.key.group(), []).append(i)
    out = list(recs)
    for idxs in groups.values():
        ranked = sorted(idxs, key=lambda i: (-recs[i].bytes, -recs[i].executions, -verdict_rank(recs[i].verdict),
                                             recs[i].line, recs[i].instruction))
        for n, i in enumerate(ranked, 1):
            out[i] = replace(recs[i], key=replace(recs[i].key, occurrence=n))
    return out


def records_from_report(report: Report, digits: int | None = None) -> list[TransferRecord]:
    """One record per verdict, in the report's order, with occurrences numbered. ``digits``: the
    figures rounded to that many decimals, as a JSON report of the step holds them (a baseline)."""
    return number_occurrences(_record_from_verdict(report, v, digits) for v in report.verdicts)


def transfer_key(report: Report, verdict: Verdict) -> TransferKey:
    """The key that matches ``verdict``'s transfer across compiles (never its XLA instruction number)."""
    for r in records_from_report(report):
        if r.judged is verdict:
            return r.key
    raise ValueError(f"{verdict.transfer.instruction.name} is not a verdict of this report")


def _need(t: Mapping[str, Any], name: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = t.get(name)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise HloscopeError(f"{where}: transfer field '{name}' is missing or not {getattr(kind, '__name__', kind)}",
                            EXIT_BAD_INPUT)
    return value


def _json_exposed(t: Mapping[str, Any]) -> float | None:
    """The exposed estimate a JSON transfer carries: ``est_exposed_us`` (check --write-baseline), else the
    simulated mean wait at the done (schema 3, when the simulation matched the transfer), else None."""
    if isinstance(t.get("est_exposed_us"), int | float):
        return float(t["est_exposed_us"])
    sim = t.get("simulated")
    if isinstance(sim, Mapping) and sim.get("matched") and isinstance(sim.get("mean_wait_us"), int | float):
        return float(sim["mean_wait_us"])
    return None


def records_from_json(data: Mapping[str, Any], where: str = "report") -> list[TransferRecord]:
    """Records from a JSON report (``hloscope analyze --json``, an artifact's ``report.json``)."""
    schema = str(data.get("schema", ""))
    if not schema.startswith("hloscope.report/") or not isinstance(data.get("transfers"), list):
        raise HloscopeError(f"{where}: not an hloscope JSON report (no 'schema': 'hloscope.report/N' "
                            "and 'transfers' list)", EXIT_BAD_INPUT)
    valid = {str(k) for k in VerdictKind}
    recs: list[TransferRecord] = []
    for i, t in enumerate(data["transfers"]):
        at = f"{where}: transfers[{i}]"
        if not isinstance(t, Mapping):
            raise HloscopeError(f"{at}: not an object", EXIT_BAD_INPUT)
        verdict = _need(t, "verdict", str, at)
        direction = _need(t, "direction", str, at)
        if verdict not in valid or direction not in {str(d) for d in Direction}:
            raise HloscopeError(f"{at}: unknown verdict '{verdict}' or direction '{direction}'", EXIT_BAD_INPUT)
        op_name = str(t.get("op_name") or "")
        checkpoint = t.get("checkpoint_name") or None
        full = str(t.get("source") or "")
        key = TransferKey(str(checkpoint) if checkpoint else op_label(op_name), source_key(full), direction)
        recs.append(TransferRecord(
            key, str(t.get("name", "")), str(t.get("computation", "")), str(t.get("op", "")),
            int(_need(t, "bytes", int, at)), int(_need(t, "executions", int, at)), VerdictKind(verdict),
            float(_need(t, "est_transfer_us", (int, float), at)), float(_need(t, "est_hidden_us", (int, float), at)),
            full, op_name, str(checkpoint) if checkpoint else None, int(t.get("line") or 0),
            exposed_us=_json_exposed(t), name_guessed=bool(checkpoint) and t.get("name_guessed") is True))
    return number_occurrences(recs)
