"""What became of each host-placement annotation of the unoptimized module, as verdicts.

Pass: ``account_annotations(before, after) -> list[AnnotationFate]``: the matching of
``hloscope.analysis.intent.annotations`` (the one algorithm, shared with the offload accounting)
on two reports, each annotation and transfer given as its verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.intent.annotations import Fate, match_annotations
from hloscope.analysis.report import Report
from hloscope.analysis.simulate.verdict import Verdict

__all__ = ["AnnotationFate", "Fate", "account_annotations"]


@dataclass(frozen=True)
class AnnotationFate:
    """annotation: the unoptimized module's annotation (its verdict is ``unscheduled``).

    fate: see :class:`~hloscope.analysis.intent.annotations.Fate`. became: the optimized transfers it
    was matched to. shards: the divisor ``k`` of the partition count that matched (bytes =
    annotation / k).
    """

    annotation: Verdict
    fate: Fate
    became: tuple[Verdict, ...] = ()
    shards: int = 0


def account_annotations(before: Report, after: Report) -> list[AnnotationFate]:
    """One fate per annotation of ``before``, in its order."""
    annotations = [v for v in before.verdicts if v.transfer.is_annotation]
    by_id = {id(v.transfer): v for v in after.verdicts}
    partitions = max(before.module.num_partitions, after.module.num_partitions, 1)
    matches = match_annotations([v.transfer for v in annotations], [v.transfer for v in after.verdicts], partitions)
    return [AnnotationFate(v, m.fate, tuple(by_id[id(t)] for t in m.became), m.shards)
            for v, m in zip(annotations, matches, strict=True)]
