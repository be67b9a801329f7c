"""sweep: compile policy {remat, offload, save} x scheduler {lhs, lhs-approx, none} x pipelined offload {on, off}.

Prints one side-by-side table (--json / --csv for the same rows). With
--batch-sizes it also answers the capacity question: the largest per-device
batch that fits in HBM under each policy. Cells compile in parallel workers
(--executor local) or as Ray tasks (--executor ray), through the compile cache.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from hloscope.cli.compiling import check_request, note_jax_version, progress_bar
from hloscope.cli.options import (
    add_devices_option,
    add_maxtext_option,
    add_memory_fraction_option,
    add_no_cache_option,
    add_target_option,
    compile_target,
    maxtext_from_args,
    parse_sets,
)
from hloscope.cli.reporting import open_output, write_trace
from hloscope.compile import workloads
from hloscope.compile.search.executors import make_executor
from hloscope.compile.search.sweep import (
    COLUMNS,
    SCHEDULERS,
    capacity_bounds,
    cells,
    maxtext_cells,
    run_sweep,
    summary,
    summary_line,
)
from hloscope.compile.step.cache import turned_off
from hloscope.compile.workloads.common import POLICIES
from hloscope.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, EXIT_COMPILE_FAILED, EXIT_UNKNOWN_NAME, HloscopeError
from hloscope.render.options import RenderOptions
from hloscope.render.registry import pick
from hloscope.render.search.sweep import SWEEP_RENDERERS, SweepResult
from hloscope.render.search.sweep_plot import check_plot_path, write_plot
from hloscope.request import CompileRequest

if TYPE_CHECKING:

    pass


#: The remat policies a MaxText sweep compares by default: everything recomputed, and MaxText's
#: Q/K/V offload (the published Llama 3.1 405B choice).
MAXTEXT_POLICIES = ("full", "qkv_proj_offloaded")


def _maxtext_policies(args: argparse.Namespace, maxtext: tuple[str, ...]) -> list[str]:
    """``--policies`` for MaxText's step: its ``remat_policy`` values (MaxText checks each one while
    tracing; a value it does not know fails that cell with MaxText's own line). ``custom`` needs the
    policy's keys: ``hloscope tune --maxtext`` searches them."""
    if args.workload:
        raise HloscopeError(f"--maxtext and workload '{args.workload}' both name the step; give one", EXIT_BAD_INPUT)
    for item in maxtext:
        key = item.partition("=")[0]
        if key == "remat_policy":
            raise HloscopeError(f"--maxtext {item}: the sweep sets remat_policy from --policies", EXIT_BAD_INPUT)
        if key == "per_device_batch_size" and args.batch_sizes:
            raise HloscopeError(f"--maxtext {item}: the sweep sets per_device_batch_size from --batch-sizes",
                                EXIT_BAD_INPUT)
    policies = [p.strip() for p in (args.policies or ",".join(MAXTEXT_POLICIES)).split(",") if p.strip()]
    if not policies:
        raise HloscopeError("--policies is empty", EXIT_BAD_INPUT)
    for p in policies:
        if p == "custom":
            raise HloscopeError("--policies custom: a custom policy's keys are what hloscope tune --maxtext searches",
                                EXIT_BAD_INPUT)
        if not p.isidentifier():
            raise HloscopeError(f"--policies: '{p}' is not a MaxText remat_policy value", EXIT_UNKNOWN_NAME)
    return policies


