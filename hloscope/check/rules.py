"""The rules themselves. Each takes a step (and its parameter) and returns violations.

A :class:`Violation` carries facts (rule, the verdict or record it concerns,
measured and allowed values); its ``message`` is worded from those facts by the
rule. :data:`RULES` is the one table of rules: its names are the config keys of
``[tool.hloscope]``, the ``hloscope check`` flags and (with ``_``) the keyword
arguments of the pytest marker and of the assertion helpers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from hloscope.analysis.intent import Accounted, IntentAccount, account_annotations_only, account_of
from hloscope.analysis.kinds import Direction, VerdictKind
from hloscope.analysis.report import Report
from hloscope.analysis.verdict import Verdict
from hloscope.check.allow import AllowEntry, find_allow
from hloscope.check.annotations import Fate, account_annotations
from hloscope.check.keys import TransferKey, TransferRecord
from hloscope.check.subject import Subject
from hloscope.errors import EXIT_BAD_INPUT, EXIT_UNKNOWN_NAME, HloscopeError
from hloscope.units import human_bytes


@dataclass(frozen=True)
class Violation:
    """One broken rule.

    rule: the rule's name. verdict: the transfer's verdict it concerns (None for
    step-wide rules and for transfers known only from a baseline file). message:
    one line for a person. actual / limit: the measured value and the allowed one,
    when the rule compares numbers. record: the transfer as matched across
    compiles (name, source, direction) when the rule concerns one transfer.
    """

    rule: str
    message: str
    verdict: Verdict | None = None
    actual: float | None = None
    limit: float | None = None
    record: TransferRecord | None = None


def nothing_to_judge(report: Report) -> str:
    """Why a gate on ``report`` would pass only because there is nothing to judge, or "".

    The module is not scheduled, was not compiled for a GPU (XLA:GPU writes stream
    assignments, ``operation_queue_id``, into backend configs; other backends do not),
    or has no host transfer to judge.
    """
    if not report.module.is_scheduled:
        return "the module is not scheduled (before optimizations): there is no order to judge"
    gpu = any("operation_queue_id" in ins.attr("backend_config")
              for comp in report.module.computations.values() for ins in comp.instructions)
    if not gpu:
        return "the module was not compiled for a GPU (no XLA:GPU stream assignments in it)"
    if not [v for v in report.verdicts if v.verdict is not VerdictKind.UNSCHEDULED]:
        return f"no host transfer in the module (nothing lives in memory space S({report.host_space}))"
    return ""


def parse_verdicts(text: str, option: str = "--fail-on") -> frozenset[VerdictKind]:
    """``"exposed,sync"`` -> verdict kinds; an unknown name is an unknown-name error (exit 3)."""
    wanted = [w.strip() for w in text.split(",") if w.strip()]
    valid = {str(k) for k in VerdictKind}
    bad = sorted(set(wanted) - valid)
    if bad:
        raise HloscopeError(f"{option}: unknown verdict(s) {', '.join(bad)}; choose from "
                            f"{', '.join(sorted(valid))}", EXIT_UNKNOWN_NAME)
    return frozenset(VerdictKind(w) for w in wanted)


def fail_on_verdicts(report: Report, verdicts: frozenset[VerdictKind]) -> list[Violation]:
    """One violation per transfer whose verdict is in ``verdicts``."""
    return [Violation("fail-on", f"{v.transfer.instruction.name} is {v.verdict}", v)
            for v in report.verdicts if v.verdict in verdicts]


# ---- the rule table ---------------------------------------------------------------------------


@dataclass
class RuleContext:
    """What a rule reads: the step, its transfers as records, the allow-list.

    Rules put the violations an allow entry covers into ``allowed`` instead of
    returning them.
    """

    subject: Subject
    records: list[TransferRecord]
    allow: tuple[AllowEntry, ...] = ()
    hbm_margin: float = 0.0
    allowed: list[tuple[Violation, AllowEntry]] = field(default_factory=list)
    host_pool_bytes: int | None = None  # fits-host-pool's pool; None: the report's (MemoryFacts.host_pool_bytes)

    def scheduled(self, rule: str) -> list[TransferRecord]:
        """Judged transfers (not annotations), leaving out those allowed for ``rule``."""
        return [r for r in self.records
                if r.verdict is not VerdictKind.UNSCHEDULED and find_allow(self.allow, rule, r) is None]

    def keep(self, v: Violation) -> list[Violation]:
        """``[v]``, or ``[]`` after filing it under ``allowed`` when an entry covers its transfer."""
        entry = find_allow(self.allow, v.rule, v.record) if v.record is not None else None
        if entry is None:
            return [v]
        self.allowed.append((v, entry))
        return []


@dataclass(frozen=True)
class Rule:
    """name: the config key and flag. kind: ``bool``, ``float``, ``fraction``, ``bytes`` or ``names``.
    meaning: one sentence for the docs and ``--help``. needs: what the step must provide
    (``memory``, ``unoptimized``) or ""."""

    name: str
    kind: str
    meaning: str
    evaluate: Callable[[RuleContext, Any], list[Violation]]
    needs: str = ""

    @property
    def keyword(self) -> str:
        return self.name.replace("-", "_")


def _us(x: float) -> str:
    return f"{x / 1e3:.2f} ms" if x >= 1e4 else f"{x:.1f} us"




def _per_transfer(ctx: RuleContext, rule: str, bad: VerdictKind,
                  say: Callable[[TransferRecord], str]) -> list[Violation]:
    out: list[Violation] = []
    for r in ctx.records:
        if r.verdict is bad:
            out += ctx.keep(Violation(rule, say(r), r.judged, r.exposed_us_per_step, 0.0, r))
    return out


def rule_no_sync(ctx: RuleContext, on: bool) -> list[Violation]:
    return _per_transfer(ctx, "no-sync", VerdictKind.SYNC, lambda r: (
        f"synchronous transfer of {human_bytes(r.bytes)} x{r.executions}/step: the stream waits for it, "
        f"~{_us(r.exposed_us_per_step)} per step")) if on else []


def rule_no_exposed(ctx: RuleContext, on: bool) -> list[Violation]:
    return _per_transfer(ctx, "no-exposed", VerdictKind.EXPOSED, lambda r: (
        f"exposed: async, but nothing hides it; ~{_us(r.exposed_us_per_step)} per step "
        f"(~{_us(r.est_exposed_us)} x{r.executions})")) if on else []


def _worst(records: list[TransferRecord], n: int = 3) -> str:
    top = sorted((r for r in records if r.exposed_us_per_step > 0), key=lambda r: -r.exposed_us_per_step)[:n]
    return "; ".join(f"{r.instruction} ~{_us(r.exposed_us_per_step)}" for r in top)


def rule_max_exposed_us(ctx: RuleContext, limit: float) -> list[Violation]:
    recs = ctx.scheduled("max-exposed-us")
    total = sum(r.exposed_us_per_step for r in recs)
    if total <= limit:
        return []
    return [Violation("max-exposed-us", f"~{_us(total)} of exposed transfer time per step > {_us(limit)} allowed "
                      f"(largest: {_worst(recs)})", actual=total, limit=limit)]


def rule_max_exposed_fraction(ctx: RuleContext, limit: float) -> list[Violation]:
    recs = ctx.scheduled("max-exposed-fraction")
    exposed = sum(r.exposed_us_per_step for r in recs)
    step = ctx.subject.report.est_compute_us() + exposed
    frac = exposed / step if step > 0 else 0.0
    if frac <= limit:
        return []
    return [Violation("max-exposed-fraction", f"exposed transfer time is {frac:.1%} of the estimated step "
                      f"(~{_us(exposed)} of ~{_us(step)}) > {limit:.1%} allowed (largest: {_worst(recs)})",
                      actual=frac, limit=limit)]


def rule_min_hidden_fraction(ctx: RuleContext, limit: float) -> list[Violation]:
    recs = ctx.scheduled("min-hidden-fraction")
    transfer = sum(r.est_transfer_us * r.executions for r in recs)
    hidden = sum(max(0.0, r.est_transfer_us - r.est_exposed_us) * r.executions for r in recs)
    frac = hidden / transfer if transfer > 0 else 1.0
    if frac >= limit:
        return []
    return [Violation("min-hidden-fraction", f"{frac:.1%} of transfer time hidden (~{_us(hidden)} of "
                      f"~{_us(transfer)} per step) < {limit:.1%} required (largest exposed: {_worst(recs)})",
                      actual=frac, limit=limit)]


def _to_host(ctx: RuleContext) -> list[TransferRecord]:
    return [r for r in ctx.records if r.key.direction == Direction.TO_HOST]


def rule_expect_offloaded(ctx: RuleContext, names: list[str]) -> list[Violation]:
    offloads = _to_host(ctx)
    out = []
    for pattern in names:
        if not any(fnmatchcase(n, pattern) for r in offloads for n in (r.checkpoint, r.key.name) if n):
            known = sorted({r.checkpoint or r.key.name or "(unnamed)" for r in offloads})
            out.append(Violation("expect-offloaded", f"expected offload '{pattern}' not found among "
                                 f"{len(offloads)} transfer(s) to host (names: {', '.join(known) or 'none'}); "
                                 "was its checkpoint_name lost or the policy changed?"))
    return out


def rule_min_offloaded_bytes(ctx: RuleContext, limit: int) -> list[Violation]:
    total = sum(r.bytes_per_step for r in _to_host(ctx))
    if total >= limit:
        return []
    return [Violation("min-offloaded-bytes", f"{human_bytes(total)} per step offloaded to host < {human_bytes(limit)} "
                      "expected; an offload was lost", actual=float(total), limit=float(limit))]


def rule_annotations_accounted(ctx: RuleContext, on: bool) -> list[Violation]:
    if not on:
        return []
    before = ctx.subject.unoptimized
    if before is None:
        raise HloscopeError(f"annotations-accounted: {ctx.subject.label} comes without its unoptimized module; "
                            "check an artifact or dump folder, or pass --unoptimized FILE", EXIT_BAD_INPUT)
    from hloscope.analysis.report import analyze_module
    from hloscope.check.keys import records_from_report

    before_report = analyze_module(before, ctx.subject.report.target, ctx.subject.report.options)
    out: list[Violation] = []
    records = {id(r.judged): r for r in records_from_report(before_report)}
    for fate in account_annotations(before_report, ctx.subject.report):
        a = fate.annotation.transfer
        what = f"placement annotation {a.instruction.name} ({a.direction}, {human_bytes(a.bytes)} x{a.executions})"
        if fate.fate is Fate.REMOVED:
            msg = f"{what} was removed: the optimized module moves fewer bytes {a.direction} than it annotates"
        elif fate.fate is Fate.SYNC:
            names = ", ".join(v.transfer.instruction.name for v in fate.became)
            msg = f"{what} became a synchronous copy ({names})"
        else:
            continue
        out += ctx.keep(Violation("annotations-accounted", msg, fate.annotation, record=records[id(fate.annotation)]))
    return out


def step_intent(subject: Subject) -> IntentAccount | None:
    """What the step asked to offload and what became of it: the trace's account when the step
    was traced, else (a plain HLO file) the unoptimized module's placement annotations, else None."""
    account = account_of(subject.report)
    if account is not None:
        return account
    if subject.unoptimized is None:
        return None
    report = subject.report
    return account_annotations_only(report.verdicts, report.module, subject.unoptimized)


