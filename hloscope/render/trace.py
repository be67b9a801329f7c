"""A simulated step as Chrome Trace Event JSON, for ui.perfetto.dev and chrome://tracing.

Renderer: ``TraceRenderer().render(report, out, options)``, like every format
(``hloscope.render.RENDERERS["trace"]``); :func:`trace_json` does the work on a
timeline. A report without a simulated step (an unscheduled module) is an
error (exit 2).

Layout: one process per :class:`~hloscope.analysis.structure.opclass.Resource` of the
:class:`~hloscope.analysis.simulate.timeline.Timeline` (compute stream, collective
stream, async stream, host link D->H, host link H->D), so each resource is one
track group in the viewer. Slices that overlap
on one resource (transfers sharing a link) go to separate threads ("lanes") of
its process, because a thread's complete events must nest. Times are
microseconds, the format's unit. Every transfer and collective slice carries its
bytes, and a transfer its verdict (the report's, judged with the report's
thresholds), its wait and its source line in ``args``; a flow arrow runs from the transfer's start (a
zero-length marker on the compute stream) through its link slice to its done.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from hloscope.analysis.measured.compare import MeasuredLine
from hloscope.analysis.simulate.timeline import Slice, SliceKind, Timeline, TransferTiming
from hloscope.analysis.simulate.verdict import DEFAULT_THRESHOLDS, Thresholds, verdict_from_wait
from hloscope.analysis.structure.opclass import RESOURCES, Resource
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.model import Module
from hloscope.hlo.op_time import OpRun
from hloscope.render.options import RenderOptions

if TYPE_CHECKING:
    from hloscope.analysis.report import Report

_PID_BASE = 1


def _lanes(slices: Sequence[Slice | OpRun[MeasuredLine]]) -> list[int]:
    """A lane per slice such that slices in one lane never overlap (greedy, in start order)."""
    ends: list[float] = []
    out = []
    for s in slices:
        for i, end in enumerate(ends):
            if end <= s.start_us:
                ends[i] = s.end_us
                out.append(i)
                break
        else:
            ends.append(s.end_us)
            out.append(len(ends) - 1)
    return out


def _stream_lanes(slices: tuple[Slice, ...],
                  transfers: Mapping[tuple[str, str], TransferTiming]) -> tuple[list[int], list[str]] | None:
    """Lanes grouped by XLA execution stream for a host link's transfers (``compute:2``; a copy queued
    behind another on its stream is issued while that one still runs, so a stream may need a second
    lane, ``compute:2 (2)``), when every slice knows its stream; else None."""
    streams: list[str] = []
    for s in slices:
        t = transfers.get((s.computation, s.name))
        if t is None or t.stream is None:
            return None
        streams.append(t.stream.label)
    ends: dict[tuple[str, int], float] = {}
    keys: list[tuple[str, int]] = []
    for s, label in zip(slices, streams, strict=True):
        k = 0
        while ends.get((label, k), float("-inf")) > s.start_us + 1e-9:
            k += 1
        ends[(label, k)] = s.end_us
        keys.append((label, k))
    order = sorted(set(keys))
    names = [label if k == 0 else f"{label} ({k + 1})" for label, k in order]
    return [order.index(key) for key in keys], names


def report_verdicts(report: Report) -> dict[tuple[str, str], str]:
    """The report's verdict of each transfer, keyed by (computation, start instruction)."""
    return {(v.transfer.computation, v.transfer.instruction.name): str(v.verdict) for v in report.verdicts}


class TraceRenderer:
    """Trace Event Format (JSON object form) of a report's simulated step."""

    name = "trace"
    extension = ".json"

    def render(self, report: Report, out: TextIO, options: RenderOptions) -> None:
        del options  # nothing to choose: the trace holds every slice
        if report.timeline is None:
            raise HloscopeError("no simulated step to trace (the module is not scheduled)", EXIT_BAD_INPUT)
        measured = report.measured.profile.intervals if report.measured is not None else ()
        out.write(trace_json(report.timeline, report.module, report_verdicts(report), report.options.thresholds,
                             measured))


