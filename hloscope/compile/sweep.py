"""The ablation sweep: policy x LHS x pipelined offload (x per-device batch).

Each cell is compiled in its own ``spawn`` process (JAX state is per process, and a
compiler crash must not take the sweep down) and reduced to one row of figures.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

COLUMNS = (
    "policy", "lhs", "pipelined", "batch", "peak_device_bytes", "host_bytes", "fits", "transfers",
    "hidden", "partial", "exposed", "sync", "est_exposed_us", "est_step_us", "compile_s", "error",
)


@dataclass(frozen=True)
class Cell:
    workload: str
    sets: tuple[tuple[str, str], ...]
    policy: str
    lhs: bool
    pipelined: bool
    batch: int | None
    target: str
    devices: int


def cells(workload: str, sets: dict[str, str], target: str, devices: int, policies: list[str],
          batches: list[int | None]) -> list[Cell]:
    return [
        Cell(workload, tuple(sorted(sets.items())), p, lhs, pipe, b, target, devices)
        for b, p, lhs, pipe in itertools.product(batches, policies, (True, False), (True, False))
    ]


def run_cell(cell: Cell) -> dict[str, Any]:
    """Compile and analyze one cell; errors become a row with ``error`` set."""
    from hloscope.compile.jobs import compile_workload
    from hloscope.errors import HloscopeError
    from hloscope.targets import get_target

    sets = dict(cell.sets)
    if cell.batch is not None:
        sets["batch"] = str(cell.batch)
    row: dict[str, Any] = {c: None for c in COLUMNS}
    row.update(policy=cell.policy, lhs=cell.lhs, pipelined=cell.pipelined,
               batch=cell.batch if cell.batch is not None else None, error="")
    try:
        result, report, extra = compile_workload(cell.workload, sets, cell.policy, cell.target, cell.devices,
                                                 cell.lhs, cell.pipelined, [])
    except HloscopeError as e:
        row["error"] = str(e)
        return row
    s = report.summary()
    m = result.memory
    tgt = get_target(cell.target)
    exposed = s["est_exposed_us_per_step"]
    row.update(
        batch=extra["config"]["batch"],
        peak_device_bytes=m["peak_memory_in_bytes"],
        host_bytes=m["host_total_bytes"],
        fits=m["peak_memory_in_bytes"] <= tgt.device_memory_size,
        transfers=s["transfers"],
        hidden=s["by_verdict"]["hidden"], partial=s["by_verdict"]["partial"],
        exposed=s["by_verdict"]["exposed"], sync=s["by_verdict"]["sync"],
        est_exposed_us=round(exposed, 1),
        est_step_us=round(report.est_compute_us() + exposed, 1),
        compile_s=round(result.compile_seconds, 2),
    )
    return row


def run_sweep(all_cells: list[Cell], jobs: int,
              progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Compile every cell, ``jobs`` at a time; each compile runs in its own process,
    so one that crashes or runs out of memory becomes a row with ``error`` set."""
    rows: list[dict[str, Any] | None] = [None] * len(all_cells)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futs = {pool.submit(run_cell, c): i for i, c in enumerate(all_cells)}
        for done, f in enumerate(as_completed(futs), start=1):
            rows[futs[f]] = f.result()
            if progress:
                progress(done, len(all_cells))
    return [r for r in rows if r is not None]


def capacity(rows: list[dict[str, Any]]) -> dict[str, int | None]:
    """Largest per-device batch that fits, per policy (any LHS/pipelining setting)."""
    out: dict[str, int | None] = {}
    for r in rows:
        p = r["policy"]
        out.setdefault(p, None)
        if r.get("fits") and r.get("batch") is not None:
            out[p] = max(out[p] or 0, r["batch"])
    return out
