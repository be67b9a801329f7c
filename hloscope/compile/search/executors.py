"""Where a sweep's cells run: local worker processes (default) or Ray tasks.

An executor's ``run(cells, on_event, phase, on_report)`` returns one row per cell, in
cell order. No cell is ever lost: a cell whose compile crashed, ran out of memory or
whose worker or node died comes back as a row with ``error`` set, naming it.

Local: ``jobs`` threads, each running one cell at a time in a fresh ``spawn`` process
(``hloscope.compile.run.jobs.run_isolated``). Ray: each cell is one task
(``num_cpus=1``); Ray retries a task whose worker process or node died, or that its
memory monitor killed, up to ``retries`` times, then the cell is reported failed with
Ray's reason. Inside the task the compile still runs in its own process, so an XLA
crash is a failed row, not a lost worker. Workers use the compile cache at the
driver's ``HLOSCOPE_CACHE_DIR`` (a path every node must see to share it; otherwise
each node caches locally) and rows return to the driver. Ctrl+C cancels every
outstanding task.
"""

from __future__ import annotations

import logging
import os
import re
import socket
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from hloscope.compile.search.sweep import (
    FINISHED,
    STARTED,
    Cell,
    EventFn,
    PhaseFn,
    ReportFn,
    _Analyses,
    failed_row,
    run_cell,
)
from hloscope.errors import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, HloscopeError

RAY_MISSING = "--executor ray needs Ray: pip install 'hloscope[ray]'"


class LocalExecutor:
    """``jobs`` cells at a time, each compiled in its own process on this machine."""

    name = "local"

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)

    def run(self, cells: list[Cell], on_event: EventFn, phase: PhaseFn = None,
            on_report: ReportFn = None) -> list[dict[str, Any]]:
        # Import what a cell needs once, here: imports racing in worker threads can see a
        # half-initialized module.
        # lazy: the compile layer and the analysis, once, before worker threads race to import them
        import hloscope.analysis.kinds
        import hloscope.compile.run.jobs

        analyses = _Analyses()
        rows: list[dict[str, Any] | None] = [None] * len(cells)
        hloscope.compile.run.jobs.allow_children()

        def one(c: Cell) -> dict[str, Any]:
            on_event(STARTED, c, None)
            try:
                return run_cell(c, (lambda name: phase(c, name)) if phase else None, analyses, on_report)
            except Exception as e:  # a bug past the compile (analysis): still this cell's row
                return failed_row(c, f"{type(e).__name__}: {e}")

        pool = ThreadPoolExecutor(max_workers=self.jobs)
        try:
            futs = {pool.submit(one, c): i for i, c in enumerate(cells)}
            for f in as_completed(futs):
                i = futs[f]
                rows[i] = f.result()
                on_event(FINISHED, cells[i], rows[i])
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)
            hloscope.compile.run.jobs.stop_children()  # they never see Ctrl+C themselves
            raise
        pool.shutdown()
        return [r if r is not None else failed_row(c, "not run") for r, c in zip(rows, cells, strict=True)]


