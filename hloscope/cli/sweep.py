"""sweep: compile policy {remat, offload, save} x LHS {on, off} x pipelined offload {on, off}.

Prints one side-by-side table (--json / --csv for the same rows). With
--batch-sizes it also answers the capacity question: the largest per-device
batch that fits in HBM under each policy. Cells compile in parallel workers.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from hloscope.cli.analyze import open_output
from hloscope.cli.options import parse_sets
from hloscope.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, EXIT_COMPILE_FAILED, EXIT_UNKNOWN_NAME, HloscopeError
from hloscope.render import RenderOptions, pick
from hloscope.render.sweep import SWEEP_RENDERERS, SweepResult
from hloscope.targets import DEFAULT_TARGET

if TYPE_CHECKING:
    from rich.console import Console

    from hloscope.compile.sweep import Cell


class SweepCommand:
    """sweep: compile policy {remat, offload, save} x LHS {on, off} x pipelined offload {on, off}.

    Prints one side-by-side table (--json / --csv for the same rows). With
    --batch-sizes it also answers the capacity question: the largest
    per-device batch that fits in HBM under each policy. Cells compile in
    parallel worker processes; on a terminal a progress bar shows the phase
    each compile is in. Cells whose optimized HLO came out byte-identical share
    a fingerprint and are named under the table. Exit codes: 0 ok, 1
    --require-fit and a cell does not fit, 5 a cell failed (each failed cell is
    named); 2 and 3 for bad input or names, before anything compiles.
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("workload", nargs="?", default="mlp", help="workload or preset (default mlp)")
        p.add_argument("--target", default=DEFAULT_TARGET)
        p.add_argument("--devices", type=int, default=8)
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
        p.add_argument("--policies", default="remat,offload,save")
        p.add_argument("--batch-sizes", default="", help="comma-separated per-device batch sizes")
        p.add_argument("--jobs", type=int, default=max(1, min(4, os.cpu_count() or 1)),
                       help="parallel worker processes")
        fmt = p.add_mutually_exclusive_group()
        fmt.add_argument("--json", action="store_true", help="same as --format json")
        fmt.add_argument("--csv", action="store_true", help="same as --format csv")
        fmt.add_argument("--format", help=f"output format: {', '.join(SWEEP_RENDERERS)} (default table)")
        p.add_argument("-o", "--output")
        p.add_argument("--trace-dir", metavar="DIR",
                       help="write each compiled cell's simulated step as Trace Event JSON into DIR "
                            "(one file per cell, named after it)")
        p.add_argument("--require-fit", action="store_true",
                       help="exit 1 when a cell's device allocation does not fit in the target's HBM (naming them)")

    def run(self, args: argparse.Namespace) -> int:
        from hloscope.compile import workloads
        from hloscope.compile.sweep import COLUMNS, capacity_bounds, cells, run_sweep
        from hloscope.compile.workloads.common import POLICIES
        from hloscope.targets import get_target

        renderer = pick("json" if args.json else "csv" if args.csv else (args.format or "table"), SWEEP_RENDERERS)
        get_target(args.target)
        sets = parse_sets(args.set)
        workloads.resolve(args.workload, sets)  # validate names before spawning workers
        policies = [p.strip() for p in args.policies.split(",") if p.strip()]
        for p in policies:
            if p not in POLICIES:
                raise HloscopeError(f"unknown policy '{p}'; choose from {', '.join(POLICIES)}",
                                    EXIT_UNKNOWN_NAME)
        try:
            batches: list[int | None] = [int(b) for b in args.batch_sizes.split(",") if b.strip()] or [None]
        except ValueError:
            raise HloscopeError(f"--batch-sizes wants integers, got '{args.batch_sizes}'", EXIT_BAD_INPUT) from None
        todo = cells(args.workload, sets, args.target, args.devices, policies, batches)
        progress, phase = _progress_bar(len(todo))
        rows = run_sweep(todo, args.jobs, progress, phase, _trace_writer(args.trace_dir) if args.trace_dir else None)
        cap = ({p: dataclasses.asdict(b) for p, b in capacity_bounds(rows).items()} if args.batch_sizes else None)
        result = SweepResult(args.workload, args.target, args.devices, rows, tuple(COLUMNS), cap)
        with open_output(args.output) as out:
            renderer.render(result, out, RenderOptions())
        failed = [_cell_name(r) for r in rows if r.get("error")]
        if failed:
            print(f"hloscope: {len(failed)} of {len(rows)} cell(s) failed: {'; '.join(failed)}", file=sys.stderr)
            return EXIT_COMPILE_FAILED
        over = [_cell_name(r) for r in rows if r.get("fits") is False]
        if args.require_fit and over:
            print(f"hloscope: {len(over)} cell(s) do not fit in HBM (--require-fit): {'; '.join(over)}",
                  file=sys.stderr)
            return EXIT_CHECK_FAILED
        return 0


def _cell_name(row: dict[str, object]) -> str:
    error = f" ({row['error']})" if row.get("error") else ""
    return f"policy={row.get('cell')}{error}"


def _progress_bar(total: int, console: Console | None = None) -> tuple[Callable[[int, int], None],
                                                                        Callable[[Cell, str], None] | None]:
    """(progress, phase) callbacks for run_sweep. Not on a terminal: one line per finished
    cell and no phases; on a terminal: a bar whose label shows the last phase entered."""
    if console is None and not sys.stderr.isatty():
        return (lambda done, n: print(f"[{done}/{n}] done", file=sys.stderr)), None
    from rich.console import Console
    from rich.progress import Progress

    from hloscope.compile.sweep import cell_label

    prog = Progress(console=console or Console(stderr=True), transient=True)
    task = prog.add_task("compiling cells", total=total)
    prog.start()

    def update(done: int, n: int) -> None:
        prog.update(task, completed=done)
        if done >= n:
            prog.stop()

    def phase(cell: Cell, name: str) -> None:
        prog.update(task, description=f"{cell_label(cell.policy, cell.lhs, cell.pipelined, cell.batch)}: {name}")

    return update, phase


def _trace_writer(folder: str):  # type: ignore[no-untyped-def]
    """A callback writing each cell's trace into ``folder`` (created; nothing is written elsewhere)."""
    import re
    from pathlib import Path

    from hloscope.cli.analyze import write_trace

    out = Path(folder)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise HloscopeError(f"{folder}: cannot create: {e.strerror or e}", EXIT_BAD_INPUT) from None

    def write(row: dict, report) -> None:  # type: ignore[no-untyped-def,type-arg]
        name = re.sub(r"[^A-Za-z0-9_.=-]+", "_", row["cell"]) + ".trace.json"
        if report.timeline is not None:
            write_trace(report, str(out / name))

    return write

