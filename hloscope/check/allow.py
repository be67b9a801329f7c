"""The allow-list: transfers a team has accepted, each with a reason.

An :class:`AllowEntry` names transfers by checkpoint name, instruction name or
source location (shell-style patterns; every field given must match) and gives
the reason. ``rules`` limits it to some rules; empty means every rule. An
allowed transfer's violation is reported as allowed, not as a failure, and the
transfer is left out of the step totals of the rules it is allowed for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from hloscope.check.keys import TransferRecord


@dataclass(frozen=True)
class AllowEntry:
    """checkpoint / instruction / source: patterns (None: any). source matches the end of
    the user's ``file:line`` (``model.py:140``) or the file alone (``model.py``, any line)."""

    reason: str
    checkpoint: str | None = None
    instruction: str | None = None
    source: str | None = None
    rules: tuple[str, ...] = ()

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in (("checkpoint", self.checkpoint), ("instruction", self.instruction),
                                          ("source", self.source)) if v]
        return ", ".join(parts)

    def covers(self, rule: str, record: TransferRecord) -> bool:
        if self.rules and rule not in self.rules:
            return False
        if self.checkpoint is not None:
            names = [n for n in (record.checkpoint, record.key.name) if n]
            if not any(fnmatchcase(n, self.checkpoint) for n in names):
                return False
        if self.instruction is not None and not fnmatchcase(record.instruction, self.instruction):
            return False
        return self.source is None or _source_matches(record.full_source, self.source)


def _source_matches(full: str, pattern: str) -> bool:
    if not full:
        return False
    file = full.rpartition(":")[0] or full
    for candidate in (full, file):
        if fnmatchcase(candidate, pattern) or fnmatchcase(candidate, "*/" + pattern) or candidate == pattern:
            return True
    return False


def find_allow(entries: Sequence[AllowEntry], rule: str, record: TransferRecord) -> AllowEntry | None:
    """The first entry that allows ``record`` for ``rule``."""
    return next((e for e in entries if e.covers(rule, record)), None)
