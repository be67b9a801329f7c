"""The rules themselves. Each takes a step (and its parameter) and returns violations.

A :class:`Violation` carries facts (rule, what was found as a :class:`Finding`
with its names and figures, the verdict or record it concerns, measured and
allowed values); ``hloscope.render.check.words.violation_message`` words it, and
``hloscope.render.check.meaning`` says what each rule means. :data:`RULES` is the
one table of rules: its names are the config keys of
``[tool.hloscope]``, the ``hloscope check`` flags and (with ``_``) the keyword
arguments of the pytest marker and of the assertion helpers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from fnmatch import fnmatchcase
from typing import Any

from hloscope.analysis.intent.account import account_annotations_only
from hloscope.analysis.intent.outcome import Accounted, AccountSource, IntentAccount, account_of
from hloscope.analysis.kinds import Direction, VerdictKind
from hloscope.analysis.report import Report, analyze_module
from hloscope.analysis.simulate.margin import TransferMargin
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.analysis.structure.backend import runs_on_accelerator
from hloscope.check.allow import AllowEntry, find_allow
from hloscope.check.annotations import Fate, account_annotations
from hloscope.check.keys import TransferKey, TransferRecord, records_from_report
from hloscope.check.subject import Subject
from hloscope.errors import EXIT_BAD_INPUT, EXIT_UNKNOWN_NAME, HloscopeError


class Finding(StrEnum):
    """What a rule found; the arguments each carries are listed beside it."""

    FAIL_ON = "fail-on"  # the verdict is one of --fail-on's
    SYNC = "sync"  # the record's transfer is synchronous
    EXPOSED = "exposed"  # the record's async transfer is exposed
    EXPOSED_US = "exposed-us"  # actual: exposed us per step; worst
    EXPOSED_FRACTION = "exposed-fraction"  # actual: fraction; exposed_us, step_us, default_gate; worst
    HIDDEN_FRACTION = "hidden-fraction"  # actual: fraction; hidden_us, transfer_us; worst
    NOT_OFFLOADED = "not-offloaded"  # pattern, offloads (count), names (known), guessed (those only bytes decided)
    OFFLOADED_BYTES = "offloaded-bytes"  # actual: bytes per step
    ANNOTATION_REMOVED = "annotation-removed"  # the verdict is the annotation's
    ANNOTATION_SYNC = "annotation-sync"  # became: the synchronous copies' names
    INTENT_UNACCOUNTED = "intent-unaccounted"  # accounted: the request; from_annotations: no trace
    PRESET_NOT_TAGGED = "preset-not-tagged"  # accounted: a name a framework preset lists that the model never tags
    DOES_NOT_FIT = "does-not-fit"  # actual: device allocation; limit; allocator, hbm, margin
    NOT_IN_HOST_POOL = "not-in-host-pool"  # actual: host bytes per GPU; limit: the pinned-host pool
    BASELINE = "baseline"  # change: the baseline's Change
    MARGIN = "margin"  # actual: the transfer's margin (a factor); margin: its TransferMargin
    MARGINAL_US = "marginal-us"  # actual: the largest marginal cost per step (us); margin: its TransferMargin
    UNREAD_WRITE = "unread-write"  # actual: bytes per step written to host and never read; write: its UnreadWrite
    CALL_HOST_US = "call-host-us"  # actual: host us per call; call: the report's HostCall


@dataclass(frozen=True)
class Reading:
    """What a rule read on the step, shown beside its setting whether it passed or failed.

    value: in the rule's unit (us per step, a fraction, bytes per step, a margin factor, or a count).
    of: for a count, what it counts among (transfers judged, names expected, annotations, requests).
    limit: the allowed value when the setting is not itself one (fits-hbm's bytes, fits-host-pool's pool).
    record: the transfer the value is of (min-margin's smallest margin, max-marginal-us's largest cost).
    """

    value: float | None
    of: int | None = None
    limit: float | None = None
    record: TransferRecord | None = None


@dataclass(frozen=True)
class Violation:
    """One broken rule.

    rule: the rule's name. finding: what it found (:class:`Finding`); args: the finding's
    names and figures (see :class:`Finding`). verdict: the transfer's verdict it concerns
    (None for step-wide rules and for transfers known only from a baseline file).
    actual / limit: the measured value and the allowed one, when the rule compares
    numbers. record: the transfer as matched across compiles (name, source, direction)
    when the rule concerns one transfer. worst: a step-wide rule's largest contributors.
    """

    rule: str
    finding: Finding
    verdict: Verdict | None = None
    actual: float | None = None
    limit: float | None = None
    record: TransferRecord | None = None
    args: tuple[tuple[str, Any], ...] = ()
    worst: tuple[TransferRecord, ...] = ()

    def arg(self, key: str) -> Any:
        """The finding's argument ``key`` (None when it has none)."""
        return next((v for k, v in self.args if k == key), None)


