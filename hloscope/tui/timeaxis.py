"""The simulated step as a time axis for the schedule view (pure: no Textual).

``TimeAxis(timeline)`` reads the compute stream's slices of
:class:`~hloscope.analysis.simulate.timeline.Timeline` once and answers, per instruction,
when it ran: start and end in µs from the step start, and the wait when the
compute stream stopped at it (a done, a synchronous transfer or collective).
A loop body runs many times in a step; the axis keeps its *last simulated
iteration* (later ones are extrapolated by the simulation, not replayed), and
``caption`` says which. An async transfer's start does no work on the compute
stream; its row shows when the compute stream reached it in that same iteration
(``Timeline.reached``), not ``TransferTiming.issue_us``: for a transfer in flight
across extrapolated iterations that is an earlier iteration's issue, and the column
ran backwards (issue 36). Nothing here re-derives the simulation: every figure is
read from the timeline.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.simulate.timeline import LoopRun, SliceKind, Timeline
from hloscope.analysis.structure.opclass import Resource


@dataclass(frozen=True, slots=True)
class OpTime:
    """When one instruction ran on the compute stream (µs from the step start).

    start_us / end_us: its slice (work, or the wait at it); wait_us: the compute
    stream's wait at it (0 for work); issued: an async transfer's start (no slice
    of its own: the time it was issued).
    """

    start_us: float
    end_us: float
    wait_us: float = 0.0
    issued: bool = False


class TimeAxis:
    """Per computation, the simulated start of each instruction of its last simulated run/iteration."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self._times: dict[str, dict[str, OpTime]] = {}
        self._iteration: dict[str, int] = {}
        for s in timeline.slices.get(Resource.COMPUTE, ()):
            if s.kind not in (SliceKind.COMPUTE, SliceKind.WAIT):
                continue
            comp = self._times.get(s.computation)
            if comp is None or self._iteration[s.computation] != s.iteration:
                comp = self._times[s.computation] = {}  # a new iteration (or run): keep only the latest
                self._iteration[s.computation] = s.iteration
            wait = s.end_us - s.start_us if s.kind is SliceKind.WAIT else 0.0
            comp[s.name] = OpTime(s.start_us, s.end_us, wait)
        for (computation, start), at in timeline.reached.items():
            comp = self._times.setdefault(computation, {})
            if start not in comp:
                comp[start] = OpTime(at, at, issued=True)
        self._loops: dict[str, LoopRun] = {lp.body: lp for lp in timeline.loops}

    def at(self, computation: str, name: str) -> OpTime | None:
        """When ``name`` of ``computation`` ran (None: no work or wait of its own, or not simulated)."""
        comp = self._times.get(computation)
        return comp.get(name) if comp is not None else None

    def has(self, computation: str) -> bool:
        return bool(self._times.get(computation))

    def caption(self, computation: str) -> str:
        """What the view's time column shows for ``computation``, in words (the border)."""
        if not self.has(computation):
            return "start µs: not reached in the simulated step"
        lp = self._loops.get(computation)
        if lp is None:
            return "start µs: simulated, from the step start"
        of = f"{lp.trip_count}" if lp.trip_known else "? (trip count unknown)"
        rest = "; the rest extrapolated" if lp.extrapolated else ""
        return f"start µs: simulated · loop body: last simulated iteration ({lp.simulated} of {of}{rest})"