def trace_json(timeline: Timeline, module: Module | None = None,
               verdicts: Mapping[tuple[str, str], str] | None = None,
               thresholds: Thresholds = DEFAULT_THRESHOLDS, measured: Sequence[OpRun[MeasuredLine]] = ()) -> str:
    """The trace as JSON text. ``module`` adds source lines; ``verdicts`` (keyed by (computation,
    start)) are the transfers' verdicts; a transfer without one is judged from its simulated wait
    with ``thresholds``. ``measured``: op intervals of a measured execution (``Report.measured``),
    drawn as their own process ("measured (GPU)") below the simulated ones, on the same clock
    (µs from the step's start)."""
    return _Trace(module, verdicts or {}, thresholds).json(timeline, measured)


class _Trace:
    def __init__(self, module: Module | None, verdicts: Mapping[tuple[str, str], str],
                 thresholds: Thresholds) -> None:
        self.module = module
        self.verdicts = verdicts
        self.thresholds = thresholds

    def json(self, timeline: Timeline, measured: Sequence[OpRun[MeasuredLine]] = ()) -> str:
        module = self.module
        events: list[dict[str, Any]] = []
        tids: dict[tuple[Resource, int], tuple[int, int]] = {}
        by_name = {(t.computation, t.start): t for t in timeline.transfers.values()}
        link_slice: dict[tuple[str, str], tuple[int, int, Slice]] = {}
        for r_index, res in enumerate(r for r in RESOURCES if r in timeline.slices):
            pid = _PID_BASE + r_index
            events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": str(res)}})
            events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                           "args": {"sort_index": r_index}})
            slices = timeline.slices[res]
            lanes = _lanes(slices) if res is not Resource.COMPUTE else [0] * len(slices)
            per_stream = (_stream_lanes(slices, by_name)
                          if res in (Resource.LINK_TO_HOST, Resource.LINK_TO_DEVICE) else None)
            if per_stream is not None:
                lanes = per_stream[0]
            for lane in sorted(set(lanes)):
                tids[(res, lane)] = (pid, lane + 1)
                label = (f"{res} · {per_stream[1][lane]}" if per_stream is not None
                         else res if lane == 0 else f"{res} ({lane + 1})")
                events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": lane + 1,
                               "args": {"name": label}})
            for s, lane in zip(slices, lanes, strict=True):
                pid, tid = tids[(res, lane)]
                events.append(self._slice(s, pid, tid, by_name))
                if s.kind == SliceKind.TRANSFER:
                    link_slice[(s.computation, s.name)] = (pid, tid, s)
        self._flows(events, timeline, tids, link_slice)
        if measured:
            self._measured(events, measured, _PID_BASE + len(RESOURCES))
        doc = {
            "traceEvents": events,
            "displayTimeUnit": "ms",
            "otherData": {
                "generator": "hloscope",
                "module": module.name if module is not None else "",
                "step_us": round(timeline.step_us, 3),
                "compute_us": round(timeline.compute_us, 3),
                "exposed_transfer_us": round(timeline.exposed_transfer_us, 3),
                "exposed_collective_us": round(timeline.exposed_collective_us, 3),
                "link_mode": timeline.link_mode,
                "extrapolated_loops": [f"{lp.instruction}: {lp.simulated} of {lp.trip_count} iterations simulated"
                                       for lp in timeline.loops if lp.extrapolated],
                "note": "simulated from a roofline cost model, not measured",
            },
        }
        return json.dumps(doc, separators=(",", ":")) + "\n"

    @staticmethod
    def _measured(events: list[dict[str, Any]], measured: Sequence[OpRun[MeasuredLine]], pid: int) -> None:
        """The measured execution's ops, one lane per set of non-overlapping ones."""
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "measured (GPU)"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                       "args": {"sort_index": len(RESOURCES)}})
        ordered = sorted(measured, key=lambda iv: iv.start_us)
        lanes = _lanes(ordered)
        for lane in sorted(set(lanes)):
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": lane + 1,
                           "args": {"name": "measured" if lane == 0 else f"measured ({lane + 1})"}})
        for iv, lane in zip(ordered, lanes, strict=True):
            events.append({"ph": "X", "name": iv.name, "cat": "measured", "pid": pid, "tid": lane + 1,
                           "ts": round(iv.start_us, 3), "dur": round(iv.end_us - iv.start_us, 3)})

    def _slice(self, s: Slice, pid: int, tid: int, transfers: Mapping[tuple[str, str], TransferTiming],
               ) -> dict[str, Any]:
        module = self.module
        args: dict[str, Any] = {"computation": s.computation}
        if s.iteration >= 0:
            args["iteration"] = s.iteration
        name = s.name
        if s.kind == SliceKind.WAIT:
            name = f"wait: {s.name}"
        elif s.kind == SliceKind.EXTRAPOLATED:
            name = f"{s.name}: iterations extrapolated"
        elif s.kind in (SliceKind.TRANSFER, SliceKind.COLLECTIVE, SliceKind.ASYNC):
            args["bytes"] = s.bytes
        elif s.kind == SliceKind.COMPUTE:
            args["hbm_bytes"] = s.bytes
        key = (s.computation, s.name)
        if s.kind == SliceKind.TRANSFER and key in transfers:
            t = transfers[key]
            verdict = self.verdicts.get(key) or str(verdict_from_wait(t.transfer_us, t.mean_wait_us, self.thresholds))
            args.update(direction=str(t.direction), verdict=verdict, transfer_us=round(t.transfer_us, 3),
                        wait_us=round(t.wait_us, 3), executions=t.executions, done=t.done or "")
        if module is not None and s.kind in (SliceKind.TRANSFER, SliceKind.COLLECTIVE, SliceKind.ASYNC):
            comp = module.computations.get(s.computation)
            ins = comp.by_name.get(s.name) if comp is not None else None
            loc = module.source_location(ins) if ins is not None else None
            args["source"] = str(loc) if loc else ""
        return {"ph": "X", "name": name, "cat": str(s.kind), "pid": pid, "tid": tid,
                "ts": round(s.start_us, 3), "dur": round(s.end_us - s.start_us, 3), "args": args}

    @staticmethod
    def _flows(events: list[dict[str, Any]], timeline: Timeline, tids: Mapping[tuple[Resource, int], tuple[int, int]],
               link_slice: Mapping[tuple[str, str], tuple[int, int, Slice]]) -> None:
        """Start marker -> link slice -> done marker, for each transfer's last simulated execution."""
        if (Resource.COMPUTE, 0) not in tids:
            return
        cpid, ctid = tids[(Resource.COMPUTE, 0)]
        for flow_id, ((comp, start), t) in enumerate(sorted(timeline.transfers.items()), start=1):
            found = link_slice.get((comp, start))
            if found is None or not t.is_async:
                continue
            lpid, ltid, s = found
            issue, done_at = round(s.start_us, 3), round(t.done_us, 3)
            common = {"cat": "transfer", "name": start, "id": flow_id}
            events.append({"ph": "X", "name": f"start: {start}", "cat": "marker", "pid": cpid, "tid": ctid,
                           "ts": issue, "dur": 0, "args": {"computation": comp}})
            events.append({"ph": "s", "pid": cpid, "tid": ctid, "ts": issue, **common})
            events.append({"ph": "t", "pid": lpid, "tid": ltid, "ts": issue, **common})
            if t.done is not None:
                events.append({"ph": "X", "name": f"done: {t.done}", "cat": "marker", "pid": cpid, "tid": ctid,
                               "ts": done_at, "dur": 0, "args": {"computation": t.done_computation or comp}})
                events.append({"ph": "f", "bp": "e", "pid": cpid, "tid": ctid, "ts": done_at, **common})