class Emptiness(StrEnum):
    """Why a step has nothing a gate could judge (worded in ``render.check.words``)."""

    NOT_SCHEDULED = "not-scheduled"  # the module before optimizations: there is no order to judge
    NOT_GPU = "not-gpu"  # neither a TPU module nor one with XLA:GPU stream assignments (the CPU's, a test module)
    NO_TRANSFER = "no-transfer"  # nothing lives in the host memory space


@dataclass(frozen=True)
class NothingToJudge:
    """A step with nothing to judge: why, the host memory space looked in, and the step's label
    ("" where the caller names the step itself)."""

    why: Emptiness
    host_space: int
    label: str = ""


def nothing_to_judge(report: Report, label: str = "") -> NothingToJudge | None:
    """Why a gate on ``report`` would pass only because there is nothing to judge, or None.

    The module is not scheduled, was compiled for neither a TPU (the step's backend,
    ``report.compiled_for``) nor a GPU (XLA:GPU writes stream assignments,
    ``operation_queue_id``, into backend configs; other backends do not), or has no host
    transfer to judge.
    """
    why = None
    if not report.module.is_scheduled:
        why = Emptiness.NOT_SCHEDULED
    elif not runs_on_accelerator(report.compiled_for, report.module):
        why = Emptiness.NOT_GPU
    elif not [v for v in report.verdicts if v.verdict is not VerdictKind.UNSCHEDULED]:
        why = Emptiness.NO_TRANSFER
    return NothingToJudge(why, report.host_space, label) if why is not None else None


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
    return [Violation("fail-on", Finding.FAIL_ON, v) for v in report.verdicts if v.verdict in verdicts]


# ---- the rule table ---------------------------------------------------------------------------


@dataclass
class RuleContext:
    """What a rule reads: the step, its transfers as records, the allow-list.

    Rules put the violations an allow entry covers into ``allowed`` instead of
    returning them, and what they read on the step into ``readings`` (by rule name).
    """

    subject: Subject
    records: list[TransferRecord]
    allow: tuple[AllowEntry, ...] = ()
    hbm_margin: float = 0.0
    allowed: list[tuple[Violation, AllowEntry]] = field(default_factory=list)
    readings: dict[str, Reading] = field(default_factory=dict)
    host_pool_bytes: int | None = None  # fits-host-pool's pool; None: the report's (MemoryFacts.host_pool_bytes)
    default_gate: bool = False  # the rules are the default gate's (none configured): the words say how to loosen it

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
    """name: the config key and flag. kind: ``bool``, ``float``, ``factor`` (a number >= 1), ``fraction``,
    ``bytes`` or ``names``.
    needs: what the step must provide (``memory``, ``unoptimized``) or "". What it means, for
    the docs and ``--help``: ``hloscope.render.check.meaning.RULE_MEANING``."""

    name: str
    kind: str
    evaluate: Callable[[RuleContext, Any], list[Violation]]
    needs: str = ""

    @property
    def keyword(self) -> str:
        return self.name.replace("-", "_")


def _per_transfer(ctx: RuleContext, rule: str, bad: VerdictKind, finding: Finding) -> list[Violation]:
    judged = ctx.scheduled(rule)
    ctx.readings[rule] = Reading(sum(r.verdict is bad for r in judged), of=len(judged))
    out: list[Violation] = []
    for r in ctx.records:
        if r.verdict is bad:
            out += ctx.keep(Violation(rule, finding, r.judged, r.exposed_us_per_step, 0.0, r))
    return out


