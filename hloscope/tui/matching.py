"""Match the transfers of two reports (Compare): by checkpoint name and source, then by order.

A transfer's key is (direction, checkpoint name or "", source ``file:line`` or
the op's ``op_name``); transfers with equal keys are paired in schedule order,
so a peeled copy pairs with a peeled copy. Used until ``hloscope.check`` grows
its own matcher (``match_transfers``), which this module defers to when present.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.report import Report
from hloscope.analysis.verdict import Verdict

Key = tuple[str, str, str]


@dataclass(frozen=True)
class Match:
    """One transfer seen in A, B or both. ``changed``: verdict differs or exposed time moved by > 1%."""

    key: Key
    a: Verdict | None
    b: Verdict | None

    @property
    def changed(self) -> bool:
        if self.a is None or self.b is None:
            return True
        if self.a.verdict is not self.b.verdict:
            return True
        ea = self.a.est_exposed_us * self.a.transfer.executions
        eb = self.b.est_exposed_us * self.b.transfer.executions
        return abs(ea - eb) > 0.01 * max(ea, eb, 1e-9) and abs(ea - eb) > 0.05


def transfer_key(report: Report, v: Verdict) -> Key:
    t = v.transfer
    loc = report.source(v)
    where = str(loc) if loc is not None else t.instruction.metadata.get("op_name", "")
    return (t.direction.value, str(getattr(t, "checkpoint_name", None) or ""), where)


def match_transfers(a: Report, b: Report) -> list[Match]:
    """Every transfer of ``a`` and ``b``, paired where their keys agree; A's order, then B's leftovers."""
    pending: dict[Key, list[Verdict]] = {}
    for v in b.verdicts:
        pending.setdefault(transfer_key(b, v), []).append(v)
    out: list[Match] = []
    for v in a.verdicts:
        k = transfer_key(a, v)
        lst = pending.get(k)
        out.append(Match(k, v, lst.pop(0) if lst else None))
    for k, lst in pending.items():
        out.extend(Match(k, None, v) for v in lst)
    return out
