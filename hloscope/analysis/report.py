"""The analysis pipeline and the typed report it returns (rendered by ``hloscope.render``).

``analyze_module(module, target, options) -> Report`` builds one
:class:`ModuleIndex` and runs the passes in order: ``find_host_transfers`` ->
``pair_async_ops`` -> ``judge_overlap``, then sums them up in a
:class:`Summary`. The report is data only: ``hloscope.render`` turns it into
text, JSON and the other formats. ``to_dict``/``to_text`` are conveniences for
the Python API that call the renderers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from hloscope.analysis.cost import CostModel
from hloscope.analysis.index import ModuleIndex
from hloscope.analysis.kinds import Direction, PairKind, VerdictKind
from hloscope.analysis.names import name_transfers
from hloscope.analysis.overlap import AnalysisOptions, apply_timeline, judge_overlap
from hloscope.analysis.pairs import AsyncPair
from hloscope.analysis.timeline import Timeline, simulate_step
from hloscope.analysis.transfers import HostTransfer, find_host_transfers
from hloscope.analysis.verdict import Verdict
from hloscope.hlo.model import Module, SourceLocation
from hloscope.targets import Target


@dataclass(frozen=True)
class LoopBytes:
    """Bytes moved by one execution of a computation that holds transfers."""

    computation: str
    executions: int
    to_host_bytes: int
    to_device_bytes: int
    transfers: int


@dataclass(frozen=True)
class StepTime:
    """The simulated step (analysis/timeline.py), µs: step = compute + the three waits.

    link_mode: host link figures used. extrapolated_loops: loops whose later iterations
    were extrapolated from a steady one rather than replayed.
    """

    step_us: float
    compute_us: float
    exposed_transfer_us: float
    exposed_collective_us: float
    other_wait_us: float
    link_mode: str
    extrapolated_loops: int


@dataclass(frozen=True)
class Summary:
    """Step totals. Bytes are per step (``bytes * executions``); times are estimates in µs."""

    transfers: int
    to_host_bytes_per_step: int
    to_device_bytes_per_step: int
    by_verdict: dict[VerdictKind, int]
    est_exposed_us_per_step: float
    loops: tuple[LoopBytes, ...]
    unknown_trip_counts: tuple[str, ...]
    step: StepTime | None = None


def summarize(verdicts: list[Verdict], unknown_trip_counts: list[str], timeline: Timeline | None = None) -> Summary:
    per_step = {d: 0 for d in Direction}
    by_verdict = {k: 0 for k in VerdictKind}
    rows: dict[str, list[int]] = {}
    order: dict[str, int] = {}
    exposed = 0.0
    for v in verdicts:
        t = v.transfer
        per_step[t.direction] += t.bytes * t.executions
        by_verdict[v.verdict] += 1
        exposed += v.est_exposed_us * t.executions
        r = rows.setdefault(t.computation, [0, 0, 0])
        order.setdefault(t.computation, t.executions)
        r[0 if t.direction is Direction.TO_HOST else 1] += t.bytes
        r[2] += 1
    loops = tuple(LoopBytes(c, order[c], r[0], r[1], r[2]) for c, r in rows.items())
    step = None
    if timeline is not None:
        step = StepTime(timeline.step_us, timeline.compute_us, timeline.exposed_transfer_us,
                        timeline.exposed_collective_us, timeline.other_wait_us, timeline.link_mode,
                        sum(lp.extrapolated for lp in timeline.loops))
    return Summary(len(verdicts), per_step[Direction.TO_HOST], per_step[Direction.TO_DEVICE], by_verdict,
                   exposed, loops, tuple(unknown_trip_counts), step)


@dataclass(frozen=True)
class Report:
    """Everything the analysis found about one module.

    index: the shared :class:`ModuleIndex`. transfers / verdicts: one verdict per
    transfer, same order. pairs: every async start/done pair. cost: the cost
    model used for the estimates. summary: step totals. notes: facts about how the
    input was read (which file of a folder, which module of several), for the
    views to show. memory: device/host memory facts when the step was compiled
    here (``hloscope.analysis.memory.MemoryFacts``), else None. compile: the
    compile's settings and figures (``hloscope compile``), else None. timeline: the
    simulated step (None for an unscheduled module or ``AnalysisOptions(simulate=False)``).
    """

    module: Module
    target: Target
    options: AnalysisOptions
    index: ModuleIndex
    transfers: tuple[HostTransfer, ...]
    verdicts: tuple[Verdict, ...]
    cost: CostModel
    summary: Summary
    notes: tuple[str, ...] = ()
    memory: Any = None
    compile: dict[str, Any] | None = None
    timeline: Timeline | None = None

    @property
    def pairs(self) -> list[AsyncPair]:
        return self.index.pairs

    @property
    def host_space(self) -> int:
        return self.options.host_space

    def est_compute_us(self) -> float:
        """Estimated compute time of the whole step (entry computation, loops expanded)."""
        return self.cost.computation_us(self.module.entry_name)  # cached by the cost model

    def source(self, v: Verdict) -> SourceLocation | None:
        """The user line of the moved tensor, else the transfer instruction's own frame."""
        return v.transfer.source or self.module.source_location(v.transfer.instruction)

    @cached_property
    def _transfer_starts(self) -> frozenset[tuple[str, str]]:
        return frozenset((t.computation, t.instruction.name) for t in self.transfers)

    def pair_kind(self, p: AsyncPair) -> PairKind:
        """``host_transfer`` for pairs that are host transfers, else the pair's own kind."""
        return PairKind.HOST_TRANSFER if (p.start.computation, p.start.name) in self._transfer_starts else p.kind

    def verdict_for(self, name: str) -> Verdict | None:
        """The verdict of the transfer whose start (or sync op) is called ``name``."""
        return next((v for v in self.verdicts if v.transfer.instruction.name == name), None)

    # -- conveniences for the Python API (the renderers do the work) ----------

    def to_dict(self) -> dict[str, Any]:
        """The JSON report as a dict (docs/json-schema.md)."""
        from hloscope.render.json_report import report_to_dict

        return report_to_dict(self)

    def to_text(self) -> str:
        """The table report, as ``hloscope analyze`` prints it."""
        from hloscope.render import render_to_string

        return render_to_string("table", self)

    def dot(self, view: str = "transfer", name: str | None = None, **kw: Any) -> Any:
        """A diagram (``graphviz.Digraph``) of ``view``: transfer, computation, schedule or calls
        (``hloscope.render.dot.build_view``; ``kw``: radius, max_nodes, first)."""
        from hloscope.render.dot import build_view

        return build_view(self, view, name, **kw).graph

    def __str__(self) -> str:
        return self.to_text()