def rule_no_sync(ctx: RuleContext, on: bool) -> list[Violation]:
    return _per_transfer(ctx, "no-sync", VerdictKind.SYNC, Finding.SYNC) if on else []


def rule_no_exposed(ctx: RuleContext, on: bool) -> list[Violation]:
    return _per_transfer(ctx, "no-exposed", VerdictKind.EXPOSED, Finding.EXPOSED) if on else []


def _worst(records: list[TransferRecord], n: int = 3) -> tuple[TransferRecord, ...]:
    """The ``n`` transfers with the most exposed time per step (none with none)."""
    return tuple(sorted((r for r in records if r.exposed_us_per_step > 0), key=lambda r: -r.exposed_us_per_step)[:n])


def rule_max_exposed_us(ctx: RuleContext, limit: float) -> list[Violation]:
    recs = ctx.scheduled("max-exposed-us")
    total = sum(r.exposed_us_per_step for r in recs)
    ctx.readings["max-exposed-us"] = Reading(total)
    if total <= limit:
        return []
    return [Violation("max-exposed-us", Finding.EXPOSED_US, actual=total, limit=limit, worst=_worst(recs))]


@dataclass(frozen=True)
class StepWait:
    """How long a step waits on host transfers: exposed_us (per step, exposed and partial transfers alike),
    step_us (the estimated compute plus that wait), fraction (exposed_us / step_us; 0 for an empty step),
    partial (how many waiting transfers are partial, not exposed)."""

    exposed_us: float
    step_us: float
    fraction: float
    partial: int


def step_wait(report: Report, records: list[TransferRecord] | None = None) -> StepWait:
    """What ``max-exposed-fraction`` reads: the wait of ``records`` (default: every judged transfer)."""
    recs = records if records is not None else [r for r in records_from_report(report)
                                                if r.verdict is not VerdictKind.UNSCHEDULED]
    exposed = sum(r.exposed_us_per_step for r in recs)
    step = report.est_compute_us() + exposed
    partial = sum(r.verdict is VerdictKind.PARTIAL and r.exposed_us_per_step > 0 for r in recs)
    return StepWait(exposed, step, exposed / step if step > 0 else 0.0, partial)


def rule_max_exposed_fraction(ctx: RuleContext, limit: float) -> list[Violation]:
    recs = ctx.scheduled("max-exposed-fraction")
    wait = step_wait(ctx.subject.report, recs)
    exposed, step, frac = wait.exposed_us, wait.step_us, wait.fraction
    ctx.readings["max-exposed-fraction"] = Reading(frac)
    if frac <= limit:
        return []
    return [Violation("max-exposed-fraction", Finding.EXPOSED_FRACTION, actual=frac, limit=limit,
                      args=(("exposed_us", exposed), ("step_us", step), ("default_gate", ctx.default_gate)),
                      worst=_worst(recs))]


def rule_min_hidden_fraction(ctx: RuleContext, limit: float) -> list[Violation]:
    recs = ctx.scheduled("min-hidden-fraction")
    transfer = sum(r.est_transfer_us * r.executions for r in recs)
    hidden = sum(max(0.0, r.est_transfer_us - r.est_exposed_us) * r.executions for r in recs)
    frac = hidden / transfer if transfer > 0 else 1.0
    ctx.readings["min-hidden-fraction"] = Reading(frac)
    if frac >= limit:
        return []
    return [Violation("min-hidden-fraction", Finding.HIDDEN_FRACTION, actual=frac, limit=limit,
                      args=(("hidden_us", hidden), ("transfer_us", transfer)), worst=_worst(recs))]


def _to_host(ctx: RuleContext) -> list[TransferRecord]:
    return [r for r in ctx.records if r.key.direction == Direction.TO_HOST]


