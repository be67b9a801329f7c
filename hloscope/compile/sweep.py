"""The ablation sweep: policy x LHS x pipelined offload (x per-device batch).

Each cell is compiled in its own ``spawn`` process (JAX state is per process, and a
compiler crash must not take the sweep down) and reduced to one row of figures.
A cell fits when its *device allocation* (arguments + temporaries + non-aliased
outputs in HBM) is within the target's HBM; XLA's ``peak_memory_in_bytes`` is kept
beside it but can count pinned-host buffers (docs/memory.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

#: Row fields beyond COLUMNS (in JSON output, not in the table or CSV).
MEMORY_FIELDS = (
    "device_allocation_bytes", "xla_peak_counts_host", "top_buffer_role", "top_buffer_bytes",
    "top_buffer_position",
)

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
    from hloscope.analysis.kinds import VerdictKind
    from hloscope.analysis.memory import memory_facts
    from hloscope.compile.deviceless import BUFFER_ASSIGNMENT_FILE, LIVE_AT_PEAK_FILE, MEMORY_REPORT_FILE
    from hloscope.compile.jobs import compile_workload
    from hloscope.errors import HloscopeError
    from hloscope.targets import get_target

    sets = dict(cell.sets)
    if cell.batch is not None:
        sets["batch"] = str(cell.batch)
    row: dict[str, Any] = {c: None for c in (*COLUMNS, *MEMORY_FIELDS)}
    row.update(policy=cell.policy, lhs=cell.lhs, pipelined=cell.pipelined,
               batch=cell.batch if cell.batch is not None else None, error="")
    try:
        result, report, extra = compile_workload(cell.workload, sets, cell.policy, cell.target, cell.devices,
                                                 cell.lhs, cell.pipelined, [])
    except HloscopeError as e:
        row["error"] = str(e)
        return row
    s = report.summary
    m = result.memory
    tgt = get_target(cell.target)
    facts = memory_facts(m, tgt, result.extra_files.get(MEMORY_REPORT_FILE),
                         result.extra_files.get(BUFFER_ASSIGNMENT_FILE), getattr(report, "module", None),
                         result.extra_files.get(LIVE_AT_PEAK_FILE), vocab_size=extra["config"].get("vocab"))
    top = facts.top_buffers[0] if facts.top_buffers else None
    exposed = s.est_exposed_us_per_step
    row.update(
        batch=extra["config"]["batch"],
        peak_device_bytes=m["peak_memory_in_bytes"],
        host_bytes=m["host_total_bytes"],
        fits=facts.fits,
        device_allocation_bytes=facts.device_allocation_bytes,
        xla_peak_counts_host=facts.xla_peak_counts_host,
        top_buffer_role=top.role.value if top else "",
        top_buffer_bytes=top.size_bytes if top else 0,
        top_buffer_position=top.position if top else "",
        transfers=s.transfers,
        hidden=s.by_verdict[VerdictKind.HIDDEN], partial=s.by_verdict[VerdictKind.PARTIAL],
        exposed=s.by_verdict[VerdictKind.EXPOSED], sync=s.by_verdict[VerdictKind.SYNC],
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


@dataclass(frozen=True)
class CapacityBound:
    """Per policy: largest_fit, the largest per-device batch whose device allocation fits in
    HBM (None if none did); smallest_over, the smallest batch that did not fit (None if all
    did); each with its device allocation (bytes) and the top live-at-peak buffer of the
    smallest batch over (role and bytes)."""

    policy: str
    largest_fit: int | None
    largest_fit_bytes: int | None
    smallest_over: int | None
    smallest_over_bytes: int | None
    smallest_over_top_role: str
    smallest_over_top_bytes: int


def capacity_bounds(rows: list[dict[str, Any]]) -> dict[str, CapacityBound]:
    """The capacity answer per policy, from rows with a batch (any LHS/pipelining setting:
    a batch fits under a policy if any of its cells fits)."""
    by: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for r in rows:
        if r.get("batch") is not None and not r.get("error"):
            by.setdefault(r["policy"], {}).setdefault(int(r["batch"]), []).append(r)
    out: dict[str, CapacityBound] = {}
    for p, batches in by.items():
        fit = {b: min(x["device_allocation_bytes"] for x in rs if x.get("fits"))
               for b, rs in batches.items() if any(x.get("fits") for x in rs)}
        over = {b: min(rs, key=lambda x: x["device_allocation_bytes"])
                for b, rs in batches.items() if b not in fit}
        big = max(fit) if fit else None
        small = min(over) if over else None
        o = over[small] if small is not None else None
        out[p] = CapacityBound(p, big, fit[big] if big is not None else None, small,
                               o["device_allocation_bytes"] if o else None,
                               (o.get("top_buffer_role") or "") if o else "",
                               int(o.get("top_buffer_bytes") or 0) if o else 0)
    return out


def capacity(rows: list[dict[str, Any]]) -> dict[str, int | None]:
    """Largest per-device batch that fits (device allocation within HBM), per policy
    (any LHS/pipelining setting); :func:`capacity_bounds` gives the full answer."""
    out: dict[str, int | None] = {}
    for r in rows:
        p = r["policy"]
        out.setdefault(p, None)
        if r.get("fits") and r.get("batch") is not None:
            out[p] = max(out[p] or 0, r["batch"])
    return out
