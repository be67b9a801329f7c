"""The ablation sweep: policy x LHS x pipelined offload (x per-device batch).

Each cell is compiled in its own ``spawn`` process (JAX state is per process, and a
compiler crash must not take the sweep down) and reduced to one row of figures.
A cell fits when its *device allocation* (arguments + temporaries + non-aliased
outputs in HBM) is within the target's HBM; XLA's ``peak_memory_in_bytes`` is kept
beside it but can count pinned-host buffers (docs/memory.md).

Identical cells. Each row carries ``fingerprint``, the first 12 hex digits of the
SHA-256 of the optimized HLO XLA produced, and ``identical_to``, the first cell
(in cell order) whose optimized HLO is byte-identical. Identity is only ever
claimed after comparing what XLA emitted: the compile of a cell is never skipped
because another cell's lowered module and options look alike, since cells differ
in the options they pass (the LHS flag) and whether XLA ignores one cannot be
known before compiling (jaxlib 0.10.2 does ignore it: ``--lhs`` / ``--no-lhs``
give byte-identical schedules, measured). What identity does save is the second
analysis: a cell whose optimized HLO (and tensor names) match an analyzed one
reuses that report. A cell repeated in the inputs (``--batch-sizes 8,8``) is the
same compile and is run once.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

#: Row fields beyond COLUMNS (in JSON output, not in the table or CSV).
MEMORY_FIELDS = (
    "cell", "device_allocation_bytes", "xla_peak_counts_host", "top_buffer_role", "top_buffer_bytes",
    "top_buffer_position",
)

COLUMNS = (
    "policy", "lhs", "pipelined", "batch", "peak_device_bytes", "host_bytes", "fits", "transfers",
    "hidden", "partial", "exposed", "sync", "est_exposed_us", "est_step_us", "compile_s", "fingerprint",
    "identical_to", "error",
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
    """Every cell, in table order; a value repeated in ``policies`` or ``batches`` counts once."""
    return [
        Cell(workload, tuple(sorted(sets.items())), p, lhs, pipe, b, target, devices)
        for b, p, lhs, pipe in itertools.product(dict.fromkeys(batches), dict.fromkeys(policies),
                                                 (True, False), (True, False))
    ]


def cell_label(policy: str, lhs: bool, pipelined: bool, batch: int | None) -> str:
    """``offload lhs=on pipelined=off batch=8``: how reports name a cell."""
    on = {True: "on", False: "off"}
    return f"{policy} lhs={on[lhs]} pipelined={on[pipelined]}" + (f" batch={batch}" if batch is not None else "")


class _Analyses:
    """Reports by (fingerprint, target, tensor names): identical optimized HLO is analyzed once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: dict[tuple[str, str, str], Any] = {}

    def get(self, result: Any, fingerprint: str, target: str, vocab: int | None = None) -> Any:
        from hloscope.compile.jobs import analyze_result

        # Identical optimized HLO gives identical memory figures from XLA: one analysis serves both.
        key = (fingerprint, target, json.dumps(result.tensor_names, sort_keys=True, default=str))
        with self._lock:
            if key in self._done:
                return self._done[key]
        report = analyze_result(result, target, vocab)
        with self._lock:
            return self._done.setdefault(key, report)


def run_cell(cell: Cell, phase: Callable[[str], None] | None = None,
             analyses: _Analyses | None = None,
             on_report: Callable[[dict[str, Any], Any], None] | None = None) -> dict[str, Any]:
    """Compile and analyze one cell; errors become a row with ``error`` set.
    ``phase`` is called with each compile phase's name as it starts."""
    from hloscope.analysis.kinds import VerdictKind
    from hloscope.compile.jobs import PHASE_ANALYSIS, compile_workload_result, hlo_fingerprint
    from hloscope.errors import HloscopeError

    sets = dict(cell.sets)
    if cell.batch is not None:
        sets["batch"] = str(cell.batch)
    row: dict[str, Any] = {c: None for c in (*COLUMNS, *MEMORY_FIELDS)}
    row.update(policy=cell.policy, lhs=cell.lhs, pipelined=cell.pipelined,
               batch=cell.batch if cell.batch is not None else None, error="", fingerprint="", identical_to="",
               cell=cell_label(cell.policy, cell.lhs, cell.pipelined, cell.batch))
    try:
        result, extra = compile_workload_result(cell.workload, sets, cell.policy, cell.target, cell.devices,
                                                cell.lhs, cell.pipelined, [], phase=phase)
    except HloscopeError as e:
        row["error"] = str(e)
        return row
    if phase:
        phase(PHASE_ANALYSIS)
    fingerprint = hlo_fingerprint(result.optimized_hlo)
    vocab = extra["config"].get("vocab")
    report = (analyses or _Analyses()).get(result, fingerprint, cell.target, vocab if isinstance(vocab, int) else None)
    s = report.summary
    m = result.memory
    facts = report.memory
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
        est_step_us=round(s.step.step_us if s.step is not None else report.est_compute_us() + exposed, 1),
        compile_s=round(result.compile_seconds, 2),
        fingerprint=fingerprint,
    )
    if on_report is not None:
        on_report(row, report)
    return row


def run_sweep(all_cells: list[Cell], jobs: int,
              progress: Callable[[int, int], None] | None = None,
              phase: Callable[[Cell, str], None] | None = None,
              on_report: Callable[[dict[str, Any], Any], None] | None = None) -> list[dict[str, Any]]:
    """Compile every cell, ``jobs`` at a time; each compile runs in its own process,
    so one that crashes or runs out of memory becomes a row with ``error`` set.
    ``phase(cell, name)`` is called as each cell's compile enters a phase;
    ``on_report(row, report)`` with each compiled cell's report (traces). Rows come
    back in cell order with ``identical_to`` set (:func:`mark_identical`)."""
    rows: list[dict[str, Any] | None] = [None] * len(all_cells)
    analyses = _Analyses()

    def one(c: Cell) -> dict[str, Any]:
        return run_cell(c, (lambda name: phase(c, name)) if phase else None, analyses, on_report)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futs = {pool.submit(one, c): i for i, c in enumerate(all_cells)}
        for done, f in enumerate(as_completed(futs), start=1):
            rows[futs[f]] = f.result()
            if progress:
                progress(done, len(all_cells))
    return mark_identical([r for r in rows if r is not None])


def mark_identical(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Set each row's ``identical_to`` to the ``cell`` of the first row with the same
    fingerprint (empty for that first row, for unique ones and for failed cells)."""
    first: dict[str, str] = {}
    for r in rows:
        fp = r.get("fingerprint") or ""
        r["identical_to"] = first.setdefault(fp, r["cell"]) if fp else ""
        if r["identical_to"] == r["cell"]:
            r["identical_to"] = ""
    return rows


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
