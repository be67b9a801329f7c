"""Measured GPU profiles from their bytes: ``parse_measured(file)`` -> a :class:`MeasuredProfile`.

The file is read by ``hloscope.hlo.profile_files.read_measured_file``, which tells its form by
content; this module parses three of the forms and never opens a file:

- an nsys-jax archive: ``nvtx_gpu_proj_trace/trace.parquet`` (needs the ``measured`` extra:
  pyarrow). Module ranges ``TSL:XlaModule:#hlo_module=M,program_id=N#`` are executions (their
  projected GPU duration is the step's measured time); their child ranges
  ``TSL:Thunk:#...hlo_op=OP...#`` are the ops, with the projected GPU start and duration of the
  kernels each launched.
- ``jax.profiler``'s Chrome trace JSON (``*.trace.json.gz``, or plain JSON): complete events
  (``ph: X``) whose ``args`` carry ``hlo_op`` and ``hlo_module`` are ops, grouped into executions
  by ``run_id``; events with ``hlo_module`` but no ``hlo_op`` (the "XLA Modules" line of a GPU
  trace) time the executions, else an execution is the span of its ops.
- an XLA PGLE profile (``ProfiledInstructionsProto``), text or binary (``profile.pb``): one
  figure per op, no executions, no intervals.

An ``.xplane.pb`` is parsed through jaxlib by ``hloscope.compile.xplane`` (``load_measured``
there reads any measured profile). Bad input is one :class:`~hloscope.errors.HloscopeError` (exit 2).
"""

from __future__ import annotations

import io
import json
import re
from collections import defaultdict

from hloscope.analysis.cost.calibration import parse_profile_bytes
from hloscope.analysis.measured.compare import MeasuredProfile, OpStats, profile_from_events, runs_from_spans
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.archive import TRACE_MEMBER, NsysArchive
from hloscope.hlo.profile_files import ProfileFile, ProfileForm

__all__ = ["parse_measured"]

_MODULE_RE = re.compile(r"^TSL:XlaModule:#hlo_module=([^,#]+),program_id=(\d+)#")
_THUNK_RE = re.compile(r"hlo_op=([^,#]+)")


def _bad(source: str, what: str) -> HloscopeError:
    return HloscopeError(f"{source}: not a usable measured profile: {what}", EXIT_BAD_INPUT)


def parse_measured(file: ProfileFile, module_name: str = "") -> MeasuredProfile:
    """The measured profile in ``file``. ``module_name``: which module's executions to keep when
    the file has several (default: the one with the most op rows)."""
    if file.form is ProfileForm.NSYS:
        assert file.archive is not None  # read_measured_file gives an archive with this form
        return _read_nsys(file.archive, module_name)
    if file.form is ProfileForm.TRACE:
        return _read_chrome(file.data, file.source, module_name)
    if file.form is ProfileForm.XPLANE:
        raise _bad(file.source, "an .xplane.pb is read through jaxlib: hloscope analyze/calibrate do it when the "
                   "'compile' extra is installed")
    return _read_pgle(file.data, file.source)


def _read_pgle(data: bytes, source: str) -> MeasuredProfile:
    times = parse_profile_bytes(data, source)
    ops = {n: OpStats(n, us, 0.0, 1) for n, us in times.items()}
    return MeasuredProfile(source, "pgle", "", (), ops)


def _read_nsys(archive: NsysArchive, module_name: str) -> MeasuredProfile:
    path = archive.path
    try:
        import pyarrow.parquet as pq  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        raise HloscopeError(f"{path}: reading an nsys-jax archive needs pyarrow: pip install 'hloscope[measured]'",
                            EXIT_BAD_INPUT) from None
    if archive.trace is None:
        raise _bad(path, f"no {TRACE_MEMBER} in this archive (is it an nsys-jax archive?)")
    try:
        table = pq.read_table(io.BytesIO(archive.trace),
                              columns=["Name", "Projected Start", "Projected Duration", "RangeId", "ParentId"])
    except Exception as e:  # pyarrow's errors for a broken parquet file
        raise _bad(path, f"{TRACE_MEMBER} unreadable ({type(e).__name__}: {e})") from None
    cols = table.to_pydict()
    runs: dict[object, tuple[str, int, int]] = {}
    for name, start, dur, rid in zip(cols["Name"], cols["Projected Start"], cols["Projected Duration"],
                                     cols["RangeId"], strict=True):
        m = _MODULE_RE.match(name or "")
        if m and rid is not None:
            runs[rid] = (m.group(1), int(start), int(dur))
    thunks: dict[object, list[tuple[str, int, int]]] = defaultdict(list)
    for name, start, dur, parent in zip(cols["Name"], cols["Projected Start"], cols["Projected Duration"],
                                        cols["ParentId"], strict=True):
        if name and name.startswith("TSL:Thunk:") and parent in runs:
            m = _THUNK_RE.search(name)
            if m:
                thunks[parent].append((m.group(1), int(start), int(dur)))
    if not thunks:
        raise _bad(path, "no 'TSL:Thunk:#hlo_op=...#' rows under a 'TSL:XlaModule' range")
    return profile_from_events(path, "nsys", runs, thunks, module_name)


def _read_chrome(data: bytes, source: str, module_name: str) -> MeasuredProfile:
    try:
        doc = json.loads(data)
    except ValueError as e:
        raise _bad(source, f"not JSON ({e}); is it truncated?") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise _bad(source, "no 'traceEvents' list (not a Chrome trace)")
    ops: dict[object, list[tuple[str, int, int]]] = defaultdict(list)
    modules: dict[object, str] = {}
    runs: dict[object, tuple[str, int, int]] = {}
    for ev in events:
        args = ev.get("args") if isinstance(ev, dict) else None
        if not isinstance(args, dict) or ev.get("ph") != "X" or "hlo_module" not in args:
            continue
        try:
            start, dur = round(float(ev["ts"]) * 1e3), round(float(ev.get("dur", 0)) * 1e3)
        except (KeyError, TypeError, ValueError):
            raise _bad(source, f"an event without a numeric 'ts'/'dur': {str(ev)[:80]}") from None
        key = (str(args["hlo_module"]), str(args.get("run_id", "")))
        if "hlo_op" in args:
            ops[key].append((str(args["hlo_op"]), start, dur))
            modules[key] = str(args["hlo_module"])
        else:
            runs[key] = (str(args["hlo_module"]), start, dur)
    if not ops:
        raise _bad(source, "no events with an 'hlo_op' argument (a trace of XLA ops)")
    spans = runs_from_spans(ops, modules)
    return profile_from_events(source, "trace", {**spans, **runs}, ops, module_name)


