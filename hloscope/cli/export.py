"""``hloscope export``: a report as files another tool opens (``--format model-explorer``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hloscope.artifact import load_report
from hloscope.cli.options import add_target_option
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.render.explorer import EXPORT_FORMATS
from hloscope.render.registry import pick


class ExportCommand:
    """export: write a step as files another tool opens, into the folder -o names.

    --format model-explorer writes graph.json (the module as a Model Explorer graph: while
    bodies as namespaces with their trip counts, fusions collapsed, host transfers painted
    by verdict, start-to-done edge overlays) and node-data-verdicts.json,
    node-data-start-us.json, node-data-bytes.json, for
    model-explorer DIR/graph.json --node_data_paths=DIR/node-data-verdicts.json,...
    PATH is an HLO text file, an --xla_dump_to folder, an hloscope compile artifact folder,
    or - for stdin. Files already in DIR are replaced only with --force.
    Exit codes: 0 ok, 2 bad input (or a file exists without --force), 3 unknown format.
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("path", metavar="PATH", help="HLO text file, XLA dump folder, artifact folder, or -")
        p.add_argument("--format", required=True, metavar="FORMAT", help=f"{', '.join(EXPORT_FORMATS)}")
        p.add_argument("-o", "--output", required=True, metavar="DIR", help="folder to write the files into")
        p.add_argument("--force", action="store_true", help="replace files of the same names in DIR")
        add_target_option(p)

    def run(self, args: argparse.Namespace) -> int:
        build = pick(args.format, EXPORT_FORMATS)
        out = Path(args.output)
        if out.exists() and not out.is_dir():
            raise HloscopeError(f"{out}: not a folder (-o names the folder to write into)", EXIT_BAD_INPUT)
        report = load_report(args.path, args.target)
        files = build(report)
        existing = sorted(name for name in files if (out / name).exists())
        if existing and not args.force:
            verb, them = ("already exists", "it") if len(existing) == 1 else ("already exist", "them")
            raise HloscopeError(f"{out}: {', '.join(existing)} {verb}; --force replaces {them}", EXIT_BAD_INPUT)
        out.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (out / name).write_text(text, encoding="utf-8")
        if existing:
            print(f"hloscope: note: replaced {', '.join(existing)} in {out}", file=sys.stderr)
        node_data = ",".join(str(out / n) for n in files if n.startswith("node-data-"))
        print(f"wrote {len(files)} file(s) to {out}; open with:\n"
              f"  model-explorer {out / 'graph.json'} --node_data_paths={node_data}")
        return 0
