"""``hloscope`` entry point: a registry of subcommands, one class each.

Each command has ``prepare_parser(parser)`` and ``run(args) -> int``; its
docstring is its help. Every user-facing failure is a ``HloscopeError`` printed
on one line as ``hloscope: error: ...`` with its documented exit code.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Protocol

from hloscope import __version__
from hloscope.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_UNKNOWN_NAME, HloscopeError


class Command(Protocol):
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


#: Command name -> (module, class, one-line help). Only the command being run is imported,
#: so a command starts without loading what the others need (the TUI's first screen).
_COMMANDS: dict[str, tuple[str, str, str]] = {
    "analyze": ("hloscope.cli.analyze", "AnalyzeCommand", "judge every host transfer in scheduled GPU or TPU HLO"),
    "calibrate": ("hloscope.cli.calibrate", "CalibrateCommand",
                  "fit a target's figures to a measured GPU or TPU profile"),
    "cache": ("hloscope.cli.cache", "CacheCommand", "show (info) or empty (clear) the compile cache"),
    "check": ("hloscope.cli.check", "CheckCommand", "CI rules over a step: exit 1 when one is violated"),
    "compile": ("hloscope.cli.compile", "CompileCommand",
                "compile a training step for a GPU or TPU target on this machine (no GPU or TPU needed)"),
    "diff": ("hloscope.cli.diff", "DiffCommand", "compare two GPU or TPU steps or reports, transfer by transfer"),
    "dot": ("hloscope.cli.dot", "DotCommand", "Graphviz diagrams of windows, computations, schedules, calls"),
    "export": ("hloscope.cli.export", "ExportCommand", "write a step as files another tool opens (Model Explorer)"),
    "sweep": ("hloscope.cli.sweep", "SweepCommand", "compile policy x scheduler x pipelined offload side by side"),
    "targets": ("hloscope.cli.targets", "TargetsCommand", "list the built-in GPU and TPU targets and their figures"),
    "tune": ("hloscope.cli.tune", "TuneCommand", "the fastest per-name remat/device/offload choices that fit"),
    "tui": ("hloscope.cli.tui", "TuiCommand", "browse transfers and the schedule in the terminal"),
}


def _load(name: str) -> Command:
    module, cls, _ = _COMMANDS[name]
    command: Command = getattr(importlib.import_module(module), cls)()
    return command


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # An option value outside its closed list (--policy, --link ...) is an unknown name, like an
        # unknown target or format (docs/cli.md); a mistyped command or option is bad input.
        unknown = "invalid choice" in message and not message.startswith("argument COMMAND")
        # main() prints "hloscope: error: "; the subcommand's name follows it once ("dot: ...").
        where = self.prog.removeprefix("hloscope").strip()
        raise HloscopeError(f"{where}: {message}" if where else message,
                            EXIT_UNKNOWN_NAME if unknown else EXIT_BAD_INPUT)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that command is imported (the others get their help line)."""
    parser = _Parser(prog="hloscope", description="Did my host offloading get hidden, and if not, why not?")
    parser.add_argument("--version", action="version", version=f"hloscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (_, _, short) in _COMMANDS.items():
        if only is not None and name != only:
            sub.add_parser(name, help=short)
            continue
        cmd = _load(name)
        doc = (type(cmd).__doc__ or "").strip().removeprefix(f"{name}: ")
        p = sub.add_parser(name, help=doc.splitlines()[0] if doc else "", description=doc,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        cmd.prepare_parser(p)
        p.set_defaults(_command=cmd)
    return parser


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    first = next((a for a in args_in if not a.startswith("-")), None)
    parser = build_parser(first if first in _COMMANDS else None)
    try:
        args = parser.parse_args(args_in)
        if not getattr(args, "_command", None):
            parser.print_help()
            return EXIT_BAD_INPUT
        return int(args._command.run(args))
    except HloscopeError as e:
        print(f"hloscope: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("hloscope: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug: still one line, unless HLOSCOPE_DEBUG asks for the traceback
        if os.environ.get("HLOSCOPE_DEBUG"):
            raise
        print(f"hloscope: internal error: {type(e).__name__}: {e} (set HLOSCOPE_DEBUG=1 for details)",
              file=sys.stderr)
        return EXIT_INTERNAL


def entry() -> None:
    sys.exit(main())