def check_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` of a running Ray head, reachable from here; else a one-line error (exit 2)."""
    m = re.fullmatch(r"\[?([A-Za-z0-9_.:-]+?)\]?:(\d{1,5})", address.strip())
    if not m or not 0 < int(m.group(2)) < 65536:
        raise HloscopeError(f"--address '{address}': expected HOST:PORT of a Ray head (e.g. 127.0.0.1:6379)",
                            EXIT_BAD_INPUT)
    host, port = m.group(1), int(m.group(2))
    try:
        with socket.create_connection((host, port), timeout=3):
            pass
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise HloscopeError(f"--address {address}: no Ray head reachable there ({reason})", EXIT_BAD_INPUT) from None
    return host, port


def _ray_cell(cell: Cell, env: dict[str, str]) -> dict[str, Any]:
    """One cell in a Ray worker, with the driver's cache settings."""
    for k, v in env.items():
        os.environ[k] = v
    for k in ("HLOSCOPE_NO_CACHE",):
        if k not in env:
            os.environ.pop(k, None)
    return run_cell(cell)


def _first_line(e: BaseException) -> str:
    for line in str(e).splitlines():
        if line.strip():
            return line.strip()[:300]
    return type(e).__name__


class RayExecutor:
    """Each cell one Ray task on the cluster at ``address`` (None: a Ray started here)."""

    name = "ray"

    def __init__(self, address: str | None = None, retries: int = 2) -> None:
        try:
            # lazy: ray is an optional extra (hloscope[ray])
            import ray  # noqa: F401
        except ImportError:
            raise HloscopeError(RAY_MISSING, EXIT_ENVIRONMENT) from None
        self.address = address
        self.retries = retries
        if address is not None:
            check_address(address)

    def run(self, cells: list[Cell], on_event: EventFn, phase: PhaseFn = None,
            on_report: ReportFn = None) -> list[dict[str, Any]]:
        # lazy: ray is an optional extra (hloscope[ray])
        import ray

        # lazy: the cache loads the analysis; a sweep's cells are built without it
        from hloscope.compile.step.cache import ENV_DIR, ENV_MAX, ENV_OFF, cache_dir

        try:
            ray.init(address=self.address, logging_level=logging.ERROR, log_to_driver=False,
                     include_dashboard=False if self.address is None else None)
        except Exception as e:  # not a Ray head, version mismatch, ...
            where = self.address or "a local Ray"
            raise HloscopeError(f"--address {where}: cannot connect: {_first_line(e)}", EXIT_BAD_INPUT) from None
        env = {ENV_DIR: str(cache_dir().resolve())}
        for k in (ENV_OFF, ENV_MAX, "XLA_FLAGS"):
            if os.environ.get(k):
                env[k] = os.environ[k]
        task = ray.remote(num_cpus=1, max_retries=self.retries, retry_exceptions=False)(_ray_cell)
        rows: list[dict[str, Any] | None] = [None] * len(cells)
        refs = {}
        try:
            for i, c in enumerate(cells):
                refs[task.remote(c, env)] = i
                on_event(STARTED, c, None)
            pending = list(refs)
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    i = refs[ref]
                    rows[i] = self._row(ray, ref, cells[i])
                    on_event(FINISHED, cells[i], rows[i])
        except KeyboardInterrupt:
            for ref in refs:
                if rows[refs[ref]] is None:
                    ray.cancel(ref, force=True)
            raise
        finally:
            ray.shutdown()
        return [r if r is not None else failed_row(c, "not run") for r, c in zip(rows, cells, strict=True)]

    def _row(self, ray: Any, ref: Any, cell: Cell) -> dict[str, Any]:
        try:
            row: dict[str, Any] = ray.get(ref)
            return row
        except ray.exceptions.OutOfMemoryError:
            return failed_row(cell, f"Ray: the worker ran out of memory ({self.retries} retries)")
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
                ray.exceptions.LocalRayletDiedError) as e:
            return failed_row(cell, f"Ray: {type(e).__name__} after {self.retries} retries: {_first_line(e)}")
        except ray.exceptions.TaskCancelledError:
            return failed_row(cell, "Ray: cancelled")
        except ray.exceptions.RayTaskError as e:
            return failed_row(cell, f"Ray task failed: {_first_line(e)}")
        except ray.exceptions.RayError as e:
            return failed_row(cell, f"Ray: {type(e).__name__}: {_first_line(e)}")


def make_executor(name: str, jobs: int, address: str | None) -> LocalExecutor | RayExecutor:
    """The executor named on the command line (``--executor``, ``--address``)."""
    if name == "local":
        if address is not None:
            raise HloscopeError("--address needs --executor ray", EXIT_BAD_INPUT)
        return LocalExecutor(jobs)
    if name == "ray":
        return RayExecutor(address)
    raise HloscopeError(f"unknown executor '{name}'; choose from local, ray", EXIT_BAD_INPUT)
