"""``hloscope dot``: diagrams of a report (the views live in ``hloscope.render.dot.draw``)."""

from __future__ import annotations

import argparse
import sys

from hloscope.analysis.simulate.overlap import AnalysisOptions
from hloscope.artifact import load_report
from hloscope.cli.options import add_host_memory_space_option, add_module_option, add_target_option
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.loader import ARTIFACT_NOTE
from hloscope.render.dot.draw import FORMATS, format_for, render_view
from hloscope.render.dot.run import DEFAULT_TIMEOUT_S, RENDERER_NAMES, choose_renderer
from hloscope.render.dot.views import DEFAULT_MAX_NODES, DEFAULT_RADIUS, DEFAULT_SCHEDULE_ROWS


class DotCommand:
    """dot: draw a transfer's window, a computation, a schedule or the call graph (DOT, SVG, PNG).

    PATH is an HLO text file, an --xla_dump_to folder, an hloscope compile artifact
    folder, or - for stdin. Choose one view. The format comes from --format or from
    the -o file's extension (.dot/.gv, .svg, .png); without either, DOT goes to stdout.
    SVG and PNG are drawn by Graphviz's dot when it is on PATH, else by graphviz-pure.
    Exit codes: 0 ok, 2 bad input, 3 unknown transfer/computation/format name,
    7 no renderer, or the renderer failed or ran past --timeout.
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("path", metavar="PATH", help="HLO text file, XLA dump folder, artifact folder, or -")
        view = p.add_mutually_exclusive_group(required=True)
        # A view flag without its name lists the names the step has (a one-line error, exit 2).
        view.add_argument("--transfer", metavar="NAME", nargs="?", const="",
                          help="a transfer's window: checkpoint name (all transfers of that tensor, one panel "
                               "each), start/done instruction name, or op_name")
        view.add_argument("--computation", metavar="NAME", nargs="?", const="",
                          help="the dependency graph of one computation")
        view.add_argument("--schedule", metavar="NAME", nargs="?", const="",
                          help="one computation's schedule on lanes")
        view.add_argument("--calls", action="store_true", help="the call graph with trip counts and bytes")
        p.add_argument("--radius", type=int, default=DEFAULT_RADIUS, metavar="K",
                       help=f"--transfer: hops of producers and consumers to add (default {DEFAULT_RADIUS})")
        p.add_argument("--from", dest="first", type=int, default=0, metavar="POS",
                       help="--schedule: start at this schedule position (default 0)")
        p.add_argument("--max-nodes", type=int, default=None, metavar="N",
                       help=f"draw at most N nodes; the title says what was cut (default {DEFAULT_MAX_NODES}; "
                            f"--schedule: {DEFAULT_SCHEDULE_ROWS} rows)")
        p.add_argument("--format", metavar="FORMAT",
                       help=f"{', '.join(FORMATS)} (default: from -o's extension, else dot)")
        p.add_argument("-o", "--output", help="write to this file instead of stdout")
        p.add_argument("--renderer", default="auto", metavar="NAME",
                       help=f"auto (default), {', '.join(RENDERER_NAMES)}")
        p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                       help=f"give up rendering after this long (default {DEFAULT_TIMEOUT_S:g})")
        add_target_option(p)
        add_module_option(p)
        add_host_memory_space_option(p)

    def run(self, args: argparse.Namespace) -> int:
        # Validate everything cheap before reading the HLO.
        output = None if args.output in (None, "-") else args.output
        fmt = format_for(output, args.format)
        if fmt != "dot" or args.renderer != "auto":
            choose_renderer(args.renderer)
        if fmt == "png" and output is None and sys.stdout.isatty():
            raise HloscopeError("png output to a terminal; write it to a file with -o FILE.png", EXIT_BAD_INPUT)
        if args.timeout <= 0:
            raise HloscopeError(f"--timeout must be positive, not {args.timeout:g}", EXIT_BAD_INPUT)
        view, name = next((v, getattr(args, v)) for v in ("transfer", "computation", "schedule", "calls")
                          if getattr(args, v) not in (None, False))
        report = load_report(args.path, args.target, AnalysisOptions(host_space=args.host_memory_space),
                             module=args.module)
        result = render_view(report, view, output if output is not None else fmt,
                             name if isinstance(name, str) and name else None, fmt=fmt, radius=args.radius,
                             max_nodes=args.max_nodes, first=args.first, renderer=args.renderer,
                             timeout_s=args.timeout)
        if output is None:
            sys.stdout.buffer.write(result.data)
            sys.stdout.flush()
        # The diagram's own notes (what was cut, which transfers a name covers) and how the input was
        # read; not the artifact folder's provenance, which every run would repeat (the table says it).

        for note in [*(n for n in report.notes if not n.startswith(ARTIFACT_NOTE)), *result.notes]:
            print(f"hloscope: note: {note}", file=sys.stderr)
        if result.renderer is not None:
            where = f" to {output}" if output else ""
            print(f"hloscope: rendered {fmt}{where} with {result.renderer} in {result.seconds:.2f} s",
                  file=sys.stderr)
        return 0
