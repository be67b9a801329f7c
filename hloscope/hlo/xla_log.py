"""What XLA's GPU scheduler believed: its latency estimator's log, read into figures.

A deviceless compile run with ``TF_CPP_MIN_LOG_LEVEL=0`` and
``TF_CPP_VMODULE=sol_latency_estimator=10,latency_hiding_scheduler=1`` logs, per
instruction, the cost the speed-of-light (SOL) latency estimator gave it and, per
async start, the latency it assumed between start and done; the latency hiding
scheduler logs its statistics per computation before and after scheduling. Read
from jaxlib 0.10.2 (XLA 5a9e73cb), ``sol_latency_estimator.cc`` and
``latency_hiding_scheduler.cc``, lines such as::

    NodeCost: Fusion cost from gpu_performance_model for loop_add_fusion.5: 0.001 us
    NodeCost: Matmul cost from matmul_interpolator for gemm_fusion_dot.14: 2.43 us
    NodeCost: Fallback cost for copy.18: 0.01 us
    NodeCost: Returning kLowCost for async start/done op all-gather-start
    GetLatencyBetween: Computed collective time for all-gather-start.1: 31.648 us
    GetLatencyBetween: Fallback to wrapped estimator due to ComputeCollectiveTime failure for
        dynamic-slice-start.1, returning latency: 5000
    [latency-hiding-scheduler] Statistics after scheduling:
    For computation: region_3.4_spmd, module jit_step(1)
    Total cycles: 5088.56

The SOL estimator prices collectives with its own model; any other async pair
(host offloads among them) falls back to the wrapped approximate estimator, which
returns a fixed latency whatever the bytes (5000, ``kHighLatency``): that fixed
figure's source is :attr:`LatencySource.DEFAULT`. ``parse_xla_log`` never raises on lines it
does not know; it keeps the last figure seen per instruction (the scheduler asks
several times, with the same answer).

One log, several modules. XLA 0.12 (jaxlib 0.12.0.1) compiles and schedules a module of
its own for many fusions of the step while it autotunes them (``wrapped_dynamic-slice``,
``loop_dynamic_update_slice_fusion.2``, ``gemm_fusion_dot.14``, ...: 37 in the mlp step's
log), before the step's module (``jit_step``); those with async ops (7 there) log scheduler
statistics and a memory limit of their own. They get no device memory size, so their limits
stay at 80% of the HBM whatever ``--memory-fraction`` says (the largest of them, not the step's,
was read as the limit before). Every module's section starts with
``gpu_hlo_schedule``'s ``Fingerprint before LHS for module NAME(ID) = ...`` and its
statistics name it (``For computation: C, module NAME(ID)``); ``parse_xla_log`` reads the
step's section only: the module named ``module`` (the HLO module's name), else the last
module that logged statistics. Lines are followed per thread (glog's thread id). A log
with no module lines (jaxlib 0.10.2 logged one module) is one section.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from hloscope.hlo.op_time import OpTime

__all__ = ["CostSource", "LatencySource", "SchedulerStats", "XlaLog", "parse_xla_log",
           "LOG_ENVIRONMENT", "LOG_SOURCES", "scheduler_log_lines"]

#: Environment under which XLA writes the lines this module reads (set before XLA loads).
LOG_ENVIRONMENT = {
    "TF_CPP_MIN_LOG_LEVEL": "0",
    "TF_CPP_VMODULE": "sol_latency_estimator=10,latency_hiding_scheduler=1",
}


class CostSource(StrEnum):
    """Where the SOL estimator took an instruction's cost from."""

    PERFORMANCE_MODEL = "gpu_performance_model"  # fusions: XLA's GPU performance model
    MATMUL_INTERPOLATOR = "matmul_interpolator"  # GEMMs: measured tables per GPU
    FALLBACK = "fallback"  # everything else: a small fixed cost
    LOW_COST = "low_cost"  # async starts and dones: kLowCost


