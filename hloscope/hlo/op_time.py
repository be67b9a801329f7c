"""One op's time, whoever gives it: the record every per-op figure is carried in.

An op's time comes from several places: hloscope's cost model (``hloscope.analysis.model_profile``,
what a PGLE profile of the model holds), XLA's latency estimator read from its log
(``hloscope.hlo.xla_log``: an instruction's cost, an async start's latency), a measured profile
(``hloscope.analysis.measured``: an op's run in the median execution). Each is an :class:`OpTime`:
the instruction's name, µs and where the figure came from, as the giver's own enum (``source``:
:class:`~hloscope.analysis.model_profile.ProfileSource`, :class:`~hloscope.hlo.xla_log.CostSource`...),
so a reader asks ``t.source is CostSource.FALLBACK`` of one type. A time placed in an execution (a
measured run, from its start to its end) is an :class:`OpRun`, an ``OpTime`` with its start.

Format readers keep their raw events in their own units (``hloscope.hlo.profiles.events``: integer
picoseconds, matched exactly); an ``OpTime`` is the figure made of them, µs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Generic, TypeVar

__all__ = ["OpRun", "OpTime"]

S = TypeVar("S", bound=StrEnum)


@dataclass(frozen=True, slots=True)
class OpTime(Generic[S]):
    """One op's time. name: the instruction's name as the giver names it. us: its time, µs (one
    run; an async start's from its start to its done). source: where the figure came from, as the
    giver's enum."""

    name: str
    us: float
    source: S


@dataclass(frozen=True, slots=True)
class OpRun(OpTime[S]):
    """One run of an op placed in an execution: start_us / end_us, µs from the module's start; its
    time ``us`` is ``end_us - start_us`` (made from them, so the two ends stay exactly as read)."""

    us: float = field(init=False)
    start_us: float
    end_us: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "us", self.end_us - self.start_us)
