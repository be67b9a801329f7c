"""Pair the transfers of two reports for Compare, with the matcher ``hloscope diff`` uses.

Pairing is ``hloscope diff``'s (``check.pairing.pair_transfers``): by checkpoint
name, else source line (shifted lines aligned), direction, bytes and op kind, never
XLA's instruction numbers. This module only turns its result into rows to show.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.report import Report
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.check.keys import TransferKey, TransferRecord, records_from_report
from hloscope.check.pairing import pair_transfers


@dataclass(frozen=True)
class Match:
    """One transfer seen in A, B or both. ``changed``: verdict differs, or exposed time per step moved."""

    key: TransferKey
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
        return abs(ea - eb) > max(0.05, 0.01 * max(ea, eb))  # beyond rounding of the estimates

    @property
    def where(self) -> str:
        return self.key.source or self.key.name or "-"


def _judged(r: TransferRecord) -> Verdict | None:
    return r.judged


def match_transfers(a: Report, b: Report) -> list[Match]:
    """Every transfer of ``a`` and ``b``: matched pairs in A's order, then A only, then B only."""
    ra, rb = tuple(records_from_report(a)), tuple(records_from_report(b))
    p = pair_transfers(ra, rb)
    out = [Match(x.key, _judged(x), _judged(y)) for x, y in p.pairs]
    out += [Match(x.key, _judged(x), None) for x in p.lost]
    out += [Match(y.key, None, _judged(y)) for y in p.added]
    return out