class LatencySource(StrEnum):
    """How the estimator arrived at an async pair's latency (the time it assumed between an async
    start and its done).

    An :class:`~hloscope.hlo.op_time.OpTime` of this source is µs for the SOL estimator's own
    figures; for ``DEFAULT`` the wrapped estimator's fixed figure in the scheduler's units (5000 in
    XLA 5a9e73cb), which the SOL-driven scheduler compares with µs costs.
    """

    COLLECTIVE_MODEL = "collective_model"  # the SOL collective cost model
    DEFAULT = "default"  # the wrapped estimator's fixed latency, whatever the bytes


@dataclass(frozen=True)
class SchedulerStats:
    """The latency hiding scheduler's statistics for one computation (``before`` or ``after`` scheduling).

    Cycles are the scheduler's units (µs under the SOL estimator)."""

    computation: str
    phase: str
    total_cycles: float
    wasted_cycles: float
    wasted_by_kind: dict[str, float] = field(default_factory=dict)
    memory_peak_bytes: int | None = None


@dataclass(frozen=True)
class XlaLog:
    """Everything read from one compile's log.

    node_costs: per instruction, the cost the estimator gave it (µs, by :class:`CostSource`).
    async_latency: per async start, the latency assumed between it and its done (by
    :class:`LatencySource`). estimator: ``sol`` when the SOL estimator priced instructions, ``approximate``
    when the latency hiding scheduler ran without it, None when no LHS statistics
    were logged (no LHS, or the log was not captured). memory_limit_bytes: the
    scheduler's memory limit for the step's module as it logged it (largest seen in that
    module's section). profile: the profile file
    XLA scheduled with (``--xla_gpu_pgle_profile_file_or_directory_path``), when its log
    says it found the module in it ("Found profile for module ..., using profile guided
    latency estimator"); its entries then replace the estimator's figures. module: the
    module whose section was read, as the log names it (``jit_step(1)``; None when the log
    names none); modules: every module the log names, in the order they first appear.
    """

    estimator: str | None
    node_costs: dict[str, OpTime[CostSource]]
    async_latency: dict[str, OpTime[LatencySource]]
    stats: tuple[SchedulerStats, ...]
    memory_limit_bytes: int | None = None
    profile: str | None = None
    module: str | None = None
    modules: tuple[str, ...] = ()

    @property
    def cycles_are_us(self) -> bool:
        """Whether the scheduler's cycles are µs: its costs came from the SOL estimator or a
        profile (whose entries are µs), not from the approximate estimator's size classes."""
        return self.estimator == "sol" or self.profile is not None

    def step_cycles(self, executions: Mapping[str, int]) -> float | None:
        """The schedule's length as the scheduler computed it: each computation's total cycles
        after scheduling times its runs per step (``executions``; 1 when not listed), summed.
        None when no statistics after scheduling were logged."""
        after = {s.computation: s.total_cycles for s in self.stats if s.phase == "after"}
        if not after:
            return None
        return sum(total * executions.get(comp, 1) for comp, total in after.items())

    def latency(self, start_name: str) -> OpTime[LatencySource] | None:
        return self.async_latency.get(start_name)

    def cost_us(self, name: str) -> float | None:
        c = self.node_costs.get(name)
        return None if c is None else c.us

    def after(self, computation: str) -> SchedulerStats | None:
        """The statistics after scheduling of ``computation``, if logged."""
        return next((s for s in self.stats if s.computation == computation and s.phase == "after"), None)


#: The XLA source files whose lines an artifact keeps (``xla-scheduler.log``): the scheduler's
#: decisions (gpu_hlo_schedule), the SOL tables (sol_gpu_cost_model), the estimates and the
#: scheduler's statistics.
LOG_SOURCES = ("gpu_hlo_schedule", "sol_gpu_cost_model", "sol_latency_estimator", "latency_hiding_scheduler")


def scheduler_log_lines(text: str) -> str:
    """The lines of a compile's native log that come from :data:`LOG_SOURCES`, unedited, in order."""
    kept = [line for line in text.splitlines()
            if (m := _PREFIX.match(line)) is not None and m.group(1) in LOG_SOURCES]
    return "\n".join(kept) + ("\n" if kept else "")


