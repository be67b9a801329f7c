"""analyze: judge every host transfer in scheduled GPU HLO.

PATH is an HLO text file, an --xla_dump_to folder, or - for stdin.
Exit codes: 0 ok, 1 a --fail-on verdict was found, 2 bad input, 3 unknown name.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hloscope.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, HloscopeError
from hloscope.render import RENDERERS, get_renderer


def write_output(text: str, output: str | None) -> None:
    """Print, or write to the one path the user chose (never elsewhere)."""
    if not output or output == "-":
        print(text, end="")
        return
    try:
        Path(output).write_text(text)
    except OSError as e:
        raise HloscopeError(f"{output}: cannot write: {e.strerror or e}", EXIT_BAD_INPUT) from None


def add_report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", default="h100-sxm", help="target name or .toml/.json file (default h100-sxm)")
    p.add_argument("--json", action="store_true", help="print the JSON report instead of the table")
    p.add_argument("--format", choices=sorted(RENDERERS), help="report format (table or json)")
    p.add_argument("-o", "--output", help="write the report to this file instead of stdout")
    p.add_argument("--fail-on", default="", metavar="VERDICTS",
                   help="exit 1 if any transfer has one of these verdicts, e.g. sync,exposed")


def check_fail_on(report_dict: dict, fail_on: str) -> int:
    wanted = {v.strip() for v in fail_on.split(",") if v.strip()}
    valid = set(report_dict["summary"]["by_verdict"])
    bad = wanted - valid
    if bad:
        raise HloscopeError(f"--fail-on: unknown verdict(s) {', '.join(sorted(bad))}; choose from "
                            f"{', '.join(sorted(valid))}", EXIT_BAD_INPUT)
    hits = [t["name"] for t in report_dict["transfers"] if t["verdict"] in wanted]
    return EXIT_CHECK_FAILED if hits else 0


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
        from hloscope.analysis.report import analyze_module
        from hloscope.hlo.loader import load_module
        from hloscope.targets import get_target

        target = get_target(args.target)
        renderer = get_renderer("json" if args.json else (args.format or "table"))
        report = analyze_module(load_module(args.path), target, args.host_memory_space)
        write_output(renderer.render(report), args.output)
        return check_fail_on(report.to_dict(), args.fail_on) if args.fail_on else 0