def analyze_module(module: Module, target: Target, options: AnalysisOptions | int | None = None,
                   notes: tuple[str, ...] = (), names: Sequence[Mapping[str, Any]] = ()) -> Report:
    """Run every pass over ``module`` for ``target``. ``options`` may be a host memory space number.
    ``names``: the step's ``checkpoint_name`` records (``hloscope.analysis.names``), when it was traced here."""
    opts = AnalysisOptions(host_space=options) if isinstance(options, int) else (options or AnalysisOptions())
    index = ModuleIndex(module)
    transfers = name_transfers(index, find_host_transfers(index, opts.host_space), names)
    return _judge(index, transfers, target, opts, notes)


def reanalyze(report: Report, options: AnalysisOptions) -> Report:
    """The same module and transfers (names kept) judged with other options (link mode,
    thresholds, simulation); memory and compile facts carried over. The host memory
    space must not change (it decides which instructions are transfers)."""
    if options.host_space != report.options.host_space:
        raise ValueError("reanalyze cannot change the host memory space; call analyze_module")
    new = _judge(report.index, list(report.transfers), report.target, options, report.notes)
    return replace(new, memory=report.memory, compile=report.compile)


def _judge(index: ModuleIndex, transfers: list[HostTransfer], target: Target, opts: AnalysisOptions,
           notes: tuple[str, ...]) -> Report:
    module = index.module
    cost = CostModel(module, target, opts.host_space, opts.link_mode)
    verdicts = judge_overlap(index, transfers, cost, opts)
    timeline = None
    if opts.simulate and module.is_scheduled:
        timeline = simulate_step(module, cost, index.pairs, transfers, index.callgraph)
        verdicts = apply_timeline(verdicts, timeline, opts)
    summary = summarize(verdicts, index.callgraph.unknown_trip, timeline)
    return Report(module, target, opts, index, tuple(transfers), tuple(verdicts), cost, summary, notes,
                  timeline=timeline)