class SweepCommand:
    """sweep: compile policy x scheduler {lhs, lhs-approx, none} x pipelined offload {on, off}.

    Prints one side-by-side table (--json / --csv for the same rows). With
    --batch-sizes it also answers the capacity question: the largest
    per-device batch that fits in HBM under each policy. Cells compile in
    parallel worker processes (--executor local, the default) or as Ray tasks
    (--executor ray [--address HOST:PORT]); every compile goes through the
    compile cache (--no-cache to bypass it), so a rerun or a killed sweep's
    rerun compiles only what is missing. Each row says whether it came from
    the cache and its compile seconds; a summary line counts both. On a
    terminal a progress bar shows done / cached / failed / running. Cells whose
    optimized HLO came out byte-identical share a fingerprint and are named
    under the table. --plot FILE.svg|png draws throughput and device memory
    against batch size. Exit codes: 0 ok, 1 --require-fit and a cell does not
    fit, 5 a cell failed (each failed cell is named); 2 and 3 for bad input or
    names (a bad --address included), 7 Ray or matplotlib missing, before
    anything compiles.
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("workload", nargs="?", default=None, help="workload or preset (default mlp)")
        add_maxtext_option(p, "MaxText's own step (Python 3.12+, 'hloscope[maxtext]'): its config and overrides as for "
                              "hloscope compile --maxtext; --policies are then MaxText's remat_policy values "
                              f"(default {','.join(MAXTEXT_POLICIES)}) and --batch-sizes its per_device_batch_size")
        add_target_option(p)
        add_devices_option(p)
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
        p.add_argument("--policies", default=None,
                       help="comma-separated policies (default remat,offload,save; with --maxtext, MaxText's "
                            f"remat_policy values, default {','.join(MAXTEXT_POLICIES)})")
        p.add_argument("--schedulers", default=",".join(SCHEDULERS),
                       help=f"comma-separated schedulers to sweep (default {','.join(SCHEDULERS)})")
        p.add_argument("--pipelined", default="on,off", help="pipelined host offloading settings (default on,off)")
        p.add_argument("--batch-sizes", default="", help="comma-separated per-device batch sizes")
        p.add_argument("--jobs", type=int, default=max(1, min(4, os.cpu_count() or 1)),
                       help="parallel worker processes (local executor)")
        p.add_argument("--executor", choices=("local", "ray"), default="local",
                       help="local worker processes (default) or one Ray task per cell")
        p.add_argument("--address", metavar="HOST:PORT", help="Ray head to run on (default: start Ray here)")
        add_no_cache_option(p, "compile every cell; neither read nor fill the cache")
        add_memory_fraction_option(p)
        p.add_argument("--plot", metavar="FILE.svg|png",
                       help="draw throughput and device memory per policy against batch size (needs matplotlib)")
        fmt = p.add_mutually_exclusive_group()
        fmt.add_argument("--json", action="store_true", help="same as --format json")
        fmt.add_argument("--csv", action="store_true", help="same as --format csv")
        fmt.add_argument("--format", help=f"output format: {', '.join(SWEEP_RENDERERS)} (default table)")
        p.add_argument("-o", "--output")
        p.add_argument("--trace-dir", metavar="DIR",
                       help="write each compiled cell's simulated step as Trace Event JSON into DIR "
                            "(one file per cell, named after it)")
        p.add_argument("--require-fit", action="store_true",
                       help="exit 1 when a cell's device allocation does not fit in the target's HBM, or with "
                            "--memory-fraction in what JAX's allocator takes of it (naming them)")

    def run(self, args: argparse.Namespace) -> int:
        renderer = pick("json" if args.json else "csv" if args.csv else (args.format or "table"), SWEEP_RENDERERS)
        target = compile_target(args)
        maxtext = maxtext_from_args(args)
        sets = parse_sets(args.set)
        if maxtext is not None:
            policies = _maxtext_policies(args, maxtext)
            # its config file, MaxText installed, the device count: one line now, not one failure per cell
            check_request(CompileRequest(target, args.devices, maxtext=maxtext))
        else:
            args.workload = args.workload or "mlp"
            workloads.resolve(args.workload, sets)  # validate names before spawning workers
            # a device count the target or the workload cannot take: one line now, not one failure per cell
            check_request(CompileRequest(target, args.devices, workload=args.workload, sets=tuple(sets.items())))
            policies = [p.strip() for p in (args.policies or "remat,offload,save").split(",") if p.strip()]
            for p in policies:
                if p not in POLICIES:
                    raise HloscopeError(f"unknown policy '{p}'; choose from {', '.join(POLICIES)}",
                                        EXIT_UNKNOWN_NAME)
        note_jax_version()
        try:
            batches: list[int | None] = [int(b) for b in args.batch_sizes.split(",") if b.strip()] or [None]
        except ValueError:
            raise HloscopeError(f"--batch-sizes wants integers, got '{args.batch_sizes}'", EXIT_BAD_INPUT) from None
        bad = [b for b in batches if b is not None and b < 1]
        if bad:  # a cell per bad size would compile and fail, each with XLA's long message
            raise HloscopeError(f"--batch-sizes: {bad[0]} is not a per-device batch size (want integers >= 1, "
                                f"got '{args.batch_sizes}')", EXIT_BAD_INPUT)
        schedulers = _names(args.schedulers, SCHEDULERS, "scheduler")
        pipelined = [v == "on" for v in _names(args.pipelined, ("on", "off"), "--pipelined value")]
        if args.plot:
            check_plot_path(args.plot)
        if args.trace_dir and args.executor != "local":
            raise HloscopeError("--trace-dir needs --executor local (reports stay in Ray's workers)", EXIT_BAD_INPUT)

        executor = make_executor(args.executor, args.jobs, args.address)
        if maxtext is not None:
            todo = maxtext_cells(maxtext, target, args.devices, policies, batches, schedulers, pipelined,
                                 args.memory_fraction)
        else:
            todo = cells(args.workload, sets, target, args.devices, policies, batches, schedulers, pipelined,
                         args.memory_fraction)
        on_event, phase, stop = progress_bar(len(todo))
        t0 = time.perf_counter()
        try:
            with turned_off(args.no_cache):
                rows = run_sweep(todo, executor, on_event, phase,
                                 _trace_writer(args.trace_dir) if args.trace_dir else None)
        finally:
            stop()
        totals = summary(rows, time.perf_counter() - t0, executor.name)
        cap = ({p: dataclasses.asdict(b) for p, b in capacity_bounds(rows).items()} if args.batch_sizes else None)
        result = SweepResult(args.workload or "maxtext", target, args.devices, rows, tuple(COLUMNS), cap,
                             extra={"summary": totals})
        with open_output(args.output) as out:
            renderer.render(result, out, RenderOptions())
        print(f"hloscope: {summary_line(totals)}", file=sys.stderr)
        if args.plot:
            write_plot(result, args.plot)
        failed = [_cell_name(r) for r in rows if r.get("error")]
        if failed:
            print(f"hloscope: {len(failed)} of {len(rows)} cell(s) failed: {'; '.join(failed)}", file=sys.stderr)
            return EXIT_COMPILE_FAILED
        over = [_cell_name(r) for r in rows if r.get("fits") is False]
        if args.require_fit and over:
            room = "what JAX's allocator takes of the HBM" if args.memory_fraction else "HBM"
            print(f"hloscope: {len(over)} cell(s) do not fit in {room} (--require-fit): {'; '.join(over)}",
                  file=sys.stderr)
            return EXIT_CHECK_FAILED
        return 0


def _cell_name(row: dict[str, object]) -> str:
    error = f" ({row['error']})" if row.get("error") else ""
    return f"policy={row.get('cell')}{error}"


def _names(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    for n in names:
        if n not in allowed:
            raise HloscopeError(f"unknown {what} '{n}'; choose from {', '.join(allowed)}", EXIT_UNKNOWN_NAME)
    if not names:
        raise HloscopeError(f"no {what} given; choose from {', '.join(allowed)}", EXIT_BAD_INPUT)
    return names


def _trace_writer(folder: str):  # type: ignore[no-untyped-def]
    """A callback writing each cell's trace into ``folder`` (created; nothing is written elsewhere)."""
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