def unaccounted_intent(subject: Subject) -> tuple[Accounted, ...]:
    """Requests of a traced step that produced no transfer (what ``intent-accounted`` fails on)."""
    account = account_of(subject.report)
    return account.unaccounted if account is not None else ()


def _intent_record(a: Accounted) -> TransferRecord:
    """The request as a record an allow entry can name (checkpoint = the name, source = its line)."""
    w = a.asked.where
    full = f"{w.file}:{w.line}" if w is not None else ""
    return TransferRecord(TransferKey(a.asked.what, str(w) if w is not None else "", "to_host"), a.asked.what, "",
                          str(a.asked.kind), 0, 0, VerdictKind.UNSCHEDULED, 0.0, 0.0, full_source=full,
                          checkpoint=a.asked.what)


def intent_message(a: Accounted) -> str:
    """``offload 'mlp_hiden' at model.py:40 [policy] produced no transfer: never-tagged: ...``."""
    where = f" at {a.asked.where}" if a.asked.where is not None else ""
    policy = f" [{a.asked.policy}]" if a.asked.policy else ""
    return f"{a.asked}{where}{policy} produced no transfer: {a.why}: {a.detail}"


def rule_intent_accounted(ctx: RuleContext, on: bool) -> list[Violation]:
    if not on:
        return []
    account = step_intent(ctx.subject)
    if account is None:
        raise HloscopeError(f"intent-accounted: {ctx.subject.label} has no trace (a plain HLO file) and no unoptimized "
                            "module to fall back on; check an artifact or dump folder, --fn/--workload, or pass "
                            "--unoptimized FILE", EXIT_BAD_INPUT)
    prefix = "" if account.source == "trace" else "no trace, judged from the unoptimized module's annotations: "
    out: list[Violation] = []
    for a in account.unaccounted:
        v = Violation("intent-accounted", prefix + intent_message(a))
        entry = find_allow(ctx.allow, "intent-accounted", _intent_record(a))
        if entry is None:
            out.append(v)
        else:
            ctx.allowed.append((v, entry))
    return out


