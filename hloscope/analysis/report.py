"""The analysis pipeline and the typed report it returns (rendered by ``hloscope.render``).

``analyze_step(inputs, target, options) -> Report`` is the one pipeline: it builds one
:class:`~hloscope.analysis.context.StepContext` (the loader's
:class:`~hloscope.analysis.inputs.StepInputs`, the target, the options, one
:class:`ModuleIndex`, one cost model), runs the pass table
(:data:`hloscope.analysis.passes.PASSES`: transfers, each built once with its one name ->
pairs -> streams -> the simulated step -> verdicts, each decided once from its window and
the simulated wait -> summary -> the memory facts and the rest) and builds the
:class:`Report` by keyword from the table's results. The report comes out complete and
frozen; nothing patches it, its transfers or its verdicts afterwards, and it holds no copy
of its inputs (``report.module`` reads ``report.inputs``). It is data only (this module
imports no renderer): ``hloscope.render`` turns it into text, JSON and the other formats,
and the Python API's :class:`hloscope.api.StepReport` adds ``to_text``/``to_dict``/``dot``/``print(report)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar, overload

from hloscope.analysis.context import StepContext
from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.host_call import HostCall
from hloscope.analysis.inputs import ScheduleRun, StepInputs
from hloscope.analysis.intent.outcome import IntentAccount
from hloscope.analysis.intent.remat import RematClones
from hloscope.analysis.kinds import PairKind
from hloscope.analysis.measured.compare import MeasuredComparison
from hloscope.analysis.memory import MemoryFacts
from hloscope.analysis.passes import PASSES, offloaded_names
from hloscope.analysis.platforms import PlatformBackend, backend_for
from hloscope.analysis.simulate.drain import SerialDrain
from hloscope.analysis.simulate.margin import Margins, TransferMargin, measure_margins
from hloscope.analysis.simulate.options import AnalysisOptions
from hloscope.analysis.simulate.slack import Slack
from hloscope.analysis.simulate.summary import Summary
from hloscope.analysis.simulate.timeline import Timeline
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.analysis.simulate.xla_view import XlaEstimates
from hloscope.analysis.structure.backend import CompiledFor
from hloscope.analysis.structure.graph import build_dependency_graph
from hloscope.analysis.structure.host_work import HostWork
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.name_records import NameRecord, name_records
from hloscope.analysis.structure.pairs import AsyncPair
from hloscope.analysis.structure.streams import StreamAssignment
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.analysis.structure.unread import UnreadHostWrites
from hloscope.hlo.gcpause import paused_gc
from hloscope.hlo.model import Module, SourceLocation
from hloscope.targets import Platform, Target

if TYPE_CHECKING:
    import networkx as nx


@dataclass(frozen=True, kw_only=True)
class Report:
    """Everything the analysis found about one step, built by keyword by :func:`analyze_step`.

    inputs / target / options: what the step was analyzed from and for; index / cost: the
    step context's; every other field is the result of the pass row of the same name
    (:data:`hloscope.analysis.passes.PASSES`). module, notes, compile and scheduler are
    read from ``inputs`` (properties, not copies).

    index: the shared :class:`ModuleIndex` (module facts only). transfers / verdicts: one
    verdict per transfer, same order. pairs: every async start/done pair (the pairing
    pass's result). cost: the cost model used for the estimates. summary: step totals.
    inputs: what the step was read from (:class:`StepInputs`); ``reanalyze`` runs the
    pipeline on them again. notes (from inputs): facts about how the input was read (which file of a
    folder, which module of several), for the views to show. memory: device/host memory
    facts when the compile's figures are known (a step compiled here, an artifact
    folder), else None. compile (from inputs): the compile's settings and figures (a mapping, keys
    in docs/json-schema.md) when the step was compiled in this run, else None.
    timeline: the simulated step (None for an unscheduled module or
    ``AnalysisOptions(simulate=False)``). intent: each offload the traced step asked for,
    with the transfers it became or why it produced none (``hloscope.analysis.intent.account``;
    None when the step's intent is unknown: a plain HLO file). xla: what XLA's scheduler
    believed about each async transfer (``hloscope.analysis.simulate.xla_view``), when the compile's
    scheduler log is known (a compile here, an artifact folder with ``xla-scheduler.log``).
    scheduler (from inputs): which scheduler and estimator XLA ran (:class:`ScheduleRun`), when the compile
    recorded it (a compile here, an artifact folder's manifest), else None.
    measured: the model beside a measured profile (``AnalysisOptions.compare_with``), else None.
    host_work: kernels reading or writing host memory in place, and host-thread
    computations with the async ops entering and leaving them (:mod:`hloscope.analysis.structure.host_work`).
    streams: the execution stream XLA:GPU gives each async start (``hloscope.analysis.structure.streams``),
    for a scheduled module, else None. slack: per verdict (same order), the window the transfer
    could have had from the dependency graph (``hloscope.analysis.simulate.slack``); None for one that is
    not an async pair; empty for an unscheduled module. remat: XLA's rematerialization clones
    (``hloscope.analysis.intent.remat``) of a scheduled module, else None. drains: host copies in
    flight together on one link whose dones waited for each other's bytes
    (``hloscope.analysis.simulate.drain``); empty without a simulated step. unread: the writes to
    host whose bytes nothing reads back (a slot of a host stack no reload indexes, a copy to host
    whose result is dead), with the bytes and D->H link time per step
    (``hloscope.analysis.structure.unread``). margins (a cached property, not a
    field): per judged transfer its marginal cost, verdict flips and exposure range
    (``hloscope.analysis.simulate.margin``), re-simulated on first use. host_call: the host
    buffers the runtime maps on every call and the call they make (the program plus that work;
    ``hloscope.analysis.host_call``).
    """

    inputs: StepInputs
    target: Target
    options: AnalysisOptions
    index: ModuleIndex
    cost: CostModel
    transfers: tuple[HostTransfer, ...]
    pairs: tuple[AsyncPair, ...]
    streams: StreamAssignment | None
    timeline: Timeline | None
    verdicts: tuple[Verdict, ...]
    summary: Summary
    remat: RematClones | None
    slack: tuple[Slack | None, ...]
    memory: MemoryFacts | None
    intent: IntentAccount | None
    xla: XlaEstimates | None
    measured: MeasuredComparison | None
    host_work: HostWork
    drains: tuple[SerialDrain, ...]
    unread: UnreadHostWrites
    host_call: HostCall

    @property
    def module(self) -> Module:
        """The optimized module (``inputs.module``)."""
        return self.inputs.module

    @property
    def notes(self) -> tuple[str, ...]:
        """Facts about how the input was read (``inputs.notes``)."""
        return self.inputs.notes

    @property
    def compile(self) -> Mapping[str, Any] | None:
        """The compile's settings and figures (``inputs.compile``; keys in docs/json-schema.md), else None."""
        return self.inputs.compile

    @property
    def scheduler(self) -> ScheduleRun | None:
        """Which scheduler and estimator XLA ran (``inputs.scheduler``), when the compile recorded it."""
        return self.inputs.scheduler

    @property
    def host_space(self) -> int:
        return self.options.host_space

    @property
    def platform(self) -> Platform:
        """The accelerator family the step is judged as (the target's)."""
        return self.target.platform

    @property
    def backend(self) -> PlatformBackend:
        """The room of the platform the step is judged as (``hloscope.analysis.platforms``)."""
        return backend_for(self.target)

    @property
    def compiled_for(self) -> CompiledFor:
        """The backend the module was compiled for, and what showed it (``inputs.backend``)."""
        return self.inputs.backend

    @property
    def family_mismatch(self) -> bool:
        """Whether the module was compiled for one accelerator family and is judged as the other's
        (a TPU module with ``--target h100-sxm``)."""
        found = self.compiled_for.backend.platform
        return found is not None and found is not self.platform

    def est_compute_us(self) -> float:
        """Estimated compute time of the whole step (entry computation, loops expanded)."""
        return self.cost.computation_us(self.module.entry_name)  # cached by the cost model

    def source(self, v: Verdict) -> SourceLocation | None:
        """The user line of the moved tensor, else the transfer instruction's own frame."""
        return v.transfer.source or self.module.source_location(v.transfer.instruction)

    @cached_property
    def margins(self) -> Margins | None:
        """Per judged transfer, its marginal cost, verdict flips and exposure range
        (``hloscope.analysis.simulate.margin``), from re-simulations of the step, each forked where it
        first differs from the step and stopped where it cannot differ again: computed on first use
        (a few dozen to a few hundred re-simulations), None without a simulated step."""
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
        """The module's dependency graph with its async pairs (``analysis.structure.graph``), built on first use."""
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
        return offloaded_names(self.transfers)


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
    ctx = StepContext(inputs, target, opts)
    return report_type(inputs=inputs, target=target, options=opts, index=ctx.index, cost=ctx.cost, **ctx.run(PASSES))


def analyze_module(module: Module, target: Target, options: AnalysisOptions | int | None = None,
                   notes: tuple[str, ...] = (), names: Sequence[Mapping[str, object] | NameRecord] = ()) -> Report:
    """Run every pass over ``module`` for ``target`` (:func:`analyze_step` on a bare module).
    ``options`` may be a host memory space number. ``names``: the step's ``checkpoint_name``
    records (their JSON form, or :class:`NameRecord`), when it was traced here."""
    return analyze_step(StepInputs(module, module.source_path or "<text>", names=name_records(names), notes=notes),
                        target, options)


def reanalyze(report: R, options: AnalysisOptions) -> R:
    """The same step judged with other options (link mode, thresholds, simulation, host memory
    space): the pipeline run again on the report's inputs."""
    return analyze_step(report.inputs, report.target, options, report_type=type(report))
