"""Compare a step with an earlier one: which transfers got worse, which offloads came or went.

``compare(base, new, tolerance) -> BaselineDiff``. Both sides are
:class:`Snapshot` s: records of every transfer plus step totals, taken from a
live step (:func:`snapshot_from_subject`) or from a JSON report file
(:func:`load_snapshot`), so a committed ``report.json`` is a baseline.

Transfers are paired by what they are (:mod:`hloscope.check.pairing`), never by XLA's
instruction numbers: checkpoint name where both sides know it, else source line (lines
shifted by an edit above are aligned), direction, bytes and op kind. Two transfers of
different bytes are never the same transfer. What is left is a lost (baseline only) or a
new (new step only) offload.

A change is a regression when a transfer's verdict got worse, its exposed time
per step grew by more than the tolerance, an offload was lost or appeared, the
step's exposed time grew by more than the tolerance, or the device allocation
grew by more than the memory tolerance (or stopped fitting).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from hloscope.check.keys import TransferRecord, records_from_json, records_from_report, verdict_rank
from hloscope.check.pairing import pair_transfers
from hloscope.check.subject import Subject
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.units import JSON_US_DIGITS, human_bytes, human_us


@dataclass(frozen=True)
class Snapshot:
    """One side of a comparison. device_bytes / fits: None when the side has no memory figures."""

    label: str
    records: tuple[TransferRecord, ...]
    device_bytes: int | None = None
    hbm_bytes: int | None = None
    fits: bool | None = None

    @property
    def exposed_us_per_step(self) -> float:
        return sum(r.exposed_us_per_step for r in self.records)

    @property
    def has_exposed(self) -> bool:
        """Every record carries the analysis's own exposed figure (not only transfer and hidden)."""
        return all(r.exposed_us is not None for r in self.records)


@dataclass(frozen=True)
class Tolerance:
    """exposed_us / exposed_fraction: a growth of exposed time per step is a regression only when
    larger than both. memory_growth: allowed growth of the device allocation (a fraction of it; not
    --memory-fraction, the share of the HBM JAX's allocator takes)."""

    exposed_us: float = 1.0
    exposed_fraction: float = 0.05
    memory_growth: float = 0.01

    def exceeded(self, before: float, after: float) -> bool:
        return after - before > max(self.exposed_us, self.exposed_fraction * before)


class ChangeKind(StrEnum):
    WORSE = "worse"  # verdict got worse
    BETTER = "better"
    MORE_EXPOSED = "more_exposed"  # same verdict, more exposed time than the tolerance
    LESS_EXPOSED = "less_exposed"
    LOST = "lost"  # in the baseline only
    NEW = "new"  # in the new step only
    MOVED = "moved"  # matched, but its source line changed
    STEP_EXPOSED = "step_exposed"  # step total exposed time grew beyond the tolerance
    MEMORY = "memory"  # device allocation grew beyond the tolerance, or stopped fitting


#: Change kinds that fail a check.
REGRESSIONS = frozenset({ChangeKind.WORSE, ChangeKind.MORE_EXPOSED, ChangeKind.LOST, ChangeKind.NEW,
                         ChangeKind.STEP_EXPOSED, ChangeKind.MEMORY})


@dataclass(frozen=True)
class Change:
    """kind: see :class:`ChangeKind`. base / new: the transfer on each side (None when absent
    or step-wide). before / after: the compared figures (verdicts, µs per step, bytes)."""

    kind: ChangeKind
    base: TransferRecord | None = None
    new: TransferRecord | None = None
    before: str = ""
    after: str = ""

    @property
    def regression(self) -> bool:
        return self.kind in REGRESSIONS


@dataclass(frozen=True)
class BaselineDiff:
    base: Snapshot
    new: Snapshot
    pairs: tuple[tuple[TransferRecord, TransferRecord], ...]
    changes: tuple[Change, ...]

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.regression]


def snapshot_from_subject(subject: Subject) -> Snapshot:
    """The step's snapshot with its figures as its JSON report (a baseline written from it) holds them,
    so a baseline read back reads the same totals: the sums of unrounded figures differed in the last
    digit shown (a baseline written at 16.7 us/step was read back as 16.8)."""
    m = subject.memory
    return Snapshot(subject.label, tuple(records_from_report(subject.report, JSON_US_DIGITS)),
                    m.device_allocation_bytes if m is not None else None, m.hbm_bytes if m is not None else None,
                    m.fits if m is not None else None)