def rule_fits_hbm(ctx: RuleContext, on: bool) -> list[Violation]:
    if not on:
        return []
    m = ctx.subject.memory
    if m is None:
        raise HloscopeError(f"fits-hbm cannot be evaluated: {ctx.subject.label} has no memory figures (a plain HLO "
                            "file); check a `hloscope compile` artifact folder, --workload or --fn", EXIT_BAD_INPUT)
    limit = m.limit_bytes * (1.0 - ctx.hbm_margin)
    if m.device_allocation_bytes <= limit:
        return []
    margin = f" less a {ctx.hbm_margin:.0%} margin ({human_bytes(limit)})" if ctx.hbm_margin else ""
    room = (f"the {human_bytes(m.allocator_bytes)} JAX's allocator takes of {human_bytes(m.hbm_bytes)} of HBM"
            if m.allocator_bytes else f"{human_bytes(m.hbm_bytes)} of HBM")
    return [Violation("fits-hbm", f"device allocation {human_bytes(m.device_allocation_bytes)} does not fit in "
                      f"{room}{margin}; a step over its memory limit also closes overlap "
                      "windows", actual=float(m.device_allocation_bytes), limit=limit)]


def rule_fits_host_pool(ctx: RuleContext, on: bool) -> list[Violation]:
    """One GPU's pinned-host bytes fit in PJRT's pinned-host pool (the least one process asks for)."""
    if not on:
        return []
    m = ctx.subject.memory
    if m is None:
        raise HloscopeError(f"fits-host-pool cannot be evaluated: {ctx.subject.label} has no memory figures (a plain "
                            "HLO file); check a `hloscope compile` artifact folder, --workload or --fn", EXIT_BAD_INPUT)
    pool = ctx.host_pool_bytes if ctx.host_pool_bytes is not None else m.host_pool_bytes
    if m.host_bytes <= pool:
        return []
    return [Violation("fits-host-pool", f"host memory {human_bytes(m.host_bytes)} per GPU does not fit in PJRT's "
                      f"pinned-host pool of {human_bytes(pool)} (XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB): the step's "
                      "host buffers fail to allocate; raise the variable or offload less",
                      actual=float(m.host_bytes), limit=float(pool))]


