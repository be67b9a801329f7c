"""``hloscope tui``: see :class:`TuiCommand`."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from multiprocessing import resource_tracker
from pathlib import Path

from hloscope.cli.archive import is_nsys_archive
from hloscope.cli.options import (
    add_compile_options,
    add_host_memory_space_option,
    add_maxtext_option,
    add_module_option,
    add_target_option,
    maxtext_from_args,
    no_cache,
)
from hloscope.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, HloscopeError
from hloscope.request import CompileRequest
from hloscope.tui.load import Source, check_source
from hloscope.tui.preview import Preview, start_preview
from hloscope.tui.terminal import use_terminal_for_keys


class TuiCommand:
    """tui: browse a schedule in the terminal: transfers, verdicts, the schedule, memory.

    PATH is an HLO text file, an --xla_dump_to folder, an `hloscope compile`
    artifact folder or - (HLO text on stdin; the keys then come from the
    terminal); or --workload NAME compiles a built-in workload first, --maxtext
    [CONFIG.yml] KEY=VALUE ... MaxText's own step (same options as `hloscope
    compile`). --compare PATH opens two schedules side by
    side. Keys: ? for help, / search, q quit.
    Exit codes: 0 ok, 2 bad input, 3 unknown name, 4-7 as for compile, 70 a bug in the TUI (one line).
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("path", metavar="PATH", nargs="?",
                       help="HLO text file, XLA dump folder, artifact folder, or - for stdin")
        src = p.add_mutually_exclusive_group()
        src.add_argument("--workload", help="compile this built-in workload or preset instead of reading PATH")
        add_maxtext_option(src)
        p.add_argument("--compare", metavar="PATH", help="a second schedule to compare with")
        p.add_argument("--measured", metavar="PROFILE",
                       help="a measured profile shown beside each op's figure (an nsys-jax archive as PATH is its "
                            "own; docs/accuracy.md)")
        add_target_option(p)
        add_module_option(p)
        add_host_memory_space_option(p)
        add_compile_options(p)

    def run(self, args: argparse.Namespace) -> int:
        maxtext = maxtext_from_args(args)
        if (args.path is None) == (args.workload is None and maxtext is None):
            raise HloscopeError("tui: give a PATH, --workload NAME or --maxtext ... (one of them)", EXIT_BAD_INPUT)
        workload = None
        if args.workload or maxtext is not None:
            from hloscope.cli.compiling import request_from_args  # lazy: 40 ms; a file's preview child starts sooner

            workload = request_from_args(args, workload=args.workload, maxtext=maxtext)
            prepare_compile(workload)
        spool = None
        preview: Preview | None = None
        try:
            path = args.path
            if path == "-":
                spool = read_stdin_module()
                path = str(spool / STDIN_FILE)

            if args.module:  # the module of a dump folder, read as its file (its siblings are found beside it)
                from hloscope.hlo.loader import pick_module_file  # lazy: the HLO loader, for --module or stdin only

                path = str(pick_module_file(path, args.module))
            measured = args.measured or (path if path and is_nsys_archive(path) else None)
            source = Source(path, workload, args.target, args.host_memory_space, measured)
            # Started now, before the input is checked and Textual imported: the child analyses the file
            # on another core while this process starts the app, and sends the transfer table's rows
            # (tui.preview). Bad input stops it below (``finally``) as it is refused in one line.
            preview = start_preview(source)
            try:
                check_source(source)  # one-line errors before the terminal is taken over
            except HloscopeError as e:
                if spool is not None:  # say "<stdin>", not the spool file's path
                    raise HloscopeError(str(e).replace(path, "<stdin>"), e.exit_code) from None
                raise
            compare = None
            if args.compare:
                compare = Source(args.compare, None, args.target, args.host_memory_space)
                check_source(compare)
            if spool is not None:
                use_terminal_for_keys(stdin_held_module=True)
            from hloscope.tui.app import HloscopeApp  # lazy: textual is slow; bad input is refused first

            app = HloscopeApp(source, compare, preview=preview)
            with no_cache(args):
                app.run()
        finally:
            if preview is not None:
                preview.close()
            if spool is not None:
                shutil.rmtree(spool, ignore_errors=True)
        if app.failure is not None:  # the input failed to load, or the app crashed: one line, its exit code
            raise app.failure
        if app.return_code:  # Textual stopped the app with an error of its own
            raise HloscopeError(f"internal error in the TUI: it stopped with code {app.return_code}", EXIT_INTERNAL)
        return 0


#: The name of the module read from stdin, in its private temporary folder.
STDIN_FILE = "stdin.hlo.txt"


def read_stdin_module() -> Path:
    """Read the whole of stdin (HLO text) into a new private folder; returns the folder.

    The app reads it like any file (same checks, same one-line errors); the caller
    removes the folder when the app has exited.
    """
    from hloscope.hlo.loader import STDIN_PROMPT, sniff_bytes  # lazy: the HLO loader, for --module or stdin only

    if sys.stdin.isatty():
        print(STDIN_PROMPT, file=sys.stderr)
    data = sys.stdin.buffer.read()
    sniff_bytes(data, "<stdin>")  # empty or binary: the words analyze and check use
    folder = Path(tempfile.mkdtemp(prefix="hloscope-stdin-"))
    (folder / STDIN_FILE).write_bytes(data)
    return folder


def prepare_compile(request: CompileRequest) -> None:
    """Before the terminal is taken over: an unknown workload or a bad --set is one line (exit 3 / 2), and
    the process that tracks the isolated compile's resources is started now.

    The compile runs in a spawned process (``hloscope.compile.run.jobs``); Python starts its resource
    tracker on first use and passes it ``sys.stderr.fileno()``, which under Textual is -1
    ("bad value(s) in fds_to_keep"): started here, it has the real stderr.
    """
    from hloscope.compile.workloads import resolve  # lazy: the workloads, only for --workload

    if request.workload is not None:  # (MaxText's step is checked by request_from_args: config, overrides)
        resolve(request.workload, dict(request.sets))
    resource_tracker.ensure_running()