_NUM = r"(-?[0-9.]+(?:[eE][-+]?[0-9]+)?)"
_PREFIX = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ (\w+)\.cc:\d+\] ")
_NODE = re.compile(r"NodeCost: (Fusion cost from gpu_performance_model|Matmul cost from matmul_interpolator|"
                   r"Fallback cost) for (\S+): " + _NUM + " us")
_LOW = re.compile(r"NodeCost: Returning kLowCost for async start/done op (\S+)")
_COLLECTIVE = re.compile(r"GetLatencyBetween: Computed collective time for (\S+): " + _NUM + " us")
_FALLBACK = re.compile(r"GetLatencyBetween: Fallback to wrapped estimator due to ComputeCollectiveTime failure "
                       r"for (\S+), returning latency: " + _NUM)
_PGLE_FILE = re.compile(r"Using PGLE profile from (.+?)\s*$")
_PGLE_USED = re.compile(r"Found profile for module (\S+), using profile guided latency estimator")
_STATS = re.compile(r"\[latency-hiding-scheduler\] Statistics (before|after) scheduling")
_FOR = re.compile(r"For computation: ([^,]+), module (\S+)")
_TOTAL_WASTED = re.compile(r"Total wasted cycles: " + _NUM)
_WASTED = re.compile(r"Wasted cycles for ([\w-]+(?: [\w-]+)*): " + _NUM)
_TOTAL = re.compile(r"Total cycles: " + _NUM)
_PEAK = re.compile(r"Memory pressure peak \(bytes\): (\d+)")
_LIMIT = re.compile(r"current memory usage: \d+ bytes\. Current limit: (\d+)")
_NODE_SOURCE = {
    "Fusion cost from gpu_performance_model": CostSource.PERFORMANCE_MODEL,
    "Matmul cost from matmul_interpolator": CostSource.MATMUL_INTERPOLATOR,
    "Fallback cost": CostSource.FALLBACK,
}


class _Stats:
    def __init__(self, phase: str) -> None:
        self.phase = phase
        self.computation = ""
        self.total = 0.0
        self.wasted = 0.0
        self.by_kind: dict[str, float] = {}
        self.peak: int | None = None

    def done(self) -> SchedulerStats:
        return SchedulerStats(self.computation, self.phase, self.total, self.wasted, self.by_kind, self.peak)


_SECTION = re.compile(r"Fingerprint before LHS for module (\S+)")
_THREAD = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+(\d+) ")
_MODULE_ID = re.compile(r"\(\d+\)$")


class _Section:
    def __init__(self, module: str | None) -> None:
        self.module = module
        self.lines: list[tuple[str, str]] = []  # (source file, the line after the glog prefix)


def _sections(text: str) -> list[_Section]:
    """The log's lines of the known sources, cut into one section per module scheduled (in the
    order the sections start), each thread followed on its own."""
    sections: list[_Section] = []
    current: dict[str, _Section] = {}
    for raw in text.splitlines():
        m = _PREFIX.match(raw)
        if m is None:
            continue
        source, line = m.group(1), raw[m.end():]
        t = _THREAD.match(raw)
        thread = t.group(1) if t is not None else ""
        sec = current.get(thread)
        named = None
        if source == "gpu_hlo_schedule" and (n := _SECTION.search(line)) is not None:
            named, sec = n.group(1), None
        elif source == "latency_hiding_scheduler" and (n := _FOR.search(line)) is not None:
            named = n.group(2)
            if sec is not None and sec.module is None:
                sec.module = named  # the lines before the first statistics belong to it
            elif sec is not None and sec.module != named:
                sec = None
        if sec is None:
            sec = _Section(named)
            sections.append(sec)
            current[thread] = sec
        sec.lines.append((source, line))
    return sections


