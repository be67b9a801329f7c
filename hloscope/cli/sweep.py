"""sweep: compile policy {remat, offload, save} x LHS {on, off} x pipelined offload {on, off}.

Prints one side-by-side table (--json / --csv for the same rows). With
--batch-sizes it also answers the capacity question: the largest per-device
batch that fits in HBM under each policy. Cells compile in parallel workers.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import sys

from hloscope.cli.analyze import write_output
from hloscope.cli.compile import parse_sets
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.render.table import format_columns


def _gib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**30:.2f}"


def _ms(us: float) -> str:
    ms = us / 1e3
    return f"{ms:.3f}" if ms < 10 else f"{ms:.1f}"


def format_table(rows: list[dict], capacity: dict | None) -> str:
    headers = ["policy", "LHS", "pipelined", "batch", "peak GiB", "host GiB", "fits", "xfers",
               "hidden", "partial", "exposed", "sync", "~exposed ms", "~step ms"]
    body = []
    for r in rows:
        if r.get("error"):
            body.append([r["policy"], "on" if r["lhs"] else "off", "on" if r["pipelined"] else "off",
                         str(r["batch"] or "-"), "error: " + r["error"][:80]] + [""] * 9)
            continue
        body.append([r["policy"], "on" if r["lhs"] else "off", "on" if r["pipelined"] else "off", str(r["batch"]),
                     _gib(r["peak_device_bytes"]), _gib(r["host_bytes"]), "yes" if r["fits"] else "NO",
                     str(r["transfers"]), str(r["hidden"]), str(r["partial"]), str(r["exposed"]), str(r["sync"]),
                     _ms(r["est_exposed_us"]), _ms(r["est_step_us"])])
    lines = format_columns(headers, body)
    if capacity:
        lines.append("")
        lines.append("largest per-device batch that fits: " + ", ".join(
            f"{p} {b if b is not None else 'none'}" for p, b in capacity.items()))
    lines.append("~ figures are roofline estimates (docs/cost-model.md)")
    return "\n".join(lines) + "\n"


class SweepCommand:
    """sweep: compile policy {remat, offload, save} x LHS {on, off} x pipelined offload {on, off}.

    Prints one side-by-side table (--json / --csv for the same rows). With
    --batch-sizes it also answers the capacity question: the largest
    per-device batch that fits in HBM under each policy. Cells compile in
    parallel worker processes.
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("workload", nargs="?", default="mlp", help="workload or preset (default mlp)")
        p.add_argument("--target", default="h100-sxm")
        p.add_argument("--devices", type=int, default=8)
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
        p.add_argument("--policies", default="remat,offload,save")
        p.add_argument("--batch-sizes", default="", help="comma-separated per-device batch sizes")
        p.add_argument("--jobs", type=int, default=max(1, min(4, os.cpu_count() or 1)),
                       help="parallel worker processes")
        fmt = p.add_mutually_exclusive_group()
        fmt.add_argument("--json", action="store_true")
        fmt.add_argument("--csv", action="store_true")
        p.add_argument("-o", "--output")

    def run(self, args: argparse.Namespace) -> int:
        from hloscope.compile import workloads
        from hloscope.compile.sweep import COLUMNS, capacity, cells, run_sweep
        from hloscope.targets import get_target

        get_target(args.target)
        sets = parse_sets(args.set)
        workloads.resolve(args.workload, sets)  # validate names before spawning workers
        policies = [p.strip() for p in args.policies.split(",") if p.strip()]
        for p in policies:
            if p not in workloads.POLICIES:
                raise HloscopeError(f"unknown policy '{p}'; choose from {', '.join(workloads.POLICIES)}", 3)
        try:
            batches: list[int | None] = [int(b) for b in args.batch_sizes.split(",") if b.strip()] or [None]
        except ValueError:
            raise HloscopeError(f"--batch-sizes wants integers, got '{args.batch_sizes}'", EXIT_BAD_INPUT) from None
        todo = cells(args.workload, sets, args.target, args.devices, policies, batches)
        rows = run_sweep(todo, args.jobs, _progress_bar(len(todo)))
        cap = capacity(rows) if args.batch_sizes else None
        if args.json:
            text = json.dumps({"schema": "hloscope.sweep/1", "workload": args.workload, "target": args.target,
                               "devices": args.devices, "rows": rows, "capacity": cap}, indent=2) + "\n"
        elif args.csv:
            buf = io.StringIO()
            w = csv.DictWriter(buf, fieldnames=list(COLUMNS))
            w.writeheader()
            w.writerows(rows)
            text = buf.getvalue()
        else:
            text = format_table(rows, cap)
        write_output(text, args.output)
        return 0


def _progress_bar(total: int):  # type: ignore[no-untyped-def]
    if not sys.stderr.isatty():
        return lambda done, n: print(f"[{done}/{n}] compiled", file=sys.stderr)
    from rich.progress import Progress

    prog = Progress(transient=True)
    task = prog.add_task("compiling cells", total=total)
    prog.start()

    def update(done: int, n: int) -> None:
        prog.update(task, completed=done)
        if done >= n:
            prog.stop()

    return update
