"""analyze: judge every host transfer in scheduled GPU HLO.

PATH is an HLO text file, an --xla_dump_to folder, or - for stdin.
Exit codes: 0 ok, 1 a --fail-on verdict was found, 2 bad input, 3 unknown name.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import dataclass
from typing import TextIO

from hloscope.analysis.kinds import VerdictKind
from hloscope.analysis.report import Report
from hloscope.check import fail_on_verdicts, parse_verdicts
from hloscope.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, HloscopeError
from hloscope.render import RENDERERS, Renderer, RenderOptions, get_renderer
from hloscope.targets import DEFAULT_TARGET, get_target


def open_output(output: str | None) -> contextlib.AbstractContextManager[TextIO]:
    """Standard output, or the one path the user chose (never elsewhere)."""
    if not output or output == "-":
        return contextlib.nullcontext(sys.stdout)
    try:
        return open(output, "w", encoding="utf-8")
    except OSError as e:
        raise HloscopeError(f"{output}: cannot write: {e.strerror or e}", EXIT_BAD_INPUT) from None


def write_output(text: str, output: str | None) -> None:
    with open_output(output) as out:
        out.write(text)


def add_report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", default=DEFAULT_TARGET,
                   help=f"target name or .toml/.json file (default {DEFAULT_TARGET})")
    p.add_argument("--json", action="store_true", help="print the JSON report instead of the table")
    p.add_argument("--format", help=f"report format: {', '.join(RENDERERS)} (default table)")
    p.add_argument("-o", "--output", help="write the report to this file instead of stdout")
    p.add_argument("--fail-on", default="", metavar="VERDICTS",
                   help="exit 1 if any transfer has one of these verdicts, e.g. sync,exposed")


@dataclass(frozen=True)
class ReportRequest:
    """What the report options asked for, validated before any work is done."""

    renderer: Renderer
    fail_on: frozenset[VerdictKind]
    output: str | None


def prepare_report(args: argparse.Namespace) -> ReportRequest:
    """Validate the report options (format, --fail-on, target) before loading or compiling anything."""
    get_target(args.target)
    renderer = get_renderer("json" if args.json else (args.format or "table"))
    return ReportRequest(renderer, parse_verdicts(args.fail_on) if args.fail_on else frozenset(), args.output)


def emit_report(report: Report, req: ReportRequest, trailer: str = "") -> int:
    """Render ``report`` where asked; return the exit code of the --fail-on gate."""
    with open_output(req.output) as out:
        req.renderer.render(report, out, RenderOptions())
        if trailer and req.renderer.name == "table":
            out.write(trailer)
    for note in report.notes:
        print(f"hloscope: note: {note}", file=sys.stderr)
    return EXIT_CHECK_FAILED if fail_on_verdicts(report, req.fail_on) else 0


class AnalyzeCommand:
    """analyze: judge every host transfer in scheduled GPU HLO.

    PATH is an HLO text file, an --xla_dump_to folder, or - for stdin.
    Exit codes: 0 ok, 1 a --fail-on verdict was found, 2 bad input, 3 unknown name.
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("path", metavar="PATH", help="HLO text file, XLA dump folder, or - for stdin")
        add_report_options(p)
        p.add_argument("--host-memory-space", type=int, default=5, help="memory space of host memory (5)")

    def run(self, args: argparse.Namespace) -> int:
        from hloscope.analysis.overlap import AnalysisOptions
        from hloscope.analysis.report import analyze_module
        from hloscope.hlo.loader import load_module

        req = prepare_report(args)
        report = analyze_module(load_module(args.path), get_target(args.target),
                                AnalysisOptions(host_space=args.host_memory_space))
        return emit_report(report, req)
