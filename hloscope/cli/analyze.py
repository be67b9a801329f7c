"""analyze: judge every host transfer in scheduled GPU or TPU HLO.

PATH is an HLO text file, an --xla_dump_to folder, or - for stdin.
Exit codes: 0 ok, 1 a --fail-on verdict was found, 2 bad input, 3 unknown name.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from hloscope.analysis.cost.calibration import match_profile
from hloscope.analysis.measured.read import parse_measured
from hloscope.analysis.report import analyze_step
from hloscope.artifact import load_report, read_step
from hloscope.cli.archive import is_nsys_archive
from hloscope.cli.options import add_host_memory_space_option, add_module_option
from hloscope.cli.reporting import add_report_options, check_measured, emit_report, prepare_report
from hloscope.hlo.profile_files import read_measured_file
from hloscope.hlo.profiles.host_lines import read_host_lines
from hloscope.render.backend_words import backend_note


class AnalyzeCommand:
    """analyze: judge every host transfer in scheduled GPU or TPU HLO.

    PATH is an HLO text file, an --xla_dump_to folder, or - for stdin.
    An hloscope artifact folder's manifest gives the target (unless --target),
    the step's tensor names and its flags. Exit codes: 0 ok, 1 a --fail-on
    verdict was found, 2 bad input, 3 unknown name, 8 nothing to judge.
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("path", metavar="PATH", help="HLO text file, XLA dump folder, or - for stdin")
        add_report_options(p)
        add_module_option(p)
        add_host_memory_space_option(p)

    def run(self, args: argparse.Namespace) -> int:
        req = prepare_report(args)
        measured = getattr(args, "measured", None) or (args.path if is_nsys_archive(args.path) else None)
        if not measured:
            report = load_report(args.path, args.target, req.options, module=args.module)
        else:
            file = read_measured_file(measured)  # first: a bad PROFILE is said before the HLO is read
            step = read_step(args.path, args.target, module=args.module)
            # a profile of several programs (a step and its optimizer's jit): the analyzed module's executions
            profile = parse_measured(file, step.inputs.module.name)
            options = replace(req.options, compare_with=profile, host_lines=read_host_lines(file))
            req = replace(req, options=options)
            report = analyze_step(step.inputs, step.target, options)
        note = backend_note(report.compiled_for, report.target.name)
        if note:  # before the report: a CPU module's figures are read knowing it
            print(f"hloscope: note: {note}", file=sys.stderr)
        if report.measured is not None:
            check_measured(report.measured)
        if args.profile:
            found = match_profile(dict(req.options.measured_us), report.module)
            print(f"hloscope: note: profile {args.profile}: {found.matched} of {found.entries} times name an "
                  "instruction of this module" + (f" (not: {', '.join(found.unknown)})" if found.unknown else ""),
                  file=sys.stderr)
        return emit_report(report, req)