def rule_expect_offloaded(ctx: RuleContext, names: list[str]) -> list[Violation]:
    offloads = _to_host(ctx)
    out = []
    for pattern in names:
        if not any(fnmatchcase(n, pattern) for r in offloads for n in (r.checkpoint, r.key.name) if n):
            known = sorted({r.checkpoint or r.key.name or "(unnamed)" for r in offloads})
            # a name only bytes decided may be the one expected, given to another request's transfer
            guessed = tuple(sorted({r.checkpoint for r in offloads if r.checkpoint and r.name_guessed}))
            out.append(Violation("expect-offloaded", Finding.NOT_OFFLOADED,
                                 args=(("pattern", pattern), ("offloads", len(offloads)), ("names", tuple(known)),
                                       ("guessed", guessed))))
    ctx.readings["expect-offloaded"] = Reading(len(names) - len(out), of=len(names))
    return out


def rule_min_offloaded_bytes(ctx: RuleContext, limit: int) -> list[Violation]:
    total = sum(r.bytes_per_step for r in _to_host(ctx))
    ctx.readings["min-offloaded-bytes"] = Reading(float(total))
    if total >= limit:
        return []
    return [Violation("min-offloaded-bytes", Finding.OFFLOADED_BYTES, actual=float(total), limit=float(limit))]


def rule_annotations_accounted(ctx: RuleContext, on: bool) -> list[Violation]:
    if not on:
        return []
    before = ctx.subject.unoptimized
    if before is None:
        raise HloscopeError(f"annotations-accounted: {ctx.subject.label} comes without its unoptimized module; "
                            "check an artifact or dump folder, or pass --unoptimized FILE", EXIT_BAD_INPUT)

    before_report = analyze_module(before, ctx.subject.report.target, ctx.subject.report.options)
    out: list[Violation] = []
    records = {id(r.judged): r for r in records_from_report(before_report)}
    fates = account_annotations(before_report, ctx.subject.report)
    ctx.readings["annotations-accounted"] = Reading(sum(f.fate not in (Fate.REMOVED, Fate.SYNC) for f in fates),
                                                     of=len(fates))
    for fate in fates:
        args: tuple[tuple[str, Any], ...] = ()
        if fate.fate is Fate.REMOVED:
            found = Finding.ANNOTATION_REMOVED
        elif fate.fate is Fate.SYNC:
            found = Finding.ANNOTATION_SYNC
            args = (("became", tuple(v.transfer.instruction.name for v in fate.became)),)
        else:
            continue
        out += ctx.keep(Violation("annotations-accounted", found, fate.annotation, record=records[id(fate.annotation)],
                                  args=args))
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
    """Requests of a traced step that produced no transfer, or none for some of their placement
    annotations (what ``intent-accounted`` fails on)."""
    account = account_of(subject.report)
    return account.missing if account is not None else ()


def _intent_record(a: Accounted) -> TransferRecord:
    """The request as a record an allow entry can name (checkpoint = the name, source = its line)."""
    w = a.asked.where
    full = f"{w.file}:{w.line}" if w is not None else ""
    return TransferRecord(TransferKey(a.asked.what, str(w) if w is not None else "", "to_host"), a.asked.what, "",
                          str(a.asked.kind), 0, 0, VerdictKind.UNSCHEDULED, 0.0, 0.0, full_source=full,
                          checkpoint=a.asked.what)


def rule_intent_accounted(ctx: RuleContext, on: bool) -> list[Violation]:
    if not on:
        return []
    account = step_intent(ctx.subject)
    if account is None:
        raise HloscopeError(f"intent-accounted: {ctx.subject.label} has no trace (a plain HLO file) and no unoptimized "
                            "module to fall back on; check an artifact or dump folder, --fn/--workload, or pass "
                            "--unoptimized FILE", EXIT_BAD_INPUT)
    ctx.readings["intent-accounted"] = Reading(len(account.items) - len(account.unaccounted), of=len(account.items))
    out: list[Violation] = []
    for a in account.missing:
        v = Violation("intent-accounted", Finding.INTENT_UNACCOUNTED,
                      args=(("accounted", a), ("from_annotations", account.source is AccountSource.ANNOTATIONS)))
        out += _unless_allowed(ctx, v, a)
    return out


