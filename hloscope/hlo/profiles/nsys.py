"""An nsys-jax archive's projected GPU trace to its executions.

Contract: :func:`read_nsys_events` takes the archive read once by
``hloscope.hlo.archive.nsys_archive`` and reads ``nvtx_gpu_proj_trace/trace.parquet`` (needs the
``measured`` extra: pyarrow). Module ranges ``TSL:XlaModule:#hlo_module=M,program_id=N#`` are
executions (their projected GPU duration is the step's measured time); their child ranges
``TSL:Thunk:#...hlo_op=OP...#`` are the ops, with the projected GPU start and duration of the
kernels each launched (nanoseconds in the file). Bad input is one
:class:`~hloscope.errors.HloscopeError` (exit 2).
"""

from __future__ import annotations

import io
import re
from collections import defaultdict

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.archive import TRACE_MEMBER, NsysArchive
from hloscope.hlo.profiles.events import OpEvent, ProfileEvents, group_by_run

__all__ = ["read_nsys_events"]

_MODULE_RE = re.compile(r"^TSL:XlaModule:#hlo_module=([^,#]+),program_id=(\d+)#")
_THUNK_RE = re.compile(r"hlo_op=([^,#]+)")


def _bad(source: str, what: str) -> HloscopeError:
    return HloscopeError(f"{source}: not a usable measured profile: {what}", EXIT_BAD_INPUT)


def read_nsys_events(archive: NsysArchive, kind: str) -> ProfileEvents:
    """The executions in an nsys-jax archive's projected trace."""
    path = archive.path
    try:
        # lazy: pyarrow is an optional extra (hloscope[measured])
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
            runs[rid] = (m.group(1), int(start) * 1000, int(dur) * 1000)
    thunks: dict[object, list[OpEvent]] = defaultdict(list)
    for name, start, dur, parent in zip(cols["Name"], cols["Projected Start"], cols["Projected Duration"],
                                        cols["ParentId"], strict=True):
        if name and name.startswith("TSL:Thunk:") and parent in runs:
            m = _THUNK_RE.search(name)
            if m:
                thunks[parent].append(OpEvent(m.group(1), int(start) * 1000, int(dur) * 1000))
    if not thunks:
        raise _bad(path, "no 'TSL:Thunk:#hlo_op=...#' rows under a 'TSL:XlaModule' range")
    return ProfileEvents(path, kind, group_by_run(thunks, {}, runs))
