"""What the commands that print a report share: the report options, the output file, the report
written where asked with its --fail-on gate, and the checks of a measured profile (analyze,
compile, check, sweep, tune and calibrate read them from here)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from hloscope.analysis.cost.calibration import parse_profile_file
from hloscope.analysis.kinds import VerdictKind
from hloscope.analysis.measured.compare import MeasuredComparison
from hloscope.analysis.report import Report
from hloscope.analysis.simulate.overlap import AnalysisOptions
from hloscope.check import fail_on_verdicts, nothing_to_judge, parse_verdicts, step_wait
from hloscope.check.run import DEFAULT_WAIT_FRACTION
from hloscope.cli.fit import COLOR_CHOICES, report_color, report_width
from hloscope.cli.options import add_host_pool_option, add_target_option, host_pool_bytes
from hloscope.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, EXIT_NOTHING_TO_CHECK, HloscopeError
from hloscope.hlo.loader import ARTIFACT_NOTE
from hloscope.hlo.profile_files import read_profile_file
from hloscope.hlo.shape import HOST_MEMORY_SPACE
from hloscope.render import RENDERERS, Renderer, RenderOptions, get_renderer, render_to_string
from hloscope.render.check.words import emptiness_words, fail_on_passed_words
from hloscope.render.fit import fit_lines
from hloscope.render.measured_text import refusal_line
from hloscope.targets import DEFAULT_LINK_MODE, LINK_MODES, get_target
from hloscope.vocab import LinkMode


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
    add_target_option(p)
    p.add_argument("--json", action="store_true", help="print the JSON report instead of the table")
    p.add_argument("--format", help=f"report format: {', '.join(RENDERERS)} (default table)")
    p.add_argument("-o", "--output", help="write the report to this file instead of stdout")
    p.add_argument("--color", choices=COLOR_CHOICES, default="auto",
                   help="the table's verdicts in colour: auto (on a terminal, unless NO_COLOR is set), always, never")
    p.add_argument("--fail-on", default="", metavar="VERDICTS",
                   help="exit 1 if any transfer has one of these verdicts (sync, exposed, partial, hidden), e.g. "
                        "partial,exposed,sync; a partial transfer makes the step wait too (`hloscope check` bounds "
                        "that wait); exit 8 when there is nothing to judge (module not scheduled, compiled for "
                        "neither a GPU nor a TPU, no host transfer)")
    p.add_argument("--allow-empty", action="store_true",
                   help="let --fail-on pass when there is nothing to judge (instead of exit 8)")
    p.add_argument("--link", choices=[str(m) for m in LINK_MODES], default=str(DEFAULT_LINK_MODE),
                   help=f"host link figures: achieved (measured) or peak (specification) (default {DEFAULT_LINK_MODE})")
    p.add_argument("--trace", metavar="FILE",
                   help="also write the simulated step as Trace Event JSON (open in ui.perfetto.dev)")
    add_host_pool_option(p)
    p.add_argument("--profile", metavar="FILE",
                   help="measured per-op times in place of the cost model: an XLA PGLE profile "
                        "(costs { name: ... cost_us: ... }, text or binary profile.pb), JSON {name: us} or CSV name,us "
                        "(docs/cost-model.md)")
    p.add_argument("--measured", metavar="PROFILE",
                   help="a measured profile to put beside every figure: an nsys-jax archive (.zip), a jax.profiler "
                        "trace (.xplane.pb, .trace.json.gz) or a PGLE profile (text or binary); changes no figure "
                        "(docs/accuracy.md). An nsys-jax archive as PATH is its own")


@dataclass(frozen=True)
class ReportRequest:
    """What the report options asked for, validated before any work is done."""

    renderer: Renderer
    fail_on: frozenset[VerdictKind]
    output: str | None
    allow_empty: bool = False
    options: AnalysisOptions = field(default_factory=AnalysisOptions)
    trace: str | None = None
    color: str = "auto"


def prepare_report(args: argparse.Namespace) -> ReportRequest:
    """Validate the report options (format, --fail-on, target) before loading or compiling anything."""
    if args.target:
        get_target(args.target)
    renderer = get_renderer("json" if args.json else (args.format or "table"))
    if args.trace and args.output and Path(args.trace).resolve() == Path(args.output).resolve():
        raise HloscopeError(f"--trace and -o name the same file ({args.trace})", EXIT_BAD_INPUT)
    measured: tuple[tuple[str, float], ...] = ()
    if getattr(args, "profile", None):
        measured = tuple(sorted(parse_profile_file(read_profile_file(args.profile)).items()))
    options = AnalysisOptions(host_space=getattr(args, "host_memory_space", HOST_MEMORY_SPACE),
                              link_mode=LinkMode(args.link), measured_us=measured,
                              host_pool_bytes=host_pool_bytes(getattr(args, "host_pool_gb", None), os.environ))
    return ReportRequest(renderer, parse_verdicts(args.fail_on) if args.fail_on else frozenset(), args.output,
                         bool(getattr(args, "allow_empty", False)), options, args.trace,
                         getattr(args, "color", "auto"))


def write_trace(report: Report, path: str) -> None:
    """The simulated step as Trace Event JSON, to ``path`` only."""
    if report.timeline is None:
        raise HloscopeError("--trace: there is no simulated step (the module is not scheduled)", EXIT_BAD_INPUT)
    write_output(render_to_string("trace", report), path)


def emit_report(report: Report, req: ReportRequest, trailer: str = "") -> int:
    """Render ``report`` where asked; return the exit code of the --fail-on gate."""
    if req.trace:
        write_trace(report, req.trace)
    with open_output(req.output) as out:
        # the table fits the terminal it is printed to (hloscope.cli.fit; docs/cli.md, width and colour)
        width = report_width(out, os.environ)
        req.renderer.render(report, out, RenderOptions(width=width, color=report_color(out, req.color, os.environ)))
        if trailer and req.renderer.name == "table":
            out.write("".join(line + "\n" for line in fit_lines(trailer.splitlines(), width)))
    # How the input was read; not an artifact folder's provenance, which every run would repeat
    # (the table prints it under its header, the JSON has it in "notes").
    for note in report.notes:
        if not note.startswith(ARTIFACT_NOTE):
            print(f"hloscope: note: {note}", file=sys.stderr)
    if req.fail_on:
        empty = nothing_to_judge(report)
        if empty is not None and not req.allow_empty:
            raise HloscopeError(f"nothing to check: {emptiness_words(empty)}; --fail-on cannot pass on it "
                                "(--allow-empty to pass anyway)", EXIT_NOTHING_TO_CHECK)
    if fail_on_verdicts(report, req.fail_on):
        return EXIT_CHECK_FAILED
    if req.fail_on:  # passed: say so when the step waits on transfers whose verdicts were not asked for
        wait = step_wait(report)
        if wait.fraction > DEFAULT_WAIT_FRACTION and VerdictKind.PARTIAL not in req.fail_on and wait.partial:
            print(f"hloscope: note: {fail_on_passed_words(wait, req.fail_on, DEFAULT_WAIT_FRACTION)}", file=sys.stderr)
    return 0


def check_measured(m: MeasuredComparison) -> None:
    """A profile of another program (``hloscope.analysis.measured.match``) is bad input (exit 2)."""
    line = refusal_line(m.profile.source, m.match) if m.match is not None else None
    if line is not None:
        raise HloscopeError(line, EXIT_BAD_INPUT)