def _unless_allowed(ctx: RuleContext, v: Violation, a: Accounted) -> list[Violation]:
    """``[v]``, or ``[]`` after filing it under ``allowed`` when an entry covers the request ``a``."""
    entry = find_allow(ctx.allow, v.rule, _intent_record(a))
    if entry is None:
        return [v]
    ctx.allowed.append((v, entry))
    return []


def rule_preset_names_tagged(ctx: RuleContext, on: bool) -> list[Violation]:
    """Names a framework's preset offloads (MaxText's ``remat_policy``) that the model never tags: off by
    default (``intent-accounted`` does not fail on them: they are the preset's names, not the user's)."""
    if not on:
        return []
    account = account_of(ctx.subject.report)
    if account is None:
        raise HloscopeError(f"preset-names-tagged: {ctx.subject.label} has no trace (the step's policies are not "
                            "known); check an artifact folder, --fn/--workload or --maxtext", EXIT_BAD_INPUT)
    out: list[Violation] = []
    for a in account.preset_untagged:
        out += _unless_allowed(ctx, Violation("preset-names-tagged", Finding.PRESET_NOT_TAGGED,
                                              args=(("accounted", a),)), a)
    return out


def rule_fits_hbm(ctx: RuleContext, on: bool) -> list[Violation]:
    if not on:
        return []
    m = ctx.subject.memory
    if m is None:
        raise HloscopeError(f"fits-hbm cannot be evaluated: {ctx.subject.label} has no memory figures (a plain HLO "
                            "file); check a `hloscope compile` artifact folder, --workload or --fn", EXIT_BAD_INPUT)
    limit = m.limit_bytes * (1.0 - ctx.hbm_margin)
    ctx.readings["fits-hbm"] = Reading(float(m.device_allocation_bytes), limit=limit)
    if m.device_allocation_bytes <= limit:
        return []
    return [Violation("fits-hbm", Finding.DOES_NOT_FIT, actual=float(m.device_allocation_bytes), limit=limit,
                      args=(("allocator_bytes", m.allocator_bytes), ("hbm_bytes", m.hbm_bytes),
                            ("margin", ctx.hbm_margin)))]


def rule_fits_host_pool(ctx: RuleContext, on: bool) -> list[Violation]:
    """One GPU's pinned-host bytes fit in PJRT's pinned-host pool (the least one process asks for)."""
    if not on:
        return []
    m = ctx.subject.memory
    if m is None:
        raise HloscopeError(f"fits-host-pool cannot be evaluated: {ctx.subject.label} has no memory figures (a plain "
                            "HLO file); check a `hloscope compile` artifact folder, --workload or --fn", EXIT_BAD_INPUT)
    pool = ctx.host_pool_bytes if ctx.host_pool_bytes is not None else m.host_pool_bytes
    ctx.readings["fits-host-pool"] = Reading(float(m.host_bytes), limit=float(pool))
    if m.host_bytes <= pool:
        return []
    return [Violation("fits-host-pool", Finding.NOT_IN_HOST_POOL, actual=float(m.host_bytes), limit=float(pool))]


def _margins_of(ctx: RuleContext, rule: str) -> list[tuple[TransferRecord, TransferMargin]]:
    """The judged transfers (not allowed for ``rule``) with their margins, when the step was simulated."""
    report = ctx.subject.report
    out = []
    for r in ctx.scheduled(rule):
        m = report.margin_for(r.judged) if r.judged is not None else None
        if m is not None:
            out.append((r, m))
    return out


def rule_min_margin(ctx: RuleContext, limit: float) -> list[Violation]:
    """Each transfer whose verdict flips within ``limit`` (a factor) of the host link's bandwidth
    or of the step's work time (``hloscope.analysis.simulate.margin``)."""
    got = _margins_of(ctx, "min-margin")
    # the smallest margin; None when every transfer's verdict holds across the whole grid
    near = min(((r, m) for r, m in got if m.margin is not None), key=lambda rm: (rm[1].margin, rm[0].instruction),
               default=None)
    ctx.readings["min-margin"] = Reading(near[1].margin, of=len(got), record=near[0]) if near else \
        Reading(None, of=len(got))
    out: list[Violation] = []
    for r, m in got:
        x = m.margin
        if x is not None and x < limit:
            out += ctx.keep(Violation("min-margin", Finding.MARGIN, r.judged, x, limit, r, args=(("margin", m),)))
    return out