RULES: dict[str, Rule] = {r.name: r for r in (
    Rule("no-sync", "bool", "no transfer is synchronous (the stream would wait for it)", rule_no_sync),
    Rule("no-exposed", "bool", "no async transfer is exposed (nothing scheduled to hide it)", rule_no_exposed),
    Rule("max-exposed-us", "float", "at most this many estimated microseconds of exposed transfer time per step",
         rule_max_exposed_us),
    Rule("max-exposed-fraction", "fraction",
         "exposed transfer time at most this fraction of the estimated step (compute + exposed transfers)",
         rule_max_exposed_fraction),
    Rule("min-hidden-fraction", "fraction", "at least this fraction of the estimated transfer time is hidden",
         rule_min_hidden_fraction),
    Rule("expect-offloaded", "names",
         "each name (checkpoint name or op label; shell patterns) is offloaded to host", rule_expect_offloaded),
    Rule("min-offloaded-bytes", "bytes", "at least this many bytes per step are offloaded to host",
         rule_min_offloaded_bytes),
    Rule("annotations-accounted", "bool", "every host-placement annotation of the unoptimized module became an "
         "async transfer (not a synchronous copy, not removed)", rule_annotations_accounted, needs="unoptimized"),
    Rule("intent-accounted", "bool", "every offload the step asked for became host transfers (on when the step "
         "was traced; a plain HLO file falls back to its unoptimized module's annotations)", rule_intent_accounted),
    Rule("fits-hbm", "bool", "the step's device allocation fits in the target's HBM, less hbm-margin",
         rule_fits_hbm, needs="memory"),
    Rule("fits-host-pool", "bool", "the step's pinned-host bytes per GPU fit in PJRT's pinned-host pool "
         "(host-pool-gb, XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB, default 64 GiB)", rule_fits_host_pool, needs="memory"),
)}
