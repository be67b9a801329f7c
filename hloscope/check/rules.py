"""The rules themselves. Each takes a report (and its parameters) and returns violations.

A :class:`Violation` carries facts (rule, the verdict it concerns, measured and
allowed values); its ``message`` is worded from those facts by the rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.kinds import VerdictKind
from hloscope.analysis.report import Report
from hloscope.analysis.verdict import Verdict
from hloscope.errors import EXIT_UNKNOWN_NAME, HloscopeError


@dataclass(frozen=True)
class Violation:
    """One broken rule.

    rule: the rule's name. verdict: the transfer's verdict it concerns (None for
    step-wide rules). message: one line for a person. actual / limit: the measured
    value and the allowed one, when the rule compares numbers.
    """

    rule: str
    message: str
    verdict: Verdict | None = None
    actual: float | None = None
    limit: float | None = None


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
