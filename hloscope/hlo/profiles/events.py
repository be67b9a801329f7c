"""What a measured profile holds, whatever its format: the executions of modules and their timed ops.

Contract: each format reader of :mod:`hloscope.hlo.profiles` returns one :class:`ProfileEvents`;
``hloscope.analysis.measured`` turns it into per-op statistics and never sees the format.
Times are integer picoseconds (XSpace's own unit; the TPU's device clock is in ps), from an
origin of the profile's choosing that is the same for every event of one file.

:func:`group_by_run` is the rule of GPU and CPU profiles (events carrying ``hlo_module`` and
``hlo_op``), shared by the XSpace and Chrome trace readers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["AsyncEvent", "Execution", "OpEvent", "ProfileEvents", "group_by_run"]


@dataclass(frozen=True, slots=True)
class OpEvent:
    """One run of an op: name (the instruction's), start and duration (ps); text: the whole
    instruction text where the profile names the op by it (a TPU's "XLA Ops"), else ""."""

    name: str
    start_ps: int
    duration_ps: int
    text: str = ""


@dataclass(frozen=True, slots=True)
class AsyncEvent:
    """One run of an async op, timed apart from the ops of the compute stream (a TPU's "Async
    XLA Ops" line): start / done the instruction names of its start and done; from the start's
    issue to the end of its done (ps)."""

    start: str
    done: str
    start_ps: int
    duration_ps: int


@dataclass(frozen=True)
class Execution:
    """One execution of one module.

    module: its name as the profile gives it. device: the plane or process it ran on ("" where
    the format merges devices). start_ps / duration_ps: the execution's own span (a module
    event, else the span of its ops). ops: its op events in start order. asyncs: its async ops
    timed on a line of their own (empty where the profile has none: GPU and CPU profiles).
    """

    module: str
    device: str
    start_ps: int
    duration_ps: int
    ops: tuple[OpEvent, ...]
    asyncs: tuple[AsyncEvent, ...] = ()


@dataclass(frozen=True)
class ProfileEvents:
    """A measured profile's events. source: the file as messages name it. kind: its form
    (``hloscope.hlo.profile_files.ProfileForm``'s value). executions: in file order."""

    source: str
    kind: str
    executions: tuple[Execution, ...]


def group_by_run(ops: Mapping[object, Sequence[OpEvent]], modules: Mapping[object, str],
                 runs: Mapping[object, tuple[str, int, int]]) -> tuple[Execution, ...]:
    """Executions from events grouped by a run key: ``ops`` and ``modules`` (each key's module)
    from op events, ``runs`` (module, start, duration) from module events. An execution without
    a module event is the span of its ops (XLA:CPU traces have none); one without ops is kept
    (its module is another the file ran)."""
    out: list[Execution] = []
    for key, rows in ops.items():
        if key in runs:
            module, start, duration = runs[key]
        elif rows and key in modules:
            module, start = modules[key], min(r.start_ps for r in rows)
            duration = max(r.start_ps + r.duration_ps for r in rows) - start
        else:
            continue
        out.append(Execution(module, "", start, duration, tuple(sorted(rows, key=lambda r: r.start_ps))))
    out += [Execution(m, "", s, d, ()) for key, (m, s, d) in runs.items() if key not in ops]
    return tuple(out)
