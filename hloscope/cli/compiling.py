"""What the commands that compile share: the compile request the options ask for, checked before
JAX starts (check_request), the JAX version note, --no-cache, and the status line naming the phase
a compile is in, and the progress bar of many compiles (compile, check, sweep, tune and tui read
them from here).

Light to import (no analysis, no JAX): ``hloscope tui`` builds its request before its first screen.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from hloscope.cli.options import args_spec, compile_target, parse_sets, scheduler_from_args
from hloscope.compile.run.devices import check_devices
from hloscope.compile.seam import jaxcompat
from hloscope.compile.seam.userfn import check_findable, split_ref
from hloscope.compile.search.sweep import FINISHED, STARTED
from hloscope.compile.tpu.slices import slice_devices
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.request import CompileRequest, Policy
from hloscope.targets import DEFAULT_TARGET, as_target

if TYPE_CHECKING:
    from rich.console import Console

    from hloscope.compile.search.sweep import Cell

#: The phases the CLI reports after the compile's own (see ``deviceless.PHASES``).
PHASE_WRITING = "writing artifacts"


class PhaseStatus:
    """A spinner on standard error naming the phase a compile is in, on a terminal only.

    Call it with a phase name as each phase starts; off a terminal (or with
    ``console=None`` and stderr not a TTY) it prints nothing. ``seen`` lists the
    phases in order either way. Use it as a context manager: the line is gone
    when the block ends, before the report is printed.
    """

    def __init__(self, console: Any = None, prefix: str = "compiling") -> None:
        if console is None and sys.stderr.isatty():
            from rich.console import Console  # lazy: rich only on a terminal

            console = Console(stderr=True)
        self.console = console
        self.prefix = prefix
        self.seen: list[str] = []
        self._status: Any = None

    def __call__(self, name: str) -> None:
        self.seen.append(name)
        if self.console is None:
            return
        text = f"{self.prefix}: {name}"
        if self._status is None:
            self._status = self.console.status(text)
            self._status.start()
        else:
            self._status.update(text)

    def __enter__(self) -> PhaseStatus:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        """Remove the status line (further phases start a new one)."""
        if self._status is not None:
            self._status.stop()
            self._status = None


def note_jax_version() -> None:
    """Say once, in one line on stderr, when the installed jax is outside the tested range or has
    known gaps (``hloscope.compile.seam.jaxcompat``; read from its metadata, jax is not imported)."""
    global _JAX_NOTED
    if _JAX_NOTED:
        return
    _JAX_NOTED = True
    note = jaxcompat.version_note(jaxcompat.installed_jax())
    if note:
        print(f"hloscope: note: {note}", file=sys.stderr)
        os.environ[jaxcompat.NOTED_ENV] = "1"  # the compile workers inherit it and do not warn again


_JAX_NOTED = False


def check_request(request: CompileRequest) -> None:
    """What a compile can be refused for before JAX starts, each in one line (exit 2): an ``--fn``
    that is not ``module:function``, has no ``--args`` or names a module that is nowhere to import,
    a ``--maxtext`` whose config file or overrides are malformed or whose Python or install cannot
    run MaxText, a device count the target's topology or the workload's shardings cannot take
    (``hloscope.compile.run.devices.check_devices``)."""
    if request.maxtext is not None:
        from hloscope.compile.maxtext import split_args  # lazy: maxtext.py loads the analysis

        split_args(request.maxtext)
    if request.fn is not None:
        split_ref(request.fn)
        if not request.args:
            raise HloscopeError("--fn needs --args describing its abstract arguments", EXIT_BAD_INPUT)
        check_findable(request.fn, request.cwd)
    check_devices(request)
    if request.maxtext is not None:
        from hloscope.compile.maxtext import check_available  # lazy: maxtext.py loads the analysis

        check_available()


def request_from_args(args: argparse.Namespace, workload: str | None = None,
                      fn: str | None = None, maxtext: tuple[str, ...] | None = None) -> CompileRequest:
    """The :class:`~hloscope.request.CompileRequest` the compile options ask for (a built-in
    ``workload``, else the user's ``fn`` with ``args.args``, else MaxText's step with ``maxtext``'s
    config and overrides), checked (:func:`check_request`)."""
    request = _request(args, workload, fn, maxtext)
    check_request(request)
    note_jax_version()
    return request


def _request(args: argparse.Namespace, workload: str | None, fn: str | None,
             maxtext: tuple[str, ...] | None = None) -> CompileRequest:
    shape = _slice(args)
    return CompileRequest(
        compile_target(args), shape.pop("devices", args.devices),
        workload=None if fn or maxtext is not None else workload,
        maxtext=maxtext,
        sets=tuple(parse_sets(args.set).items()),
        policy=Policy(args.policy) if args.policy else None, fn=fn, args=args_spec(args) or None,
        cwd=os.getcwd() if fn else None,
        scheduler=scheduler_from_args(args),
        pipelined=bool(args.pipelined_offload), xla_flags=tuple(args.xla_flag),
        memory_fraction=getattr(args, "memory_fraction", None), **shape)


def _slice(args: argparse.Namespace) -> dict[str, Any]:
    """``--topology``, ``--slices`` and ``--per-core`` as the request's layout and, with ``--topology``
    unless ``--devices`` gave a count other than its default 8, its device count as ``devices`` (a count
    that differs is refused by the TPU room)."""
    topology = getattr(args, "topology", None)
    slices = int(getattr(args, "slices", 1))
    per_core = bool(getattr(args, "per_core", False))
    if slices < 1:
        raise HloscopeError(f"--slices must be at least 1, got {slices}", EXIT_BAD_INPUT)
    layout: dict[str, Any] = {**({"slices": slices} if slices != 1 else {}), **({"per_core": True} if per_core else {})}
    if not topology and not layout:
        return {}
    devices = slice_devices(as_target(args.target), args.target or DEFAULT_TARGET, topology, slices, per_core)
    if devices is None:
        return layout
    return {"topology": str(topology), **layout, **({"devices": devices} if args.devices in (None, 8) else {})}


def progress_bar(total: int, console: Console | None = None) -> tuple[
        Callable[[str, Cell, dict[str, Any] | None], None], Callable[[Cell, str], None] | None, Callable[[], None]]:
    """(on_event, phase, stop) callbacks for run_sweep. Not on a terminal: one line per
    finished cell and no phases; on a terminal: a bar counting done / cached / failed /
    running, whose label shows the last phase a cell entered."""
    counts = {"done": 0, "cached": 0, "failed": 0, "running": 0}
    lock = threading.Lock()

    def count(kind: str, row: dict[str, Any] | None) -> None:
        with lock:
            if kind == STARTED:
                counts["running"] += 1
            elif kind == FINISHED and row is not None:
                counts["running"] -= 1
                counts["done"] += not row.get("repeat_of")  # tune: a repeat of a step is not a compile spent
                counts["cached"] += bool(row.get("cached"))
                counts["failed"] += bool(row.get("error"))

    def words() -> str:
        return (f"done {counts['done']}/{total} · cached {counts['cached']} · failed {counts['failed']} · "
                f"running {counts['running']}")

    if console is None and not sys.stderr.isatty():
        def line(kind: str, cell: Cell, row: dict[str, Any] | None) -> None:
            count(kind, row)
            if kind == FINISHED and row is not None:
                state = "failed" if row.get("error") else "cached" if row.get("cached") else "compiled"
                state += f" (the same step as {row['repeat_of']}, not counted)" if row.get("repeat_of") else ""
                print(f"[{counts['done']}/{total}] {state}: {cell.label}", file=sys.stderr)

        return line, None, lambda: None
    from rich.console import Console  # lazy: rich, only on a terminal
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # lazy: rich

    prog = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TextColumn("{task.fields[counts]}"), console=console or Console(stderr=True), transient=True)
    task = prog.add_task("compiling cells", total=total, counts=words())
    prog.start()

    def event(kind: str, cell: Cell, row: dict[str, Any] | None) -> None:
        count(kind, row)
        prog.update(task, completed=counts["done"], counts=words())

    def phase(cell: Cell, name: str) -> None:
        prog.update(task, description=f"{cell.label}: {name}")

    return event, phase, prog.stop