def _json_memory(data: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(device allocation, HBM) from a JSON report's ``memory`` facts or its compile figures."""
    m = data.get("memory")
    if isinstance(m, Mapping) and isinstance(m.get("device_allocation_bytes"), int):
        return m["device_allocation_bytes"], m.get("hbm_bytes")
    c = data.get("compile")
    cm = c.get("memory") if isinstance(c, Mapping) else None
    if isinstance(cm, Mapping) and isinstance(cm.get("temp_size_in_bytes"), int):
        g = cm.get
        return (int(g("argument_size_in_bytes", 0)) + int(g("temp_size_in_bytes", 0))
                + int(g("output_size_in_bytes", 0)) - int(g("alias_size_in_bytes", 0))), None
    return None, None


def snapshot_from_json(data: Mapping[str, Any], label: str) -> Snapshot:
    device, hbm = _json_memory(data)
    fits = device <= hbm if device is not None and isinstance(hbm, int) else None
    return Snapshot(label, tuple(records_from_json(data, label)), device, hbm, fits)


def load_snapshot(path: str) -> Snapshot:
    """A JSON report file (``hloscope analyze --json -o``, ``check --write-baseline``, an artifact's report.json)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise HloscopeError(f"{path}: no such baseline file (create one with "
                            "`hloscope check ... --write-baseline FILE`)", EXIT_BAD_INPUT) from None
    except (OSError, UnicodeDecodeError) as e:
        raise HloscopeError(f"{path}: cannot read: {e}", EXIT_BAD_INPUT) from None
    except ValueError as e:
        raise HloscopeError(f"{path}: not JSON ({e}); a baseline is a JSON report", EXIT_BAD_INPUT) from None
    if not isinstance(data, dict):
        raise HloscopeError(f"{path}: not a JSON report object", EXIT_BAD_INPUT)
    return snapshot_from_json(data, path)


def match(base: tuple[TransferRecord, ...], new: tuple[TransferRecord, ...]
          ) -> tuple[list[tuple[TransferRecord, TransferRecord]], list[TransferRecord], list[TransferRecord]]:
    """(pairs, baseline only, new only): :func:`~hloscope.check.pairing.pair_transfers`."""
    p = pair_transfers(base, new)
    return list(p.pairs), list(p.lost), list(p.added)


def _us(x: float) -> str:
    return f"{human_us(x)}/step"  # the one time formatter (units.human_us)


def compare(base: Snapshot, new: Snapshot, tolerance: Tolerance | None = None) -> BaselineDiff:
    tol = tolerance or Tolerance()
    pairs, lost, added = match(base.records, new.records)
    changes: list[Change] = []
    # A baseline without per-transfer exposed figures is compared on window figures on both sides.
    same_terms = base.has_exposed and new.has_exposed

    def exposed(r: TransferRecord) -> float:
        return r.exposed_us_per_step if same_terms else r.window_exposed_us_per_step()

    for b, n in pairs:
        rb, rn = verdict_rank(b.verdict), verdict_rank(n.verdict)
        if rn < rb:
            changes.append(Change(ChangeKind.WORSE, b, n, str(b.verdict), str(n.verdict)))
        elif rn > rb:
            changes.append(Change(ChangeKind.BETTER, b, n, str(b.verdict), str(n.verdict)))
        elif tol.exceeded(exposed(b), exposed(n)):
            changes.append(Change(ChangeKind.MORE_EXPOSED, b, n, _us(exposed(b)), _us(exposed(n))))
        elif tol.exceeded(exposed(n), exposed(b)):
            changes.append(Change(ChangeKind.LESS_EXPOSED, b, n, _us(exposed(b)), _us(exposed(n))))
        if b.key.source != n.key.source:
            changes.append(Change(ChangeKind.MOVED, b, n, b.key.source or "?", n.key.source or "?"))
    changes += [Change(ChangeKind.LOST, b, None, str(b.verdict), "") for b in lost]
    changes += [Change(ChangeKind.NEW, None, n, "", str(n.verdict)) for n in added]
    before, after = sum(map(exposed, base.records)), sum(map(exposed, new.records))
    if tol.exceeded(before, after):
        changes.append(Change(ChangeKind.STEP_EXPOSED, before=_us(before), after=_us(after)))
    if base.device_bytes is not None and new.device_bytes is not None:
        grew = new.device_bytes > base.device_bytes * (1.0 + tol.memory_growth)
        if grew or (base.fits is True and new.fits is False):
            changes.append(Change(ChangeKind.MEMORY, before=_mem(base), after=_mem(new)))
    return BaselineDiff(base, new, tuple(pairs), tuple(changes))


def _mem(s: Snapshot) -> str:
    fits = "" if s.fits is None else (" (fits)" if s.fits else " (does NOT fit)")
    return f"{human_bytes(s.device_bytes or 0)} device allocation{fits}"
