"""How a TPU profile names and times things, for both of ``jax.profiler``'s files (XSpace and Chrome trace).

Contract: a TPU's events sit on a plane (XSpace) or process (Chrome trace) named
``/device:TPU:N``, on lines:

- ``XLA Modules``: one event per execution of a module, named ``MODULE(PROGRAM_ID)``
  (``jit_step(9405657973915500865)``); :func:`module_name` keeps ``MODULE``.
- ``XLA Ops``: the TensorCore's ops, one after the other. The event's name is the whole
  instruction text (``%copy-start = (...) copy-start(...)``; the Chrome trace keeps it in the
  ``long_name`` argument): :func:`instruction_name` reads the name before ``=``. A done's event
  lasts as long as the TensorCore waited there.
- ``Async XLA Ops``: each run of an async op, named like its start and carrying an ``hlo_op``
  stat that names its done, from the start's issue to the end of its done. The Chrome trace
  ``jax.profiler`` writes leaves this line empty; :func:`asyncs_from_dones` rebuilds it from
  ``XLA Ops`` (in the run read for the tests, the two agree event for event).
- ``Steps``: the step markers (not read: an execution is the module's event).

Times are the device clock's: the ``device_offset_ps`` and ``device_duration_ps`` stats (both
files carry them), else the event's own. An op or async op belongs to the execution its start
falls in; events outside every execution are left out.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass

from hloscope.hlo.profiles.events import AsyncEvent, Execution, OpEvent

__all__ = ["ASYNC_OPS", "MODULES", "OPS", "TimedText", "asyncs_from_dones", "executions", "instruction_name",
           "is_tpu_device", "module_name"]

MODULES = "XLA Modules"
OPS = "XLA Ops"
ASYNC_OPS = "Async XLA Ops"

_DEVICE_RE = re.compile(r"^/device:TPU:\d+$")
_NAME_RE = re.compile(r"^\s*%?([^\s=%(),]+)\s*=\s")
_PROGRAM_RE = re.compile(r"\(\d+\)$")
#: A done's single operand: the first instruction name after ``...-done(`` (its shape comes first).
_DONE_RE = re.compile(r"\s[a-z-]*-done\([^%]*%([^\s,()]+)")
_START_RE = re.compile(r"\s[a-z-]*-start\(")


@dataclass(frozen=True, slots=True)
class TimedText:
    """One ``XLA Ops`` event: the instruction text, its start and duration (ps)."""

    text: str
    start_ps: int
    duration_ps: int


def is_tpu_device(name: str) -> bool:
    """A TPU's plane or process name (``/device:TPU:0``)."""
    return bool(_DEVICE_RE.match(name))


def instruction_name(text: str) -> str:
    """The instruction an ``XLA Ops`` event names: the name before ``=`` in its text, else the text."""
    m = _NAME_RE.match(text)
    return m.group(1) if m else text.strip()


def module_name(event_name: str) -> str:
    """The module of an ``XLA Modules`` event (its program id dropped)."""
    return _PROGRAM_RE.sub("", event_name)


def asyncs_from_dones(ops: Sequence[TimedText]) -> list[AsyncEvent]:
    """The ``Async XLA Ops`` line rebuilt from ``XLA Ops`` (in start order): each done is paired
    with the earliest run of its start not yet done (async ops of one instruction finish in
    order), and the async op lasts from that start's issue to the done's end."""
    pending: dict[str, deque[int]] = defaultdict(deque)
    out: list[AsyncEvent] = []
    for op in ops:
        m = _DONE_RE.search(op.text)
        if m is None:
            if _START_RE.search(op.text):
                pending[instruction_name(op.text)].append(op.start_ps)
            continue
        start = m.group(1)
        if pending[start]:
            begin = pending[start].popleft()
            out.append(AsyncEvent(start, instruction_name(op.text), begin, op.start_ps + op.duration_ps - begin))
    return out


def executions(device: str, modules: Sequence[tuple[str, int, int]], ops: Sequence[TimedText],
               asyncs: Sequence[AsyncEvent]) -> list[Execution]:
    """One device's executions: ``modules`` its ``XLA Modules`` events (name, start, duration),
    each with the ops and async ops that start inside it."""
    runs = sorted(modules, key=lambda m: m[1])
    begins = [s for _, s, _ in runs]
    op_rows: list[list[OpEvent]] = [[] for _ in runs]
    async_rows: list[list[AsyncEvent]] = [[] for _ in runs]

    def run_of(t: int) -> int | None:
        i = bisect.bisect_right(begins, t) - 1
        return i if i >= 0 and t < runs[i][1] + runs[i][2] else None

    for op in sorted(ops, key=lambda o: o.start_ps):
        i = run_of(op.start_ps)
        if i is not None:
            op_rows[i].append(OpEvent(instruction_name(op.text), op.start_ps, op.duration_ps, op.text))
    for a in sorted(asyncs, key=lambda a: a.start_ps):
        i = run_of(a.start_ps)
        if i is not None:
            async_rows[i].append(a)
    return [Execution(module_name(name), device, start, duration, tuple(op_rows[i]), tuple(async_rows[i]))
            for i, (name, start, duration) in enumerate(runs)]
