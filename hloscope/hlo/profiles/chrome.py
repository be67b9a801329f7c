"""``jax.profiler``'s Chrome trace JSON (``*.trace.json.gz``, or plain JSON) to its executions.

Contract: :func:`read_chrome_events` takes a :class:`~hloscope.hlo.profile_files.ProfileFile` of
form ``TRACE`` (gzip already undone by ``read_measured_file``) and reads its complete events
(``ph: X``):

- TPU processes (a ``process_name`` metadata event naming ``/device:TPU:N``): the threads
  ``XLA Modules``, ``XLA Ops`` and ``Async XLA Ops`` read as in an XSpace
  (:mod:`hloscope.hlo.profiles.tpu`): an op is named by its ``long_name`` argument (the
  instruction text), times come from the ``device_offset_ps`` / ``device_duration_ps``
  arguments, and when ``Async XLA Ops`` is empty (as ``jax.profiler`` writes it) the async ops
  are rebuilt from the starts and dones on ``XLA Ops``. When any TPU process has executions,
  those are the profile.
- Otherwise (GPU, XLA:CPU): events whose ``args`` carry ``hlo_module`` and ``hlo_op`` are ops,
  grouped into executions by ``run_id``; events with ``hlo_module`` but no ``hlo_op`` (the "XLA
  Modules" line of a GPU trace) time the executions, else an execution is the span of its ops.

Bad input (not JSON, no ``traceEvents``, an event without numeric times, no op events) is one
:class:`~hloscope.errors.HloscopeError` naming the file (exit 2).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.profile_files import ProfileFile
from hloscope.hlo.profiles import tpu
from hloscope.hlo.profiles.events import AsyncEvent, Execution, OpEvent, ProfileEvents, group_by_run

__all__ = ["read_chrome_events"]


def _bad(source: str, what: str) -> HloscopeError:
    return HloscopeError(f"{source}: not a usable measured profile: {what}", EXIT_BAD_INPUT)


def read_chrome_events(file: ProfileFile) -> ProfileEvents:
    """The executions in one Chrome trace's JSON."""
    source = file.source
    try:
        doc = json.loads(file.data)
    except ValueError as e:
        raise _bad(source, f"not JSON ({e}); is it truncated?") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise _bad(source, "no 'traceEvents' list (not a Chrome trace)")
    runs = _tpu_executions(events, source)
    if runs:
        return ProfileEvents(source, str(file.form), tuple(runs))
    return ProfileEvents(source, str(file.form), _tagged_executions(events, source))


def _times(ev: Mapping[str, Any], source: str, device_clock: bool = False) -> tuple[int, int]:
    """(start, duration) ps: ``ts``/``dur`` (µs), or with ``device_clock`` the device clock's
    arguments where the event has them (a TPU's)."""
    args = ev.get("args")
    try:
        if device_clock and isinstance(args, dict) and "device_offset_ps" in args and "device_duration_ps" in args:
            return int(args["device_offset_ps"]), int(args["device_duration_ps"])
        return round(float(ev["ts"]) * 1e6), round(float(ev.get("dur", 0)) * 1e6)
    except (KeyError, TypeError, ValueError):
        raise _bad(source, f"an event without a numeric 'ts'/'dur': {str(ev)[:80]}") from None


def _tpu_executions(events: list[Any], source: str) -> list[Execution]:
    devices: dict[object, str] = {}
    threads: dict[tuple[object, object], str] = {}
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "M" or not isinstance(ev.get("args"), dict):
            continue
        name = ev["args"].get("name")
        if ev.get("name") == "process_name" and isinstance(name, str) and tpu.is_tpu_device(name):
            devices[ev.get("pid")] = name
        elif ev.get("name") == "thread_name" and isinstance(name, str):
            threads[(ev.get("pid"), ev.get("tid"))] = name
    if not devices:
        return []
    modules: dict[object, list[tuple[str, int, int]]] = defaultdict(list)
    ops: dict[object, list[tpu.TimedText]] = defaultdict(list)
    asyncs: dict[object, list[AsyncEvent]] = defaultdict(list)
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X" or ev.get("pid") not in devices:
            continue
        pid = ev["pid"]
        line = threads.get((pid, ev.get("tid")))
        if line not in (tpu.MODULES, tpu.OPS, tpu.ASYNC_OPS):
            continue
        start, duration = _times(ev, source, device_clock=True)
        given = ev.get("args")
        args: dict[str, Any] = given if isinstance(given, dict) else {}
        text = str(args.get("long_name") or ev.get("name", ""))
        if line == tpu.MODULES:
            modules[pid].append((str(ev.get("name", "")), start, duration))
        elif line == tpu.OPS:
            ops[pid].append(tpu.TimedText(text, start, duration))
        elif "hlo_op" in args:
            asyncs[pid].append(AsyncEvent(tpu.instruction_name(text), str(args["hlo_op"]), start, duration))
    out: list[Execution] = []
    for pid, device in devices.items():
        if ops[pid]:
            timed = asyncs[pid] or tpu.asyncs_from_dones(sorted(ops[pid], key=lambda o: o.start_ps))
            out += tpu.executions(device, modules[pid], ops[pid], timed)
    return out


def _tagged_executions(events: list[Any], source: str) -> tuple[Execution, ...]:
    ops: dict[object, list[OpEvent]] = defaultdict(list)
    modules: dict[object, str] = {}
    runs: dict[object, tuple[str, int, int]] = {}
    for ev in events:
        args = ev.get("args") if isinstance(ev, dict) else None
        if not isinstance(args, dict) or ev.get("ph") != "X" or "hlo_module" not in args:
            continue
        start, duration = _times(ev, source)
        key = (str(args["hlo_module"]), str(args.get("run_id", "")))
        if "hlo_op" in args:
            ops[key].append(OpEvent(str(args["hlo_op"]), start, duration))
            modules[key] = str(args["hlo_module"])
        else:
            runs[key] = (str(args["hlo_module"]), start, duration)
    if not ops:
        raise _bad(source, "no events with an 'hlo_op' argument (a trace of XLA ops)")
    return group_by_run(ops, modules, runs)
