"""``hloscope tui``: see :class:`TuiCommand`."""

from __future__ import annotations

import argparse

from hloscope.cli.options import add_compile_options, parse_sets
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.targets import DEFAULT_TARGET


class TuiCommand:
    """tui: browse a schedule in the terminal: transfers, verdicts, the schedule, memory.

    PATH is an HLO text file, an --xla_dump_to folder or an `hloscope compile`
    artifact folder; or --workload NAME compiles a built-in workload first (same
    options as `hloscope compile`). --compare PATH opens two schedules side by
    side. Keys: ? for help, / search, q quit.
    Exit codes: 0 ok, 2 bad input, 3 unknown name, 4-7 as for compile.
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("path", metavar="PATH", nargs="?", help="HLO text file, XLA dump folder or artifact folder")
        p.add_argument("--workload", help="compile this built-in workload or preset instead of reading PATH")
        p.add_argument("--compare", metavar="PATH", help="a second schedule to compare with")
        p.add_argument("--target",
                       help=f"target name or file (default: an artifact folder's own target, else {DEFAULT_TARGET})")
        p.add_argument("--host-memory-space", type=int, default=5, help="memory space of host memory (5)")
        add_compile_options(p)

    def run(self, args: argparse.Namespace) -> int:
        from hloscope.tui.load import Source, WorkloadSpec, check_source

        if (args.path is None) == (args.workload is None):
            raise HloscopeError("tui: give a PATH or --workload NAME (one of them)", EXIT_BAD_INPUT)
        workload = None
        if args.workload:
            workload = WorkloadSpec(args.workload, parse_sets(args.set), args.policy, args.devices, args.lhs,
                                    args.pipelined_offload, list(args.xla_flag))
        source = Source(args.path, workload, args.target, args.host_memory_space)
        check_source(source)  # one-line errors before the terminal is taken over
        compare = None
        if args.compare:
            compare = Source(args.compare, None, args.target, args.host_memory_space)
            check_source(compare)
        from hloscope.tui.app import HloscopeApp

        app = HloscopeApp(source, compare)
        app.run()
        if app.failure is not None:
            raise app.failure
        return 0
