"""``hloscope diff``: see :class:`DiffCommand`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from hloscope.artifact import is_json_report
from hloscope.check.baseline import Tolerance, compare, load_snapshot, snapshot_from_subject
from hloscope.check.subject import load_path
from hloscope.cli.options import add_target_option
from hloscope.errors import EXIT_OK
from hloscope.render.check.formats import change_text, diff_lines
from hloscope.targets import get_target

if TYPE_CHECKING:
    from hloscope.check.baseline import Snapshot


def load_side(path: str, target_name: str | None) -> Snapshot:
    """A JSON report file, or anything ``check`` reads (HLO file, dump or artifact folder)."""
    if is_json_report(path):
        return load_snapshot(path)
    # None: an artifact folder or archive is judged on its own target, as analyze and check judge it
    return snapshot_from_subject(load_path(path, get_target(target_name) if target_name else None))


class DiffCommand:
    """diff: compare two GPU or TPU steps transfer by transfer, as a baseline check does, for a person.

    A and B are JSON reports (hloscope analyze --json, check --write-baseline, an
    artifact's report.json) or anything analyze reads (an HLO file, a GPU or TPU
    --xla_dump_to folder, an artifact folder of a GPU or TPU compile). Transfers are paired by
    checkpoint name where both know it, else by source line (lines shifted by an
    edit are aligned), direction, bytes and op kind, never by XLA's instruction
    numbers; transfers of different bytes never pair, and the unpaired are listed
    as lost or new.
    Prints every change; regressions are marked. Exit codes: 0 printed (also when
    there are regressions; use check --baseline to gate), 2 bad input.
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("a", metavar="A", help="the earlier step (baseline)")
        p.add_argument("b", metavar="B", help="the later step")
        add_target_option(p)
        p.add_argument("--tolerance-us", type=float, default=1.0, help="exposed growth per step that is not a "
                       "regression (us, default 1)")
        p.add_argument("--tolerance-fraction", type=float, default=0.05, help="the same, relative (default 0.05)")
        p.add_argument("--memory-tolerance", type=float, default=0.01, help="device allocation growth that is not "
                       "a regression (fraction, default 0.01)")
        p.add_argument("--json", action="store_true", help="print the changes as JSON")

    def run(self, args: argparse.Namespace) -> int:
        base, new = load_side(args.a, args.target), load_side(args.b, args.target)
        diff = compare(base, new, Tolerance(args.tolerance_us, args.tolerance_fraction, args.memory_tolerance))
        if args.json:
            json.dump({"a": base.label, "b": new.label, "matched": len(diff.pairs),
                       "regressions": len(diff.regressions),
                       "changes": [{"kind": str(c.kind), "regression": c.regression, "text": change_text(c)}
                                   for c in diff.changes]}, sys.stdout, indent=2)
            sys.stdout.write("\n")
            return EXIT_OK
        lines = diff_lines(diff)
        lines[0] = f"{base.label} -> {new.label}: " + lines[0].split(": ", 1)[1]
        if not diff.changes:
            lines.append("  no change beyond the tolerances")
        print("\n".join(lines))
        return EXIT_OK
