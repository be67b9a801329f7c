"""The analysis pipeline and the typed report it returns (rendered by ``hloscope.render``).

``analyze_step(inputs, target, options) -> Report`` is the one pipeline: it builds
one :class:`ModuleIndex` from the :class:`~hloscope.analysis.inputs.StepInputs` a
loader read, and runs the passes in order: ``find_named_transfers`` (each transfer
built once, with its one name: ``hloscope.analysis.naming``) -> ``pair_async_ops`` -> the simulated
step -> ``judge_overlap`` (each verdict decided once, from its window and the
simulated wait) -> the memory facts, then sums them up in a :class:`Summary`. The
report comes out complete and frozen; nothing patches it, its transfers or its
verdicts afterwards. It is data only
(this module imports no renderer): ``hloscope.render`` turns it into text, JSON
and the other formats, and the Python API's :class:`hloscope.api.StepReport`
adds ``to_text``/``to_dict``/``dot``/``print(report)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar, overload

from hloscope.analysis.cost import CostModel
from hloscope.analysis.drain import SerialDrain, find_serial_drains
from hloscope.analysis.graph import build_dependency_graph
from hloscope.analysis.host_work import HostWork, find_host_work
from hloscope.analysis.index import ModuleIndex
from hloscope.analysis.inputs import ScheduleRun, StepInputs, int_figures
from hloscope.analysis.intent import IntentAccount, account_step
from hloscope.analysis.kinds import Direction, PairKind, VerdictKind
from hloscope.analysis.margin import Margins, TransferMargin, measure_margins
from hloscope.analysis.measured import MeasuredComparison, compare_measured
from hloscope.analysis.memory import MemoryFacts, facts_from_dumps
from hloscope.analysis.naming import find_named_transfers
from hloscope.analysis.overlap import AnalysisOptions, judge_overlap
from hloscope.analysis.pairs import AsyncPair, pair_async_ops
from hloscope.analysis.remat import RematClones, count_remat_clones
from hloscope.analysis.slack import Slack, find_slack
from hloscope.analysis.streams import StreamAssignment, assign_execution_streams, stream_model
from hloscope.analysis.timeline import SliceKind, Timeline, simulate_step
from hloscope.analysis.transfers import HostTransfer
from hloscope.analysis.verdict import Verdict
from hloscope.analysis.xla_view import XlaEstimates, compare_with_xla
from hloscope.hlo.gcpause import paused_gc
from hloscope.hlo.model import Module, SourceLocation
from hloscope.hlo.xla_log import parse_xla_log
from hloscope.targets import Target
from hloscope.vocab import LinkMode

if TYPE_CHECKING:
    import networkx as nx


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
    link_mode: LinkMode
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
    """Everything the analysis found about one step.

    index: the shared :class:`ModuleIndex` (module facts only). transfers / verdicts: one
    verdict per transfer, same order. pairs: every async start/done pair (the pairing
    pass's result). cost: the cost model used for the estimates. summary: step totals.
    inputs: what the step was read from (:class:`StepInputs`); ``reanalyze`` runs the
    pipeline on them again. notes: facts about how the input was read (which file of a
    folder, which module of several), for the views to show. memory: device/host memory
    facts when the compile's figures are known (a step compiled here, an artifact
    folder), else None. compile: the compile's settings and figures (a mapping, keys
    in docs/json-schema.md) when the step was compiled in this run, else None.
    timeline: the simulated step (None for an unscheduled module or
    ``AnalysisOptions(simulate=False)``). intent: each offload the traced step asked for,
    with the transfers it became or why it produced none (``hloscope.analysis.intent``;
    None when the step's intent is unknown: a plain HLO file). xla: what XLA's scheduler
    believed about each async transfer (``hloscope.analysis.xla_view``), when the compile's
    scheduler log is known (a compile here, an artifact folder with ``xla-scheduler.log``).
    scheduler: which scheduler and estimator XLA ran (:class:`ScheduleRun`), when the compile
    recorded it (a compile here, an artifact folder's manifest), else None.
    measured: the model beside a measured profile (``AnalysisOptions.compare_with``), else None.
    host_work: kernels reading or writing host memory in place, and host-thread
    computations with the async ops entering and leaving them (:mod:`hloscope.analysis.host_work`).
    streams: the execution stream XLA:GPU gives each async start (``hloscope.analysis.streams``),
    for a scheduled module, else None. slack: per verdict (same order), the window the transfer
    could have had from the dependency graph (``hloscope.analysis.slack``); None for one that is
    not an async pair; empty for an unscheduled module. remat: XLA's rematerialization clones
    (``hloscope.analysis.remat``) of a scheduled module, else None. drains: host copies in
    flight together on one link whose dones waited for each other's bytes
    (``hloscope.analysis.drain``); empty without a simulated step. margins (a cached property, not a
    field): per judged transfer its marginal cost, verdict flips and exposure range
    (``hloscope.analysis.margin``), re-simulated on first use.
    """

    module: Module
    target: Target
    options: AnalysisOptions
    index: ModuleIndex
    transfers: tuple[HostTransfer, ...]
    verdicts: tuple[Verdict, ...]
    cost: CostModel
    summary: Summary
    pairs: tuple[AsyncPair, ...]
    inputs: StepInputs
    notes: tuple[str, ...] = ()
    memory: MemoryFacts | None = None
    compile: Mapping[str, Any] | None = None
    timeline: Timeline | None = None
    intent: IntentAccount | None = None
    xla: XlaEstimates | None = None
    scheduler: ScheduleRun | None = None
    measured: MeasuredComparison | None = None
    host_work: HostWork = field(default_factory=HostWork)
    streams: StreamAssignment | None = None
    slack: tuple[Slack | None, ...] = ()
    remat: RematClones | None = None
    drains: tuple[SerialDrain, ...] = ()

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
    def margins(self) -> Margins | None:
        """Per judged transfer, its marginal cost, verdict flips and exposure range
        (``hloscope.analysis.margin``), from re-simulations of the step: computed on first use
        (a few dozen to a few hundred simulations), None without a simulated step."""
        if self.timeline is None:
            return None
        return measure_margins(self.module, self.cost, self.pairs, self.transfers, self.index.callgraph,
                               self.streams, self.timeline, self.options.thresholds)

    def margin_for(self, v: Verdict) -> TransferMargin | None:
        """``v``'s :class:`TransferMargin` (None: not a timed async transfer, or no simulation)."""
        m = self.margins
        return m.of(v.transfer.computation, v.transfer.instruction.name) if m is not None else None

    @cached_property
    def dependency_graph(self) -> nx.MultiDiGraph:
        """The module's dependency graph with its async pairs (``analysis.graph``), built on first use."""
        return build_dependency_graph(self.module, list(self.pairs))

    @cached_property
    def _transfer_starts(self) -> frozenset[tuple[str, str]]:
        return frozenset((t.computation, t.instruction.name) for t in self.transfers)

    def pair_kind(self, p: AsyncPair) -> PairKind:
        """``host_transfer`` for pairs that are host transfers, else the pair's own kind."""
        return PairKind.HOST_TRANSFER if (p.start.computation, p.start.name) in self._transfer_starts else p.kind

    def slack_for(self, v: Verdict) -> Slack | None:
        """The window ``v``'s transfer could have had (None: not an async pair, or unscheduled)."""
        for s, w in zip(self.slack, self.verdicts, strict=False):
            if w is v:
                return s
        return None

    def verdict_for(self, name: str) -> Verdict | None:
        """The verdict of the transfer whose start (or sync op) is called ``name``."""
        return next((v for v in self.verdicts if v.transfer.instruction.name == name), None)

    def offloaded_names(self) -> tuple[str, ...]:
        """The checkpoint names (else instruction names) of the step's transfers to host."""
        return _offloaded_names(self.transfers)


R = TypeVar("R", bound=Report)


@overload
def analyze_step(inputs: StepInputs, target: Target, options: AnalysisOptions | int | None = None) -> Report: ...


@overload
def analyze_step(inputs: StepInputs, target: Target, options: AnalysisOptions | int | None = None,
                 *, report_type: type[R]) -> R: ...


@paused_gc()
def analyze_step(inputs: StepInputs, target: Target, options: AnalysisOptions | int | None = None,
                 *, report_type: type[Report] = Report) -> Report:
    """The pipeline: every pass over ``inputs`` for ``target``, as one complete, frozen report.

    ``options`` may be a host memory space number. ``report_type``: the class to build
    (the Python API's :class:`hloscope.api.StepReport` adds its conveniences).
    """
    opts = AnalysisOptions(host_space=options) if isinstance(options, int) else (options or AnalysisOptions())
    module = inputs.module
    index = ModuleIndex(module)
    transfers = find_named_transfers(index, opts.host_space, inputs.names, inputs.intent, inputs.unoptimized)
    pairs = tuple(pair_async_ops(index))
    cost = CostModel(index, target, opts.host_space, opts.link_mode, dict(opts.measured_us) or None)
    streams = None
    if module.is_scheduled:  # XLA's stream assignment of the version that compiled it (docs/streams.md)
        streams = assign_execution_streams(index, model=stream_model(inputs.versions.get("jaxlib"), module))
    timeline = None
    if opts.simulate and module.is_scheduled:
        timeline = simulate_step(module, cost, list(pairs), transfers, index.callgraph, streams=streams)
    verdicts = judge_overlap(index, transfers, cost, pairs, opts, timeline)
    summary = summarize(verdicts, index.callgraph.unknown_trip, timeline)
    slack: tuple[Slack | None, ...] = ()
    remat = count_remat_clones(index, cost, opts.host_space) if module.is_scheduled else None
    if module.is_scheduled:
        slack = find_slack(index, verdicts, cost)
    memory = None
    if inputs.memory_figures is not None and inputs.has_memory:
        memory = facts_from_dumps(int_figures(inputs.memory_figures), target, inputs.dumps, index,
                                  inputs.vocab_size, _offloaded_names(transfers), opts.host_pool_bytes)
    intent = account_step(inputs.intent, verdicts, module, inputs.unoptimized, index)
    xla = None
    if inputs.dumps.scheduler_log:
        log = parse_xla_log(inputs.dumps.scheduler_log, module.name)
        runs = {s.computation: index.executions(s.computation) for s in log.stats}
        xla = compare_with_xla(log, verdicts, runs)
    measured = None
    if opts.compare_with is not None:
        measured = compare_measured(index, cost, pairs, transfers,
                                    opts.compare_with, timeline.step_us if timeline else None,
                                    _waits_by_start(timeline, pairs))
    return report_type(module, target, opts, index, tuple(transfers), tuple(verdicts), cost, summary, pairs, inputs,
                       inputs.notes, memory, inputs.compile, timeline, intent, xla, inputs.scheduler, measured,
                       find_host_work(index, opts.host_space), streams, slack, remat,
                       find_serial_drains(timeline) if timeline is not None else ())


def _waits_by_start(timeline: Timeline | None, pairs: Sequence[AsyncPair]) -> dict[str, float]:
    """Start name -> the simulated compute stream's wait at its done, µs."""
    if timeline is None:
        return {}
    start_of = {p.done.name: p.start.name for p in pairs}
    out: dict[str, float] = {}
    for slices in timeline.slices.values():
        for s in slices:
            if s.kind is SliceKind.WAIT and s.name in start_of:
                out[start_of[s.name]] = out.get(start_of[s.name], 0.0) + s.end_us - s.start_us
    return out


def analyze_module(module: Module, target: Target, options: AnalysisOptions | int | None = None,
                   notes: tuple[str, ...] = (), names: Sequence[Mapping[str, Any]] = ()) -> Report:
    """Run every pass over ``module`` for ``target`` (:func:`analyze_step` on a bare module).
    ``options`` may be a host memory space number. ``names``: the step's ``checkpoint_name``
    records (``hloscope.analysis.names``), when it was traced here."""
    return analyze_step(StepInputs(module, module.source_path or "<text>", names=tuple(names), notes=notes),
                        target, options)


def reanalyze(report: R, options: AnalysisOptions) -> R:
    """The same step judged with other options (link mode, thresholds, simulation, host memory
    space): the pipeline run again on the report's inputs."""
    return analyze_step(report.inputs, report.target, options, report_type=type(report))


def _offloaded_names(transfers: Sequence[HostTransfer]) -> tuple[str, ...]:
    names = {t.checkpoint_name or t.instruction.name for t in transfers if t.direction is Direction.TO_HOST}
    return tuple(sorted(names))