def rule_max_marginal_us(ctx: RuleContext, limit: float) -> list[Violation]:
    """The transfer that costs the simulated step most (its marginal cost per step) costs at most ``limit`` us."""
    got = _margins_of(ctx, "max-marginal-us")
    if not got:
        ctx.readings["max-marginal-us"] = Reading(None, of=0)
        return []
    r, m = max(got, key=lambda rm: (rm[1].marginal_us, rm[0].instruction))
    ctx.readings["max-marginal-us"] = Reading(m.marginal_us, of=len(got), record=r)
    if m.marginal_us <= limit:
        return []
    return ctx.keep(Violation("max-marginal-us", Finding.MARGINAL_US, r.judged, m.marginal_us, limit, r,
                              args=(("margin", m),)))


def rule_no_unread_host_writes(ctx: RuleContext, on: bool) -> list[Violation]:
    """Every byte written to host is read back (``hloscope.analysis.structure.unread``): one violation per write
    with bytes nothing reads, naming the bytes and the D->H link time per step."""
    if not on:
        return []
    unread = ctx.subject.report.unread
    ctx.readings["no-unread-host-writes"] = Reading(float(unread.unread_bytes), limit=float(unread.written_bytes))
    out: list[Violation] = []
    for w in unread.writes:
        t = w.transfer
        record = next((r for r in ctx.records
                       if r.instruction == t.instruction.name and r.computation == t.computation), None)
        out += ctx.keep(Violation("no-unread-host-writes", Finding.UNREAD_WRITE, record.judged if record else None,
                                  float(w.unread_bytes), 0.0, record, args=(("write", w),)))
    return out


def rule_max_call_host_us(ctx: RuleContext, limit: float) -> list[Violation]:
    """The host work the runtime adds to every call (mapping the step's new pinned-host outputs for DMA,
    ``hloscope.analysis.host_call``) is at most ``limit`` us; one violation naming the buffers."""
    call = ctx.subject.report.host_call
    if call.host_us is None:
        why = ("the module does not say which outputs alias arguments (no entry_computation_layout)"
               if not call.buffers.aliases_known else f"{ctx.subject.report.target.name} has no measured figure "
               "for it (host_map_bandwidth)")
        raise HloscopeError(f"max-call-host-us cannot be evaluated on {ctx.subject.label}: {why}", EXIT_BAD_INPUT)
    ctx.readings["max-call-host-us"] = Reading(call.host_us, of=len(call.fresh))
    if call.host_us <= limit:
        return []
    return [Violation("max-call-host-us", Finding.CALL_HOST_US, actual=call.host_us, limit=limit,
                      args=(("call", call),))]


RULES: dict[str, Rule] = {r.name: r for r in (
    Rule("no-sync", "bool", rule_no_sync),
    Rule("no-exposed", "bool", rule_no_exposed),
    Rule("max-exposed-us", "float", rule_max_exposed_us),
    Rule("max-exposed-fraction", "fraction", rule_max_exposed_fraction),
    Rule("min-hidden-fraction", "fraction", rule_min_hidden_fraction),
    Rule("expect-offloaded", "names", rule_expect_offloaded),
    Rule("min-offloaded-bytes", "bytes", rule_min_offloaded_bytes),
    Rule("annotations-accounted", "bool", rule_annotations_accounted, needs="unoptimized"),
    Rule("intent-accounted", "bool", rule_intent_accounted),
    Rule("preset-names-tagged", "bool", rule_preset_names_tagged),
    Rule("fits-hbm", "bool", rule_fits_hbm, needs="memory"),
    Rule("fits-host-pool", "bool", rule_fits_host_pool, needs="memory"),
    Rule("min-margin", "factor", rule_min_margin),
    Rule("max-marginal-us", "float", rule_max_marginal_us),
    Rule("no-unread-host-writes", "bool", rule_no_unread_host_writes),
    Rule("max-call-host-us", "float", rule_max_call_host_us),
)}