def _step_section(sections: list[_Section], module: str | None) -> tuple[str | None, list[tuple[str, str]]]:
    """The lines of the step's module: those of ``module`` (a name without XLA's ``(id)``, or with
    it), else of the last module with scheduler statistics, else all; with the module's name."""
    def named(sec: _Section) -> bool:
        return module is not None and sec.module is not None and module in (sec.module,
                                                                            _MODULE_ID.sub("", sec.module))

    def scheduled(sec: _Section) -> bool:
        return any(src == "latency_hiding_scheduler" and _STATS.search(ln) for src, ln in sec.lines)

    chosen = next((sec.module for sec in reversed(sections) if named(sec)), None)
    if chosen is None:
        chosen = next((sec.module for sec in reversed(sections) if sec.module is not None and scheduled(sec)), None)
    if chosen is None:
        return None, [ln for sec in sections for ln in sec.lines]
    return chosen, [ln for sec in sections if sec.module == chosen for ln in sec.lines]


def parse_xla_log(text: str, module: str | None = None) -> XlaLog:
    """Read XLA's estimator and scheduler lines for the step's module out of a compile's stderr
    (other lines are skipped). ``module``: the step's HLO module name (``jit_step``); without it
    the last module the log scheduled is the step's."""
    sections = _sections(text)
    read, lines = _step_section(sections, module)
    nodes: dict[str, OpTime[CostSource]] = {}
    latency: dict[str, OpTime[LatencySource]] = {}
    stats: list[SchedulerStats] = []
    current: _Stats | None = None
    limit: int | None = None
    sol = False
    profile_file: str | None = None
    profile: str | None = None
    for source, line in lines:
        if source == "sol_latency_estimator":
            sol = True
            if (n := _NODE.search(line)) is not None:
                nodes[n.group(2)] = OpTime(n.group(2), float(n.group(3)), _NODE_SOURCE[n.group(1)])
            elif (n := _LOW.search(line)) is not None:
                nodes.setdefault(n.group(1), OpTime(n.group(1), 0.0, CostSource.LOW_COST))
            elif (n := _COLLECTIVE.search(line)) is not None:
                latency[n.group(1)] = OpTime(n.group(1), float(n.group(2)), LatencySource.COLLECTIVE_MODEL)
            elif (n := _FALLBACK.search(line)) is not None:
                latency[n.group(1)] = OpTime(n.group(1), float(n.group(2)), LatencySource.DEFAULT)
            continue
        if source != "latency_hiding_scheduler":
            continue
        if (s := _STATS.search(line)) is not None:
            if current is not None and current.computation:
                stats.append(current.done())
            current = _Stats(s.group(1))
        elif (s := _LIMIT.search(line)) is not None:
            limit = max(limit or 0, int(s.group(1)))
        elif current is not None:
            if (s := _FOR.search(line)) is not None:
                current.computation = s.group(1)
            elif (s := _TOTAL_WASTED.search(line)) is not None:
                current.wasted = float(s.group(1))
            elif (s := _WASTED.search(line)) is not None:
                current.by_kind[s.group(1)] = float(s.group(2))
            elif (s := _TOTAL.search(line)) is not None:
                current.total = float(s.group(1))
            elif (s := _PEAK.search(line)) is not None:
                current.peak = int(s.group(1))
                stats.append(current.done())
                current = None
    if current is not None and current.computation:
        stats.append(current.done())
    # The profile lines, wherever they fall: the one that found the step's module.
    step = _MODULE_ID.sub("", read) if read is not None else None
    for sec in sections:
        for source, line in sec.lines:
            if source != "gpu_hlo_schedule":
                continue
            if (n := _PGLE_FILE.search(line)) is not None:
                profile_file = n.group(1)
            elif (n := _PGLE_USED.search(line)) is not None and step in (None, n.group(1),
                                                                          _MODULE_ID.sub("", n.group(1))):
                profile = profile_file or ""
    estimator = "sol" if sol else ("approximate" if stats else None)
    names = tuple(dict.fromkeys(sec.module for sec in sections if sec.module is not None))
    return XlaLog(estimator, nodes, latency, tuple(stats), limit, profile, read, names)
