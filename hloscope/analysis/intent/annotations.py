"""What became of each host-placement annotation of the unoptimized module in the optimized one.

Pass: ``match_annotations(annotations, transfers, partitions) -> list[AnnotationMatch]``; the
one algorithm the ``annotations-accounted`` check rule and the offload accounting
(``hloscope.analysis.intent.account``) both use.

Before optimization an offload is an ``annotate_device_placement`` (or
``MoveToHost``/``MoveToDevice``) custom call on the whole, unpartitioned array;
after SPMD partitioning and host offloading it is one or more transfers of a
per-device slice, possibly split between a loop body and a peeled iteration. An
annotation of ``B`` bytes executed ``n`` times per step is matched to optimized
transfers of the same direction whose bytes times some divisor ``k`` of the
partition count equal ``B`` (the slice of an array sharded ``k`` ways) and whose
executions add up to ``n``. Larger annotations are matched first; each optimized
transfer serves one annotation.

Bytes alone pair the wrong annotations when two offloads move slices of one size: a
step of two scans (DeepSeek's dense layers, then its MoE layers) tags the same value in
both, and an annotation of ``B`` bytes run once (the dense scan of 1 layer) would take a
slice of the other scan's (2 layers, whose loop XLA peeled into two transfers run once
each). So a first pass pairs an annotation only with transfers whose host buffer holds
what it places per step, ``n`` slices (``B * n / k`` bytes: a scan stacks its ``n``
iterations' values into one host buffer, a plain offload's buffer is its value), and
within that first with transfers whose source line (the line that computed the moved
value, ``HostTransfer.source``) is the annotation's: MaxText's V is computed at another
line than its Q and K, all three of one size. The annotations these passes leave are
paired by bytes alone (``AnnotationMatch.by_buffer`` False).

An annotation that finds no such transfers is ``removed`` when the transfers no
annotation matched, in its direction, move fewer bytes per step than it does (the
offload is gone), and ``unmatched`` otherwise (the bytes are there but not in slices
of the expected size, e.g. XLA merged two offloads): hloscope does not guess which.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.transfers import HostTransfer, find_host_transfers
from hloscope.hlo.model import Module


class Fate(StrEnum):
    """What the optimized module did with one placement annotation."""

    ASYNC = "async"  # became asynchronous transfer(s)
    SYNC = "sync"  # became (at least one) synchronous copy
    REMOVED = "removed"  # no transfer in the optimized module moves its bytes
    UNMATCHED = "unmatched"  # bytes remain in its direction, but not as slices of its size


@dataclass(frozen=True)
class AnnotationMatch:
    """annotation: the unoptimized module's annotation. fate: see :class:`Fate`. became: the
    optimized transfers it was matched to. shards: the divisor ``k`` of the partition count
    that matched (bytes = annotation / k), 0 when none did. by_buffer: the transfers' host
    buffer holds what the annotation places per step (the first pass of
    :func:`match_annotations`); False: bytes alone paired them. by_source: the transfers' source
    line is the annotation's too."""

    annotation: HostTransfer
    fate: Fate
    became: tuple[HostTransfer, ...] = ()
    shards: int = 0
    by_buffer: bool = False
    by_source: bool = False

    @property
    def matched(self) -> bool:
        return bool(self.became)


def placement_annotations(unoptimized: Module | ModuleIndex) -> list[HostTransfer]:
    """The host-placement annotations of a module before optimizations (or of its index), in its order."""
    index = unoptimized if isinstance(unoptimized, ModuleIndex) else ModuleIndex(unoptimized)
    return [t for t in find_host_transfers(index) if t.is_annotation]


def _divisors(n: int) -> list[int]:
    """Largest first: an array sharded over every device is the usual case."""
    return sorted((k for k in range(1, n + 1) if n % k == 0), reverse=True)


