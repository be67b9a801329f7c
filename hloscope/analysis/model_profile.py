"""The cost model's per-op figures as XLA's scheduler would read a measured profile.

XLA's latency hiding scheduler takes per-instruction costs from a profile
(``--xla_gpu_pgle_profile_file_or_directory_path``, the profile-guided latency
estimator, PGLE): an instruction's ``cost_us`` replaces its estimated run time, and
an async start's ``cost_us`` the time its pair takes from start to done. On a GPU
that profile is measured; deviceless, XLA schedules with what its estimator
believes, and on targets where its speed-of-light estimator does not run (GB200
with a replica group it cannot model) a host transfer gets a fixed latency
whatever its bytes (``docs/xla-estimates.md``), so a 1 GiB copy gets the window of
a small one.

``model_profile(report)`` gives, for every instruction of the scheduled
computations that the model prices above zero, the figure the report's cost model
uses: a compute op's time, a collective's time at its start (ring over its replica
group), a host transfer's time alone on its link at its start (DMA setup plus bytes
at the link's bandwidth; with ``serialized=True``, a copy of a serial drain,
``hloscope.analysis.simulate.drain``, at its issue-to-finish time behind the others on its link,
so XLA schedules it as it will run). Compiled again with it (``hloscope compile --xla-flag
xla_gpu_pgle_profile_file_or_directory_path=FILE``), the step is scheduled as XLA
would schedule it if it knew those costs: a what-if, not a measurement. Names are
an instruction's ``scheduling_name`` (its name when the scheduler ran: XLA's
rematerialization, after scheduling, clones ``gemm_fusion_dot.114`` as
``gemm_fusion_dot.114.remat2``) where the module records one, else its name; the
first instruction of a name gives its figure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from hloscope.analysis.kinds import PairKind
from hloscope.analysis.structure.opclass import collective_kind, is_done
from hloscope.hlo.op_time import OpTime

if TYPE_CHECKING:
    from hloscope.analysis.report import Report

_SCHEDULING_NAME = re.compile(r'scheduling_name="((?:[^"\\]|\\.)*)"')

__all__ = ["ModelProfile", "ProfileSource", "model_profile"]


class ProfileSource(StrEnum):
    """What a profile entry prices."""

    COMPUTE = "compute"
    COLLECTIVE = "collective"
    HOST_TRANSFER = "host_transfer"


@dataclass(frozen=True)
class ModelProfile:
    """The model's figures for one module, in schedule order of its computations: per entry the
    instruction's name, its figure in µs and what it prices (``source``)."""

    module: str
    target: str
    costs: tuple[OpTime[ProfileSource], ...]

    def count(self, source: ProfileSource) -> int:
        return sum(1 for c in self.costs if c.source is source)

    def as_dict(self) -> dict[str, float]:
        return {c.name: c.us for c in self.costs}


def serialized_us(report: Report) -> dict[str, float]:
    """Start name -> issue-to-finish time (µs) in the simulated step of every host copy in a
    serial drain (``report.drains``): what it takes behind the others on its link."""
    if report.timeline is None:
        return {}
    drained = {s for d in report.drains for s in d.starts}
    return {t.start: t.duration_us for t in report.timeline.transfers.values() if t.start in drained}


def model_profile(report: Report, *, serialized: bool = False) -> ModelProfile:
    """Every priced instruction of ``report``'s scheduled computations with the model's figure.

    ``serialized``: a host copy of a serial drain is priced as it runs in the simulated step,
    behind the others on its link (:func:`serialized_us`), not alone on it."""
    cost, module, index = report.cost, report.module, report.index
    transfers = {t.instruction.name: t for t in report.transfers if t.is_async and not t.is_annotation}
    drained = serialized_us(report) if serialized else {}
    starts = {p.start.name: p for p in report.pairs}
    out: list[OpTime[ProfileSource]] = []
    seen: set[str] = set()
    for comp in module.computations.values():
        if not index.is_scheduled_computation(comp.name):
            continue
        for ins in comp.instructions:
            if is_done(ins) or ins.opcode == "async-update":
                continue  # an async pair is priced at its start
            pair = starts.get(ins.name)
            if ins.name in transfers:
                t = transfers[ins.name]
                us = drained.get(ins.name, cost.transfer_us(t.bytes, t.direction))
                source = ProfileSource.HOST_TRANSFER
            elif (pair is not None and pair.kind is PairKind.COLLECTIVE) or (pair is None and collective_kind(ins)):
                us = cost.collective_us(ins)
                if us <= 0:
                    continue
                source = ProfileSource.COLLECTIVE
            elif ins.opcode in ("while", "call", "conditional"):
                continue  # their bodies are scheduled on their own
            else:
                us = cost.instruction_us(ins)
                if us <= 0:
                    continue
                source = ProfileSource.COMPUTE
            m = _SCHEDULING_NAME.search(ins.attr_text)
            name = m.group(1) if m else ins.name
            if name in seen:
                continue
            seen.add(name)
            out.append(OpTime(name, us, source))
    return ModelProfile(module.name, report.target.name, tuple(out))
