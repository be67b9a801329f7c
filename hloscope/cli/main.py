"""``hloscope`` entry point: a registry of subcommands, one class each.

Each command has ``prepare_parser(parser)`` and ``run(args) -> int``; its
docstring is its help. Every user-facing failure is a ``HloscopeError`` printed
on one line as ``hloscope: error: ...`` with its documented exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Protocol

from hloscope.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_UNKNOWN_NAME, HloscopeError


class Command(Protocol):
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _commands() -> dict[str, Command]:
    from hloscope.cli.analyze import AnalyzeCommand
    from hloscope.cli.check import CheckCommand
    from hloscope.cli.compile import CompileCommand
    from hloscope.cli.diff import DiffCommand
    from hloscope.cli.dot import DotCommand
    from hloscope.cli.sweep import SweepCommand
    from hloscope.cli.targets import TargetsCommand
    from hloscope.cli.tui import TuiCommand

    return {"analyze": AnalyzeCommand(), "check": CheckCommand(), "compile": CompileCommand(), "diff": DiffCommand(),
            "dot": DotCommand(),
            "sweep": SweepCommand(), "targets": TargetsCommand(), "tui": TuiCommand()}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # An option value outside its closed list (--policy, --link ...) is an unknown name, like an
        # unknown target or format (docs/cli.md); a mistyped command or option is bad input.
        unknown = "invalid choice" in message and not message.startswith("argument COMMAND")
        raise HloscopeError(f"{self.prog}: {message}", EXIT_UNKNOWN_NAME if unknown else EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    from hloscope import __version__

    parser = _Parser(prog="hloscope", description="Did my host offloading get hidden, and if not, why not?")
    parser.add_argument("--version", action="version", version=f"hloscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, cmd in _commands().items():
        doc = (type(cmd).__doc__ or "").strip().removeprefix(f"{name}: ")
        p = sub.add_parser(name, help=doc.splitlines()[0] if doc else "", description=doc,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        cmd.prepare_parser(p)
        p.set_defaults(_command=cmd)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
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