def host_buffer_bytes(t: HostTransfer) -> int | None:
    """The bytes of the host-memory buffer a transfer writes into or reads from: the largest array
    in host memory that its instruction's shape shows (an async start's shape holds its operands).
    None when the shape shows none (a synchronous copy to the device: its buffer is an operand)."""
    sizes = [leaf.byte_size for leaf in t.instruction.shape.leaves()
             if leaf.memory_space == t.host_space and leaf.dims]
    return max(sizes) if sizes else None


def _holds(a: HostTransfer, t: HostTransfer, k: int) -> bool:
    """Whether ``t``'s host buffer holds what ``a`` places per step, ``a.executions`` slices of ``a.bytes / k``."""
    return host_buffer_bytes(t) == a.bytes * a.executions // k


def _same_line(a: HostTransfer, t: HostTransfer) -> bool:
    """Both have a source line and it is the same (the two modules of one compile name one file alike)."""
    return a.source is not None and t.source is not None and (a.source.file, a.source.line) == (
        t.source.file, t.source.line)


#: The passes of :func:`match_annotations`, strongest evidence first: (by host buffer, by source line).
_PASSES = ((True, True), (True, False), (False, False))


def _fill(want: int, candidates: Sequence[HostTransfer]) -> list[HostTransfer]:
    """Transfers of ``candidates`` whose executions add up to ``want`` (the most executions first: the
    fewest transfers), or []."""
    picked: list[HostTransfer] = []
    total = 0
    for t in sorted(candidates, key=lambda t: -t.executions):
        if total + t.executions <= want:
            picked.append(t)
            total += t.executions
        if total == want:
            return picked
    return []


def _match(a: HostTransfer, candidates: Sequence[HostTransfer], partitions: int,
           by_buffer: bool = False, by_source: bool = False) -> tuple[list[HostTransfer], int]:
    for k in _divisors(partitions):
        if a.bytes % k:
            continue
        fits = [t for t in candidates if t.bytes == a.bytes // k and (not by_buffer or _holds(a, t, k))
                and (not by_source or _same_line(a, t))]
        # One annotation places one tensor: transfers that carry one checkpoint name first (MaxText's Q and
        # K slices, of one size and one line, are not mixed), then any.
        names = dict.fromkeys(t.checkpoint_name for t in fits if t.checkpoint_name is not None)
        for group in [*([t for t in fits if t.checkpoint_name == n] for n in names), fits]:
            picked = _fill(a.executions, group)
            if picked:
                return picked, k
    return [], 0


def match_annotations(annotations: Sequence[HostTransfer], transfers: Sequence[HostTransfer],
                      partitions: int) -> list[AnnotationMatch]:
    """One match per annotation, in the order of ``annotations``. ``transfers``: the optimized
    module's (its annotations, if any, are left out); ``partitions``: the larger partition count
    of the two modules."""
    free = [t for t in transfers if not t.is_annotation]
    parts = max(partitions, 1)
    out: dict[int, AnnotationMatch] = {}
    left_over = sorted(range(len(annotations)), key=lambda i: -annotations[i].bytes)
    for by_buffer, by_source in _PASSES:  # by host buffer and source line, by host buffer, by bytes alone
        todo, left_over = left_over, []
        for i in todo:
            a = annotations[i]
            if by_source and a.source is None:
                left_over.append(i)
                continue
            picked, k = _match(a, [t for t in free if t.direction is a.direction], parts, by_buffer, by_source)
            if not picked:
                left_over.append(i)
                continue
            for t in picked:
                free.remove(t)
            out[i] = AnnotationMatch(a, Fate.ASYNC if all(t.is_async for t in picked) else Fate.SYNC, tuple(picked),
                                     k, by_buffer, by_source)
    for i in left_over:
        a = annotations[i]
        left = sum(t.bytes * t.executions * parts for t in free if t.direction is a.direction)
        out[i] = AnnotationMatch(a, Fate.REMOVED if left < a.bytes * a.executions else Fate.UNMATCHED)
    return [out[i] for i in range(len(annotations))]
