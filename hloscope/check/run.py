"""Evaluate a :class:`CheckConfig` on a :class:`Subject`: the rules, then the baseline.

``run_check(subject, config, baseline=None) -> CheckResult``. With no rule configured, the
default gate (:data:`DEFAULT_RULES`) is evaluated: no synchronous transfer, no exposed one, and the
step waits on host transfers (partial ones included) at most :data:`DEFAULT_WAIT_FRACTION` of its
estimated time; the wait rule's violation says so (``default_gate`` in its args: the words say how
to loosen it). A check never passes because there was nothing to check: a module that is not
scheduled, compiled for neither a GPU nor a TPU, or has no host transfer raises :class:`NothingToCheck`
(exit 8) unless ``allow_empty``; on such a step only the rules of :data:`JUDGE_ABSENCE`
(a configured ``expect-offloaded`` stays) and the baseline are evaluated, and the check may
fail but not pass. A rule the step lacks the facts for (fits-hbm on a plain HLO file) is an
error (exit 2), never a pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from hloscope.analysis.intent.outcome import account_of
from hloscope.check.allow import AllowEntry, find_allow
from hloscope.check.baseline import BaselineDiff, Snapshot, compare, snapshot_from_subject
from hloscope.check.config import CheckConfig
from hloscope.check.keys import records_from_report
from hloscope.check.rules import (
    RULES,
    Finding,
    NothingToJudge,
    Reading,
    RuleContext,
    Violation,
    nothing_to_judge,
    unaccounted_intent,
)
from hloscope.check.subject import Subject
from hloscope.errors import EXIT_NOTHING_TO_CHECK, HloscopeError

#: The default gate's bound on waiting: the time the step waits at host-transfer dones (exposed and partial
#: transfers alike) over the estimated step. The measured TPU v5e runs (fixtures/measured/tpu_v5e/README.md)
#: waited 54% (big), 23% (square) and 3.3% (wide, the model says 7.4%) of their steps: 0.1 fails the first
#: two and passes the third, with room for the model's error.
DEFAULT_WAIT_FRACTION = 0.1
#: Rules evaluated when a check names none: every offload async, none exposed, and the step's wait bounded.
DEFAULT_RULES: dict[str, object] = {"no-sync": True, "no-exposed": True,
                                    "max-exposed-fraction": DEFAULT_WAIT_FRACTION}
#: Rules that judge a step with nothing to judge: what it should have offloaded (a lost offload
#: is a failure to report, not nothing to check). The others would pass on nothing and are left out.
JUDGE_ABSENCE = ("expect-offloaded", "min-offloaded-bytes", "intent-accounted")


class NothingToCheck(HloscopeError):
    """The step has nothing the rules could judge (exit 8 unless ``allow_empty``). ``nothing``: why;
    the faces word it (``render.check.words.nothing_to_check_words``)."""

    exit_code = EXIT_NOTHING_TO_CHECK

    def __init__(self, nothing: NothingToJudge) -> None:
        super().__init__(nothing.why.value, EXIT_NOTHING_TO_CHECK)  # (the words: render.check.words)
        self.nothing = nothing


@dataclass(frozen=True)
class CheckResult:
    """rules: the rules evaluated (name -> parameter), in table order. violations: what failed.
    allowed: violations an allow entry covers, with the entry. diff: the baseline comparison.
    empty: why there was nothing to check (None when there was), when ``allow_empty`` let it pass.
    readings: what each evaluated rule read on the step, by rule name (shown beside its setting)."""

    subject: Subject
    rules: dict[str, object]
    violations: tuple[Violation, ...]
    allowed: tuple[tuple[Violation, AllowEntry], ...] = ()
    diff: BaselineDiff | None = None
    empty: NothingToJudge | None = None
    readings: Mapping[str, Reading] = field(default_factory=dict)
    default_gate: bool = False  # the rules are the default gate's (none was configured)

    @property
    def passed(self) -> bool:
        return not self.violations


def nothing_to_check(subject: Subject) -> NothingToJudge | None:
    """Why ``subject`` has nothing to judge (:func:`~hloscope.check.rules.nothing_to_judge`), or None."""
    return nothing_to_judge(subject.report, subject.label)


def run_check(subject: Subject, config: CheckConfig, baseline: Snapshot | None = None) -> CheckResult:
    """Evaluate the configured rules (or :data:`DEFAULT_RULES`), then compare with ``baseline``."""
    empty = nothing_to_check(subject)
    rules = {name: config.rules[name] for name in RULES if name in config.rules} or dict(DEFAULT_RULES)
    default_gate = not config.rules
    if "intent-accounted" not in config.rules and account_of(subject.report) is not None:
        rules["intent-accounted"] = True  # on by default whenever the step's intent is known
    # An offload asked for that produced no transfer is a failure to report, not "nothing to check";
    # so is an offload the configuration expects, or a baseline's transfers, gone.
    lost = bool(rules.get("intent-accounted")) and bool(unaccounted_intent(subject))
    absent = {name: value for name, value in rules.items()
              if name in JUDGE_ABSENCE and (name != "intent-accounted" or lost)}
    must_fail = None  # the step is empty: the check may fail, it may not pass
    if empty and (absent or (baseline is not None and not config.allow_empty)):
        rules, must_fail, empty = absent, empty, None
    elif empty and not config.allow_empty:
        raise NothingToCheck(empty)
    for name in rules:  # fail on a missing fact before reporting anything
        needs = RULES[name].needs
        if (needs == "memory" and subject.memory is None) or (needs == "unoptimized" and subject.unoptimized is None):
            RULES[name].evaluate(RuleContext(subject, []), rules[name])  # raises the rule's own message
    pool = int(config.host_pool_gb * (1 << 30)) if config.host_pool_gb is not None else None
    ctx = RuleContext(subject, records_from_report(subject.report), config.allow, config.hbm_margin,
                      host_pool_bytes=pool, default_gate=default_gate)
    violations: list[Violation] = []
    for name, value in rules.items():
        if not empty or name == "intent-accounted":
            violations += RULES[name].evaluate(ctx, value)
    diff = None
    if baseline is not None:
        diff = compare(baseline, snapshot_from_subject(subject), config.tolerance)
        for c in diff.regressions:
            rec = c.new or c.base
            v = Violation("baseline", Finding.BASELINE, c.new.judged if c.new is not None else None, record=rec,
                          args=(("change", c),))
            entry = find_allow(config.allow, "baseline", rec) if rec is not None else None
            if entry is None:
                violations.append(v)
            else:
                ctx.allowed.append((v, entry))
    if must_fail and not violations and not ctx.allowed and not config.allow_empty:  # (an allowed one was judged)
        raise NothingToCheck(must_fail)
    return CheckResult(subject, rules, tuple(violations), tuple(ctx.allowed), diff, empty, dict(ctx.readings),
                       default_gate)
