"""``jax.profiler``'s XSpace (``*.xplane.pb``) to its executions, without jaxlib.

Contract: :func:`read_xplane_events` takes a :class:`~hloscope.hlo.profile_files.ProfileFile`
of form ``XPLANE`` (its bytes read once by ``read_measured_file``), parses them with
:mod:`hloscope.hlo.profiles.xspace` and reads the executions:

- TPU planes (``/device:TPU:N``, :mod:`hloscope.hlo.profiles.tpu`): ``XLA Modules`` are the
  executions, ``XLA Ops`` their ops (named by the instruction text), ``Async XLA Ops`` their
  async ops (the done from the ``hlo_op`` stat). When any TPU plane has executions, those are
  the profile.
- Otherwise (GPU, XLA:CPU): every event whose own stats carry ``hlo_module`` belongs to the
  execution that stat and ``run_id`` name; with ``hlo_op`` it is an op, else it times the
  execution (else the span of its ops does: XLA:CPU traces have no module events).

Bytes that are not an XSpace, or one without such events, are one
:class:`~hloscope.errors.HloscopeError` naming the file (exit 2).
"""

from __future__ import annotations

from collections import defaultdict

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.profile_files import ProfileFile
from hloscope.hlo.profiles import tpu
from hloscope.hlo.profiles.events import AsyncEvent, Execution, OpEvent, ProfileEvents, group_by_run
from hloscope.hlo.profiles.xspace import XEvent, XPlane, XSpace, parse_xspace
from hloscope.hlo.protowire import WireError

__all__ = ["read_xplane_events"]


def _bad(source: str, what: str) -> HloscopeError:
    return HloscopeError(f"{source}: not a usable measured profile: {what}", EXIT_BAD_INPUT)


def read_xplane_events(file: ProfileFile) -> ProfileEvents:
    """The executions in one XSpace's bytes."""
    try:
        space = parse_xspace(file.data)
    except WireError as e:
        raise _bad(file.source, f"not an XSpace ({e} at byte {e.offset}); is the file truncated?") from None
    tpu_runs = _tpu_executions(space)
    if tpu_runs:
        return ProfileEvents(file.source, str(file.form), tuple(tpu_runs))
    runs = _tagged_executions(space)
    if not any(r.ops for r in runs):
        raise _bad(file.source, "no events with an 'hlo_op' stat and no TPU 'XLA Ops' line (a trace of XLA ops)")
    return ProfileEvents(file.source, str(file.form), runs)


def _device_time(ev: XEvent) -> tuple[int, int]:
    """(start, duration) ps: the device clock's stats where the event has them."""
    start, duration = ev.stats.get("device_offset_ps"), ev.stats.get("device_duration_ps")
    if isinstance(start, int) and isinstance(duration, int):
        return start, duration
    return ev.start_ps, ev.duration_ps


def _tpu_executions(space: XSpace) -> list[Execution]:
    out: list[Execution] = []
    for plane in space.planes:
        if tpu.is_tpu_device(plane.name):
            out += _tpu_plane(plane)
    return out


def _tpu_plane(plane: XPlane) -> list[Execution]:
    modules: list[tuple[str, int, int]] = []
    ops: list[tpu.TimedText] = []
    asyncs: list[AsyncEvent] = []
    for line in plane.lines:
        for ev in line.events:
            start, duration = _device_time(ev)
            if line.name == tpu.MODULES:
                modules.append((ev.name, start, duration))
            elif line.name == tpu.OPS:
                ops.append(tpu.TimedText(ev.name or ev.display_name, start, duration))
            elif line.name == tpu.ASYNC_OPS and "hlo_op" in ev.stats:
                asyncs.append(AsyncEvent(tpu.instruction_name(ev.name or ev.display_name), str(ev.stats["hlo_op"]),
                                         start, duration))
    return tpu.executions(plane.name, modules, ops, asyncs) if ops else []


def _tagged_executions(space: XSpace) -> tuple[Execution, ...]:
    ops: dict[object, list[OpEvent]] = defaultdict(list)
    modules: dict[object, str] = {}
    runs: dict[object, tuple[str, int, int]] = {}
    for plane in space.planes:
        for line in plane.lines:
            for ev in line.events:
                module = ev.stats.get("hlo_module")
                if module is None:
                    continue
                key = (str(module), str(ev.stats.get("run_id", "")))
                if "hlo_op" in ev.stats:
                    ops[key].append(OpEvent(str(ev.stats["hlo_op"]), ev.start_ps, ev.duration_ps))
                    modules[key] = str(module)
                else:
                    runs[key] = (str(module), ev.start_ps, ev.duration_ps)
    return group_by_run(ops, modules, runs)
