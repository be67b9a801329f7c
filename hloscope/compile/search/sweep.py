"""The ablation sweep: policy x scheduler x pipelined offload (x per-device batch).

Each cell is compiled in its own ``spawn`` process (JAX state is per process, and a
compiler crash must not take the sweep down) and reduced to one row of figures.
Cells run on an executor (``hloscope.compile.search.executors``): local worker processes,
or Ray tasks. Every compile goes through the compile cache
(``hloscope.compile.step.cache``): a cell whose lowered module and options were compiled
before is read back instead of compiled (row ``cached``), which also makes a
killed sweep resumable: the rerun compiles only the cells that never finished.
A cell fits when its *device allocation* (arguments + temporaries + non-aliased
outputs in HBM) is within the target's HBM; XLA's ``peak_memory_in_bytes`` is kept
beside it but can count pinned-host buffers (docs/memory.md).

Identical cells. Each row carries ``fingerprint``, the first 12 hex digits of the
SHA-256 of the optimized HLO XLA produced, and ``identical_to``, the first cell
(in cell order) whose optimized HLO is byte-identical. Identity is only ever
claimed after comparing what XLA emitted: cells that pass different options (the
scheduler) are different cache keys and each is compiled once; whether XLA
ignores an option cannot be known before compiling. What identity saves is the
second analysis: a cell whose optimized HLO (and tensor names) match an analyzed
one reuses that report. A cell repeated in the inputs (``--batch-sizes 8,8``) is
the same compile and is run once.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from hloscope.compile import workloads
from hloscope.errors import HloscopeError
from hloscope.request import CompileRequest, Policy, Scheduler

if TYPE_CHECKING:
    from hloscope.analysis.report import Report
    from hloscope.compile.result import CompileResult

#: Row fields beyond COLUMNS (in JSON output, not in the table or CSV).
MEMORY_FIELDS = (
    "cell", "device_allocation_bytes", "xla_peak_counts_host", "top_buffer_role", "top_buffer_bytes",
    "top_buffer_position", "compiled_s", "cache_key", "cache_lookup", "model_tflops_per_device", "est_call_host_us",
)

COLUMNS = (
    "policy", "scheduler", "pipelined", "batch", "peak_device_bytes", "host_bytes", "fits", "transfers",
    "hidden", "partial", "exposed", "sync", "est_exposed_us", "est_step_us", "cached", "compile_s", "fingerprint",
    "identical_to", "error",
)

#: The scheduler axis, in table order.
SCHEDULERS = tuple(s.value for s in Scheduler)

@dataclass(frozen=True)
class Cell:
    """One compile of a sweep (or of tune's search): the request, and where its row sits in the table.

    request: what ``hloscope compile`` would be asked for. policy / batch: the cell's coordinates, as
    the table shows them (MaxText's ``remat_policy`` and ``per_device_batch_size`` for a MaxText
    step; tune's cells are ``offload`` with the configuration in their settings). tag: how progress
    lines and reports name the cell when its coordinates do not (tune's configurations)."""

    request: CompileRequest
    policy: str
    batch: int | None = None
    tag: str = ""

    @property
    def scheduler(self) -> str:
        return self.request.scheduler.value

    @property
    def pipelined(self) -> bool:
        """Whether pipelined host offloading is on (a cell always says: never XLA's default)."""
        return self.request.pipelined is not False

    @property
    def label(self) -> str:
        return self.tag or cell_label(self.policy, self.scheduler, self.pipelined, self.batch)


def maxtext_cells(maxtext: tuple[str, ...], target: str, devices: int, policies: list[str],
                  batches: list[int | None], schedulers: list[str] | None = None,
                  pipelined: list[bool] | None = None, memory_fraction: float | None = None) -> list[Cell]:
    """The cells of MaxText's step: each remat policy x batch x scheduler x pipelining, in table order;
    the policy and batch are appended to the user's config and overrides."""
    return [
        Cell(CompileRequest(target=target, devices=devices, scheduler=Scheduler(sch), pipelined=pipe,
                            memory_fraction=memory_fraction,
                            maxtext=(*maxtext, f"remat_policy={p}", *([f"per_device_batch_size={b}"] if b else []))),
             p, b)
        for b, p, sch, pipe in itertools.product(dict.fromkeys(batches), dict.fromkeys(policies),
                                                 dict.fromkeys(schedulers or SCHEDULERS),
                                                 dict.fromkeys(pipelined or (True, False)))
    ]


def cells(workload: str, sets: dict[str, str], target: str, devices: int, policies: list[str],
          batches: list[int | None], schedulers: list[str] | None = None,
          pipelined: list[bool] | None = None, memory_fraction: float | None = None) -> list[Cell]:
    """Every cell, in table order; a value repeated in any axis counts once. ``memory_fraction``:
    every cell compiled as on a GPU whose allocator takes that fraction of the HBM."""
    return [
        Cell(CompileRequest(target=target, devices=devices, workload=workload,
                            sets=tuple(sorted((sets | ({"batch": str(b)} if b is not None else {})).items())),
                            policy=Policy(p), scheduler=Scheduler(sch), pipelined=pipe,
                            memory_fraction=memory_fraction), p, b)
        for b, p, sch, pipe in itertools.product(dict.fromkeys(batches), dict.fromkeys(policies),
                                                 dict.fromkeys(schedulers or SCHEDULERS),
                                                 dict.fromkeys(pipelined or (True, False)))
    ]


def cell_label(policy: str, scheduler: str, pipelined: bool, batch: int | None) -> str:
    """``offload scheduler=lhs pipelined=off batch=8``: how reports name a cell."""
    on = {True: "on", False: "off"}
    return f"{policy} scheduler={scheduler} pipelined={on[pipelined]}" + (
        f" batch={batch}" if batch is not None else "")


class _Analyses:
    """Reports by (fingerprint, target, tensor names): identical optimized HLO is analyzed once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: dict[tuple[str, str, str], Report] = {}

    def get(self, result: CompileResult, fingerprint: str, target: str, vocab: int | None = None) -> Report:
        # lazy: the compile layer and the analysis: a sweep's cells are built without them
        from hloscope.compile.run.jobs import analyze_result

        # Identical optimized HLO gives identical memory figures from XLA: one analysis serves both.
        key = (fingerprint, target, json.dumps([t.to_json() for t in result.tensor_names], sort_keys=True))
        with self._lock:
            if key in self._done:
                return self._done[key]
        report = analyze_result(result, target, vocab)
        with self._lock:
            return self._done.setdefault(key, report)


def empty_row(cell: Cell) -> dict[str, Any]:
    """A row with the cell's coordinates and every figure unset."""
    row: dict[str, Any] = {c: None for c in (*COLUMNS, *MEMORY_FIELDS)}
    row.update(policy=cell.policy, scheduler=cell.scheduler, pipelined=cell.pipelined, batch=cell.batch,
               error="", fingerprint="", identical_to="", cached=False, cell=cell.label)
    return row


def failed_row(cell: Cell, error: str, seconds: float | None = None) -> dict[str, Any]:
    """The row of a cell that did not produce a result (named, never dropped)."""
    row = empty_row(cell)
    row.update(error=error, compile_s=round(seconds, 2) if seconds is not None else None)
    return row


def run_cell(cell: Cell, phase: Callable[[str], None] | None = None,
             analyses: _Analyses | None = None,
             on_report: ReportFn = None) -> dict[str, Any]:
    """Compile (or read from the cache) and analyze one cell; errors become a row with
    ``error`` set. ``phase`` is called with each compile phase's name as it starts."""
    # lazy: the compile layer and the analysis: a sweep's cells are built without them
    from hloscope.analysis.kinds import VerdictKind
    from hloscope.compile.run.jobs import PHASE_ANALYSIS, compile_request_result, hlo_fingerprint, vocab_of

    # lazy: the cache loads the analysis; a sweep's cells are built without it
    from hloscope.compile.step.cache import load_request, remember_request

    t0 = time.perf_counter()
    request = cell.request
    found = load_request(request)
    try:
        result, extra = found if found is not None else compile_request_result(request, phase=phase)
    except HloscopeError as e:
        return failed_row(cell, str(e), time.perf_counter() - t0)
    if found is None:
        remember_request(request, result, extra)
    seconds = time.perf_counter() - t0
    if phase:
        phase(PHASE_ANALYSIS)
    fingerprint = hlo_fingerprint(result.optimized_hlo)
    config = extra.get("config") or {}  # a --fn or MaxText step (tune's cells) has no workload config
    report = (analyses or _Analyses()).get(result, fingerprint, request.target, vocab_of(extra))
    s = report.summary
    facts = report.memory
    assert facts is not None  # a compile's report always has its memory facts (the compile's figures)
    top = facts.top_buffers[0] if facts.top_buffers else None
    exposed = s.est_exposed_us_per_step
    cache = result.cache
    row = empty_row(cell)
    row.update(
        batch=config.get("batch", (extra.get("maxtext") or {}).get("per_device_batch_size", cell.batch)),
        peak_device_bytes=result.figures.peak_bytes,
        host_bytes=result.figures.host_total_bytes,
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
        cached=bool(cache.get("hit")),
        # Wall seconds this sweep spent on the cell's compile (a cache hit: trace, lower, read);
        # compiled_s: what XLA's compile took when the entry was made.
        compile_s=round(seconds, 2),
        compiled_s=round(float(cache.get("compiled_seconds", result.compile_seconds)), 2),
        cache_key=cache.get("key") or "",
        cache_lookup=(cache.get("via") or "lowered module") if cache.get("hit") else "",
        fingerprint=fingerprint,
    )
    row["model_tflops_per_device"] = _model_tflops(request, row["est_step_us"])
    # the host work the runtime adds to every call (new pinned-host outputs mapped), None where not priced
    host = report.host_call.host_us
    row["est_call_host_us"] = round(host, 1) if host is not None else None
    if on_report is not None:
        on_report(row, report)
    return row


def _model_tflops(request: CompileRequest, step_us: float | None) -> float | None:
    """Model TFLOP/s per device at the estimated step time, with the step's model FLOPs as
    MaxText counts them (``workloads.model_flops_per_device``); None without a count."""
    if not step_us or request.workload is None:
        return None
    _, cfg = workloads.resolve(request.workload, request.workload_settings)
    flops = workloads.model_flops_per_device(cfg)
    return round(flops / step_us / 1e6, 1) if flops else None


#: Executor events, as ``on_event(kind, cell, row)`` receives them.
STARTED, FINISHED = "started", "finished"

#: ``on_event(kind, cell, row)``, ``phase(cell, name)`` and ``on_report(row, report)``, as :func:`run_sweep` takes them.
EventFn = Callable[[str, "Cell", dict[str, Any] | None], None]
PhaseFn = Callable[["Cell", str], None] | None
ReportFn = Callable[[dict[str, Any], "Report"], None] | None


class Executor(Protocol):
    """Where cells run (``hloscope.compile.search.executors``): one row per cell, in cell order."""

    name: str

    def run(self, cells: list[Cell], on_event: EventFn, phase: PhaseFn = None,
            on_report: ReportFn = None) -> list[dict[str, Any]]: ...


def run_sweep(all_cells: list[Cell], executor: Executor, on_event: EventFn | None = None, phase: PhaseFn = None,
              on_report: ReportFn = None) -> list[dict[str, Any]]:
    """Run every cell on ``executor`` (``hloscope.compile.search.executors``: LocalExecutor(jobs),
    RayExecutor(address)). Each compile runs in its own process, so one that
    crashes or runs out of memory becomes a row with ``error`` set, named by its cell.
    ``on_event(kind, cell, row)`` is called as a cell starts (row None) and finishes;
    ``phase(cell, name)`` as a cell's compile enters a phase (local executor);
    ``on_report(row, report)`` with each compiled cell's report (traces). Rows come
    back in cell order with ``identical_to`` set (:func:`mark_identical`)."""
    rows = executor.run(all_cells, on_event or (lambda kind, cell, row: None), phase, on_report)
    return mark_identical(rows)


def summary(rows: list[dict[str, Any]], seconds: float, executor: str) -> dict[str, Any]:
    """How many cells were compiled, read from the cache, failed; wall seconds."""
    failed = sum(1 for r in rows if r.get("error"))
    cached = sum(1 for r in rows if r.get("cached") and not r.get("error"))
    return {"cells": len(rows), "compiled": len(rows) - failed - cached, "cached": cached, "failed": failed,
            "seconds": round(seconds, 2), "executor": executor}


def summary_line(s: dict[str, Any]) -> str:
    return (f"{s['cells']} cells: {s['compiled']} compiled, {s['cached']} from the cache, {s['failed']} failed "
            f"({s['executor']} executor, {s['seconds']:.1f} s)")


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
    """The capacity answer per policy, from rows with a batch (any scheduler/pipelining setting:
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
    (any scheduler/pipelining setting); :func:`capacity_bounds` gives the full answer."""
    out: dict[str, int | None] = {}
    for r in rows:
        p = r["policy"]
        out.setdefault(p, None)
        if r.get("fits") and r.get("batch") is not None:
            out[p] = max(out[p] or 0, r["batch"])
    return out
