"""Compile options and the compile phase line, shared by compile, check, sweep and tui.

Light to import (no analysis, no JAX), so a command that only needs these starts fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from types import TracebackType
from typing import Any

from hloscope.compile.request import CompileRequest, Policy, Scheduler
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.targets import DEFAULT_TARGET

__all__ = ["PHASE_WRITING", "PhaseStatus", "add_compile_options", "fraction", "parse_sets", "request_from_args",
           "scheduler_from_args"]


def add_compile_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--devices", type=int, default=8, help="compile-only GPUs in the mesh (default 8)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a workload setting (layers=4, batch=2, seq=1024, scan=false ...)")
    p.add_argument("--policy", choices=[x.value for x in Policy], help="what to do with tagged activations")
    p.add_argument("--scheduler", choices=[s.value for s in Scheduler], default=None,
                   help="XLA's scheduler: lhs (latency hiding scheduler, the estimator XLA picks: speed-of-light "
                        "on Hopper/Blackwell), lhs-approx (LHS with XLA's approximate estimator), none (LHS "
                        "really off); default lhs")
    p.add_argument("--lhs", action=argparse.BooleanOptionalAction, default=None,
                   help="--lhs is --scheduler lhs, --no-lhs is --scheduler none")
    p.add_argument("--pipelined-offload", action=argparse.BooleanOptionalAction, default=True,
                   help="pipelined host offloading (default on)")
    p.add_argument("--xla-flag", action="append", default=[], metavar="NAME=VALUE",
                   help="extra XLA compiler option, e.g. xla_gpu_enable_while_loop_double_buffering=true")
    p.add_argument("--memory-fraction", type=fraction, default=None, metavar="F",
                   help="compile as JAX on a GPU whose allocator takes F of the HBM (XLA_PYTHON_CLIENT_MEM_FRACTION; "
                        "JAX's default 0.75): XLA's scheduler plans for it and the step must fit in it; default: "
                        "as a compile-only device, where XLA plans for 80%% of the HBM")


def fraction(text: str) -> float:
    """``--memory-fraction``: a number in (0, 1]."""
    try:
        f = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not 0 < f <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not in (0, 1] (a fraction of the HBM, e.g. 0.9)")
    return f


def parse_sets(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        k, eq, v = item.partition("=")
        if not eq or not k:
            raise HloscopeError(f"--set wants KEY=VALUE, got '{item}'", EXIT_BAD_INPUT)
        out[k.strip()] = v.strip()
    return out


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
            from rich.console import Console

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


def request_from_args(args: argparse.Namespace, workload: str | None = None,
                      fn: str | None = None) -> CompileRequest:
    """The :class:`~hloscope.compile.request.CompileRequest` the compile options ask for (a built-in
    ``workload``, else the user's ``fn`` with ``args.args``)."""
    return CompileRequest(
        args.target or DEFAULT_TARGET, args.devices, workload=None if fn else workload,
        sets=tuple(parse_sets(args.set).items()),
        policy=Policy(args.policy) if args.policy else None, fn=fn, args=getattr(args, "args", None) or None,
        cwd=os.getcwd() if fn else None,
        scheduler=scheduler_from_args(args),
        pipelined=bool(args.pipelined_offload), xla_flags=tuple(args.xla_flag),
        memory_fraction=getattr(args, "memory_fraction", None))


def scheduler_from_args(args: argparse.Namespace) -> Scheduler:
    """``--scheduler``, or ``--lhs``/``--no-lhs`` as its older spelling; both disagreeing is an error."""
    named = getattr(args, "scheduler", None)
    lhs = getattr(args, "lhs", None)
    if named is None:
        return Scheduler.from_lhs(lhs)
    chosen = Scheduler(named)
    if lhs is not None and (chosen is not Scheduler.NONE) != lhs:
        raise HloscopeError(f"--scheduler {chosen.value} contradicts --{'' if lhs else 'no-'}lhs; give one of them",
                            EXIT_BAD_INPUT)
    return chosen
