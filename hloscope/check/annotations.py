"""What became of each host-placement annotation of the unoptimized module in the optimized one.

Pass: ``account_annotations(before, after) -> list[AnnotationFate]``.

Before optimization an offload is an ``annotate_device_placement`` (or
``MoveToHost``/``MoveToDevice``) custom call on the whole, unpartitioned array;
after SPMD partitioning and host offloading it is one or more transfers of a
per-device slice, possibly split between a loop body and a peeled iteration. An
annotation of ``B`` bytes executed ``n`` times per step is matched to optimized
transfers of the same direction whose bytes times some divisor ``k`` of the
partition count equal ``B`` (the slice of an array sharded ``k`` ways) and whose
executions add up to ``n``. Larger annotations are matched first; each optimized
transfer serves one annotation.

An annotation that finds no such transfers is ``removed`` when the transfers
left over in its direction move fewer bytes per step than it does (the offload
is gone), and ``unmatched`` otherwise (the bytes are there but not in slices of
the expected size, e.g. XLA merged two offloads): hloscope does not guess which.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from hloscope.analysis.report import Report
from hloscope.analysis.verdict import Verdict


class Fate(StrEnum):
    """What the optimized module did with one placement annotation."""

    ASYNC = "async"  # became asynchronous transfer(s)
    SYNC = "sync"  # became (at least one) synchronous copy
    REMOVED = "removed"  # no transfer in the optimized module moves its bytes
    UNMATCHED = "unmatched"  # bytes remain in its direction, but not as slices of its size


@dataclass(frozen=True)
class AnnotationFate:
    """annotation: the unoptimized module's annotation (its verdict is ``unscheduled``).

    fate: see :class:`Fate`. became: the optimized transfers it was matched to.
    shards: the divisor ``k`` of the partition count that matched (bytes = annotation / k).
    """

    annotation: Verdict
    fate: Fate
    became: tuple[Verdict, ...] = ()
    shards: int = 0


def _divisors(n: int) -> list[int]:
    """Largest first: an array sharded over every device is the usual case."""
    return sorted((k for k in range(1, n + 1) if n % k == 0), reverse=True)


def _match(want_bytes: int, want_execs: int, candidates: list[Verdict], partitions: int) -> tuple[list[Verdict], int]:
    for k in _divisors(partitions):
        if want_bytes % k:
            continue
        same = [v for v in candidates if v.transfer.bytes == want_bytes // k]
        picked: list[Verdict] = []
        total = 0
        # Prefer the fewest transfers: the most executions first.
        for v in sorted(same, key=lambda v: -v.transfer.executions):
            if total + v.transfer.executions <= want_execs:
                picked.append(v)
                total += v.transfer.executions
            if total == want_execs:
                return picked, k
    return [], 0


def account_annotations(before: Report, after: Report) -> list[AnnotationFate]:
    """One fate per annotation of ``before``, in its order."""
    annotations = [v for v in before.verdicts if v.transfer.is_annotation]
    free = [v for v in after.verdicts if not v.transfer.is_annotation]
    partitions = max(before.module.num_partitions, after.module.num_partitions, 1)
    matched: dict[int, AnnotationFate] = {}
    order = sorted(range(len(annotations)), key=lambda i: -annotations[i].transfer.bytes)
    unassigned: list[int] = []
    for i in order:
        a = annotations[i].transfer
        cands = [v for v in free if v.transfer.direction is a.direction]
        picked, k = _match(a.bytes, a.executions, cands, partitions)
        if not picked:
            unassigned.append(i)
            continue
        for v in picked:
            free.remove(v)
        fate = Fate.ASYNC if all(v.transfer.is_async for v in picked) else Fate.SYNC
        matched[i] = AnnotationFate(annotations[i], fate, tuple(picked), k)
    for i in unassigned:
        a = annotations[i].transfer
        left = sum(v.transfer.bytes * v.transfer.executions * partitions
                   for v in free if v.transfer.direction is a.direction)
        fate = Fate.REMOVED if left < a.bytes * a.executions else Fate.UNMATCHED
        matched[i] = AnnotationFate(annotations[i], fate)
    return [matched[i] for i in range(len(annotations))]
