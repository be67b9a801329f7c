"""Measured profiles beside the model: the profile type, and its comparison with the step's estimates.

The readers of ``hloscope.hlo.profiles`` (XSpace, Chrome trace JSON, nsys-jax archives; no JAX)
return a profile's executions; :func:`profile_from_events` keeps one module's and builds one
:class:`MeasuredProfile`: per op the median and spread over executions of its time per
execution, the same for the async ops a TPU times on a line of their own, the step time of each
execution, and the op runs of the median execution (for the measured overlap of async
ops). A PGLE profile (one figure per op) is built by ``hloscope.analysis.measured.read``.
:func:`compare_measured` then puts the model's figure beside each one, per op class and per host
transfer, and returns a frozen :class:`MeasuredComparison` (facts only; the words are in
``hloscope.render``). Figures are per step (one execution of the module, all runs of an op in it)
unless named per run. Async work beside the compute (host transfers, and every async op a profile
times from its start's issue to its done's end, a TPU's) is overlap, not compute: its classes
compare the waits at its dones. Whether the profile is of this program at all is
``hloscope.analysis.measured.match``'s evidence, kept on the comparison.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.kinds import VerdictKind
from hloscope.analysis.measured.match import ProfileMatch, match_profile_to_module
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.opclass import (
    CONTROL_FLOW,
    collective_kind,
    custom_call_target,
    is_done,
    is_free,
    value_shape,
)
from hloscope.analysis.structure.pairs import AsyncPair
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.model import Instruction
from hloscope.hlo.op_time import OpRun
from hloscope.hlo.profiles.events import Execution, ProfileEvents
from hloscope.vocab import Direction

__all__ = ["WAITED_US", "AsyncRun", "MeasuredComparison", "MeasuredLine", "MeasuredProfile", "OpClassName", "OpStats",
           "TransferComparison", "compare_measured", "profile_from_events"]


class MeasuredLine(StrEnum):
    """Where a profile timed an op's run (the ``source`` of its :class:`~hloscope.hlo.op_time.OpRun`)."""

    OPS = "ops"  # its own event among the module's ops (a GPU thunk, a TPU's "XLA Ops" line)
    ASYNC = "async"  # an async op on a line of its own (a TPU's "Async XLA Ops": start's issue to done's end)


@dataclass(frozen=True)
class OpStats:
    """One op's measured time per execution of the module, µs: median and spread (max - min) over
    executions of its summed time; calls: how many times it ran in one execution (loops run it again).

    For an async op timed on a line of its own (a TPU's "Async XLA Ops": from its start's issue to
    the end of its done; ``name`` its start): done, its done's name ("" for any other op);
    waited_calls, of its runs in the median execution those at whose done the compute waited
    (:data:`WAITED_US` or more): their time is the async work's own; a run that finished before its
    done was reached is timed to the done, an upper bound."""

    name: str
    median_us: float
    spread_us: float
    calls: int
    done: str = ""
    waited_calls: int = 0

    @property
    def per_call_us(self) -> float:
        """The median time of one run."""
        return self.median_us / self.calls


@dataclass(frozen=True, slots=True)
class AsyncRun(OpRun[MeasuredLine]):
    """One run of an async op timed on a line of its own, in the median execution: ``name`` its
    start, from its issue to the end of its done (``source`` :attr:`MeasuredLine.ASYNC`); done: the
    done's name; wait_us: how long the compute waited at that done (its event there, ending where
    this run ends; 0 when none does)."""

    done: str
    wait_us: float

    @property
    def waited(self) -> bool:
        """The compute waited at its done: the run's time is the async work's own."""
        return self.wait_us >= WAITED_US


#: A done's event at least this long (µs) is a wait: the async op was still running when the
#: compute reached it (a done that finds its op finished takes a few nanoseconds on a TPU).
WAITED_US = 1.0


@dataclass(frozen=True)
class MeasuredProfile:
    """A measured profile. source: the file. kind: ``nsys``, ``trace``, ``xplane`` or ``pgle``.
    module: the module name the profile names ("" where it names none). step_us: the measured
    time of each execution, in order (empty for PGLE). ops: per op name. intervals: the median
    execution's op runs, in start order (empty for PGLE). other_modules: executions of
    other modules in the file, by name (ignored). asyncs: per async start name, its timing on a
    line of its own (empty where the profile has none: GPU and CPU profiles); async_intervals:
    their runs in the median execution, in start order (the done's event in ``intervals`` is
    then the time the compute waited there). device: the plane or process the executions ran on
    ("" where the format merges devices). texts: per op name, the instruction's whole text as the
    profile names the op (a TPU's: its shapes tell the program apart; empty elsewhere)."""

    source: str
    kind: str
    module: str
    step_us: tuple[float, ...]
    ops: Mapping[str, OpStats]
    intervals: tuple[OpRun[MeasuredLine], ...] = ()
    other_modules: tuple[str, ...] = ()
    asyncs: Mapping[str, OpStats] = field(default_factory=dict)
    async_intervals: tuple[AsyncRun, ...] = ()
    device: str = ""
    texts: Mapping[str, str] = field(default_factory=dict)

    @property
    def median_step_us(self) -> float | None:
        return statistics.median(self.step_us) if self.step_us else None

    def times_us(self) -> dict[str, float]:
        """Median µs per op per execution (what ``--profile`` would replace figures with)."""
        return {n: s.median_us for n, s in self.ops.items()}


def _per_execution(runs: Sequence[Iterable[tuple[str, int]]]) -> dict[str, tuple[list[float], int]]:
    """Per name, its summed µs in each execution (``runs``: (name, ps) per event) and its most
    calls in one."""
    out: dict[str, tuple[list[float], int]] = {}
    for rows in runs:
        totals: dict[str, float] = defaultdict(float)
        count: dict[str, int] = defaultdict(int)
        for name, ps in rows:
            totals[name] += ps / 1e6
            count[name] += 1
        for name, us in totals.items():
            values, calls = out.get(name, ([], 0))
            values.append(us)
            out[name] = (values, max(calls, count[name]))
    return out


def profile_from_events(events: ProfileEvents, module_name: str = "") -> MeasuredProfile:
    """One profile from a file's executions: keeps those of ``module_name`` (default: the module
    with the most op events) on one device (the first, by name); per op and per async op, the
    median and spread over executions of its summed time per execution; the median execution's
    intervals."""
    source = events.source
    rows_by_module: dict[str, int] = defaultdict(int)
    for ex in events.executions:
        if ex.ops:
            rows_by_module[ex.module] += len(ex.ops)
    if not rows_by_module:
        raise HloscopeError(f"{source}: not a usable measured profile: no op events inside a module execution",
                            EXIT_BAD_INPUT)
    chosen = module_name if module_name in rows_by_module else max(rows_by_module, key=lambda k: rows_by_module[k])
    device = min(ex.device for ex in events.executions if ex.module == chosen and ex.ops)
    runs: list[Execution] = sorted((ex for ex in events.executions if ex.module == chosen and ex.ops
                                    and ex.device == device), key=lambda ex: ex.start_ps)
    steps = [ex.duration_ps / 1e6 for ex in runs]
    per_op = _per_execution([[(r.name, r.duration_ps) for r in ex.ops] for ex in runs])
    ops = {op: OpStats(op, statistics.median(v), max(v) - min(v), calls) for op, (v, calls) in per_op.items()}
    median = runs[sorted(range(len(runs)), key=lambda i: steps[i])[len(runs) // 2]]
    t0 = median.start_ps
    intervals = tuple(OpRun(r.name, MeasuredLine.OPS, (r.start_ps - t0) / 1e6,
                            (r.start_ps + r.duration_ps - t0) / 1e6) for r in median.ops)
    ends = {(r.name, r.start_ps + r.duration_ps): r.duration_ps for r in median.ops}
    spans = tuple(AsyncRun(a.start, MeasuredLine.ASYNC, (a.start_ps - t0) / 1e6,
                           (a.start_ps + a.duration_ps - t0) / 1e6, a.done,
                           ends.get((a.done, a.start_ps + a.duration_ps), 0) / 1e6)
                  for a in sorted(median.asyncs, key=lambda a: a.start_ps))
    waited: dict[str, int] = defaultdict(int)
    for run in spans:
        waited[run.name] += run.waited
    per_async = _per_execution([[(a.start, a.duration_ps) for a in ex.asyncs] for ex in runs])
    done_of = {a.start: a.done for ex in runs for a in ex.asyncs}
    asyncs = {start: OpStats(start, statistics.median(v), max(v) - min(v), calls, done_of[start], waited[start])
              for start, (v, calls) in per_async.items()}
    others = tuple(sorted({ex.module for ex in events.executions} - {chosen}))
    texts = {r.name: r.text for ex in runs for r in ex.ops if r.text}
    return MeasuredProfile(source, events.kind, chosen, tuple(steps), ops, intervals, others, asyncs, spans, device,
                           texts)


# -- comparison -------------------------------------------------------------------------------


class OpClassName(StrEnum):
    """The classes predicted and measured times are summed over."""

    GEMM = "gemm"
    KERNEL = "fusion/kernel"
    ALL_GATHER = "all-gather"
    ALL_REDUCE = "all-reduce"
    REDUCE_SCATTER = "reduce-scatter"
    ALL_TO_ALL = "all-to-all"
    COLLECTIVE_PERMUTE = "collective-permute"
    HOST_TRANSFER = "host transfer"
    D2D_COPY = "d2d copy"
    # async work beside the compute that a profile times from its start's issue to its done's end (a
    # TPU's): compared by the waits at its dones, never as compute (OpComparison.overlap)
    ASYNC_COPY = "async copy"  # copy-start, a TPU's into or out of VMEM S(1) / SMEM S(2)
    OTHER_ASYNC = "other async"  # another async op (a TPU's async slice into VMEM)


_KINDS = {"all-gather": OpClassName.ALL_GATHER, "all-reduce": OpClassName.ALL_REDUCE,
          "reduce-scatter": OpClassName.REDUCE_SCATTER, "all-to-all": OpClassName.ALL_TO_ALL,
          "collective-permute": OpClassName.COLLECTIVE_PERMUTE}


@dataclass(frozen=True)
class OpComparison:
    """One measured op beside the model. name: the op as the profile names it; instruction: the
    instruction whose figure it is (an async start for a wrapped collective). predicted_us /
    measured_us: per step, one execution of the module (its calls summed); spread_us: measured
    max - min. overlap: async work beside the compute (a host transfer, or an async op the profile
    times from its start's issue to its done's end, a TPU's VMEM/SMEM copies): its measured time is
    that span, bounded by the schedule, not its work; what it costs the step is the wait at its
    done. predicted_wait_us / measured_wait_us: that wait per step, simulated / measured (the
    done's events; None where the profile times none)."""

    name: str
    instruction: str
    op_class: OpClassName
    predicted_us: float
    measured_us: float
    spread_us: float
    calls: int
    overlap: bool = False
    predicted_wait_us: float = 0.0
    measured_wait_us: float | None = None

    @property
    def ratio(self) -> float | None:
        """predicted / measured (None when nothing was measured)."""
        return self.predicted_us / self.measured_us if self.measured_us > 0 else None


@dataclass(frozen=True)
class ClassComparison:
    """Sums over one class's matched ops, µs per step. overlap: its ops are async work beside the
    compute (:attr:`OpComparison.overlap`): compare its waits, not its times; predicted_wait_us /
    measured_wait_us: their waits at the dones per step (measured None where not timed)."""

    name: OpClassName
    ops: int
    predicted_us: float
    measured_us: float
    overlap: bool = False
    predicted_wait_us: float = 0.0
    measured_wait_us: float | None = None

    @property
    def wait_ratio(self) -> float | None:
        """simulated / measured wait (None where the chip waited under :data:`WAITED_US` in all: hidden,
        no ratio to take)."""
        if self.measured_wait_us is None or self.measured_wait_us < WAITED_US:
            return None
        return self.predicted_wait_us / self.measured_wait_us

    @property
    def ratio(self) -> float | None:
        return self.predicted_us / self.measured_us if self.measured_us > 0 else None


@dataclass(frozen=True)
class AsyncOverlap:
    """One async pair's measured overlap beside the simulation's.

    start: the start instruction; op: its kind. measured_us: its kernel time in the median
    execution (a TPU's: the start's issue to its done's end); measured_overlap: the share of that
    time other (compute) ops ran beside it. simulated_wait_us: what the simulated step waited at
    its done per step; hidden_by_model: that wait is under half the model's time for the op (its
    runs per step counted); hidden_measured: where the profile times the wait at its done
    (measured_wait_us, this run's), that wait is under half the run's time, else
    measured_overlap >= 0.5. transfer: a host transfer (its verdicts are the transfer table's).
    """

    start: str
    op: str
    measured_us: float
    measured_overlap: float
    simulated_wait_us: float
    hidden_by_model: bool
    hidden_measured: bool
    measured_wait_us: float | None = None
    transfer: bool = False

    @property
    def disagree(self) -> bool:
        return self.hidden_by_model != self.hidden_measured


@dataclass(frozen=True)
class TransferComparison:
    """One host transfer measured beside the model, per step (one execution of the module).

    start / done: its instructions (done None for a synchronous one). direction; bytes: moved
    by one run. predicted_calls: its runs per step as the model counts them (loop trip counts);
    measured_calls: its runs the profile timed in one execution.
    predicted_us: the model's time of one run alone on its link (``CostModel.transfer_us``).
    measured_us: its time in one execution, summed over its runs, median over executions: its
    async op on a line of its own where the profile has one (a TPU's "Async XLA Ops": the start's
    issue to the end of its done), else the start's own event (a GPU copy's kernel).
    predicted_wait_us: the simulated compute stream's waits at its done per step.
    measured_wait_us: the done's events in one execution, summed, median over executions: the
    time the compute waited there; None where the profile's done events are not waits (it times
    no async op on a line of its own: GPU and CPU profiles). waited_calls: of its runs in the
    median execution, those at whose done the compute waited, whose time is the transfer's own;
    the others were timed to their done, an upper bound (None where not known: no async line).
    predicted_verdict: the step's verdict of it (None: not judged). measured_verdict: the same
    thresholds applied to what was measured (its wait at the done over its own time per run); None
    where the profile times no wait.
    """

    start: str
    done: str | None
    direction: Direction
    bytes: int
    predicted_calls: int
    measured_calls: int
    predicted_us: float
    measured_us: float
    predicted_wait_us: float
    measured_wait_us: float | None
    waited_calls: int | None = None
    predicted_verdict: VerdictKind | None = None
    measured_verdict: VerdictKind | None = None

    @property
    def measured_per_call_us(self) -> float:
        return self.measured_us / self.measured_calls if self.measured_calls else 0.0

    @property
    def measured_wait_per_call_us(self) -> float | None:
        if self.measured_wait_us is None:
            return None
        return self.measured_wait_us / self.measured_calls if self.measured_calls else 0.0

    @property
    def predicted_wait_per_call_us(self) -> float:
        return self.predicted_wait_us / self.predicted_calls if self.predicted_calls else 0.0

    @property
    def measured_bandwidth(self) -> float | None:
        """Bytes per second one run moved, as measured (None when it took no time)."""
        per_call = self.measured_per_call_us
        return self.bytes / per_call * 1e6 if per_call > 0 else None

    @property
    def ratio(self) -> float | None:
        """predicted / measured time of one run."""
        per_call = self.measured_per_call_us
        return self.predicted_us / per_call if per_call > 0 else None


@dataclass(frozen=True)
class MeasuredComparison:
    """The model against one measured profile.

    profile: what was read. module_matches: the profile names this module (or none at all).
    measured_ops / matched_ops: op names in the profile / those naming an instruction here.
    unmatched: up to ten names that match nothing. ops / classes / overlaps / transfers: as
    above (transfers: the host transfers the profile times, in the module's order).
    predicted_step_us: the simulated step (None unscheduled). match: the evidence that the profile
    is of this program (``hloscope.analysis.measured.match``)."""

    profile: MeasuredProfile
    module: str
    module_matches: bool
    measured_ops: int
    matched_ops: int
    unmatched: tuple[str, ...]
    ops: tuple[OpComparison, ...]
    classes: tuple[ClassComparison, ...]
    overlaps: tuple[AsyncOverlap, ...]
    predicted_step_us: float | None
    transfers: tuple[TransferComparison, ...] = ()
    match: ProfileMatch | None = None

    @property
    def matched_fraction(self) -> float:
        return self.matched_ops / self.measured_ops if self.measured_ops else 0.0


def classify(ins: Instruction, cost: CostModel) -> OpClassName:
    """The class of one instruction that is not a host transfer (an async start counts as what it starts)."""
    kind = collective_kind(ins)
    if kind:
        return _KINDS.get(kind.removesuffix("-start"), OpClassName.ALL_REDUCE)
    if ins.opcode in ("copy", "copy-start"):
        return OpClassName.D2D_COPY
    target = custom_call_target(ins).lower() if ins.opcode == "custom-call" else ""
    if "gemm" in target or "matmul" in target or ins.opcode in ("dot", "convolution"):
        return OpClassName.GEMM
    if ins.opcode == "fusion" and cost.op_cost(ins).flops > 0 and "gemm" in str(ins.backend_config).lower():
        return OpClassName.GEMM
    if ins.opcode == "fusion" and _fuses_a_matmul(cost, ins):
        return OpClassName.GEMM
    return OpClassName.KERNEL


def _fuses_a_matmul(cost: CostModel, ins: Instruction) -> bool:
    """A fusion around a dot or convolution: how TPU XLA writes its matmuls (``convolution_tanh_fusion``;
    on a GPU such fusions are Triton GEMMs, found by their backend config first)."""
    computations = cost.index.module.computations
    return any(i.opcode in ("dot", "convolution") for c in ins.called_computations if c in computations
               for i in computations[c].instructions)


def predicted_op_us(ins: Instruction, cost: CostModel, transfer: HostTransfer | None = None) -> float:
    """The model's time of one run of ``ins``: a host transfer's time on its link, a collective's
    ring time for its start, a device-to-device copy-start's HBM read and write, else its roofline."""
    if transfer is not None:
        return cost.transfer_us(transfer.bytes, transfer.direction)
    if collective_kind(ins):
        return cost.collective_us(ins)
    if ins.opcode == "copy-start":
        moved = value_shape(ins).byte_size
        return 2 * moved / cost.target.hbm_bandwidth * 1e6 + cost.target.kernel_launch_us
    return cost.op_cost(ins).us


def performer(index: ModuleIndex, ins: Instruction) -> Instruction:
    """The instruction that says what ``ins`` does: itself, or the op an async start wraps."""
    if ins.opcode == "async-start":
        return index.wrapped_op(ins) or ins
    return ins


def owner_map(index: ModuleIndex) -> dict[str, Instruction]:
    """Instruction name -> the instruction whose figure it is: itself, or for an op inside an
    async computation, the async start (XLA names a wrapped collective's thunk after the op)."""
    by_name = dict(index.instructions_by_name)
    for wrapped, start in index.module.async_wrapped.items():
        got = index.instructions_by_name.get(start)
        if got is not None:
            by_name.setdefault(wrapped, got)
    for ins in list(by_name.values()):
        if ins.opcode == "async-start":  # the parser gives every one its wrapped computation
            for c in ins.called_computations[:1]:
                for inner in index.module.computations[c].instructions:
                    by_name[inner.name] = ins
    return by_name


def compare_measured(index: ModuleIndex, cost: CostModel, pairs: tuple[AsyncPair, ...],
                     transfers: Sequence[HostTransfer], profile: MeasuredProfile,
                     step_us: float | None, waits_us: Mapping[str, float],
                     verdicts: Mapping[str, VerdictKind] | None = None,
                     judge: Callable[[float], VerdictKind] | None = None) -> MeasuredComparison:
    """Each measured op beside the model's figure, per class (an async start timed on a line of
    its own is measured by that time); each async pair's measured overlap beside the simulated
    wait at its done (``waits_us``: start name -> µs per step); each host transfer's measured
    time and wait at its done beside the model's (``verdicts``: start name -> the step's verdict;
    ``judge``: the step's thresholds, exposed fraction -> verdict, applied to the measured waits)."""
    owner = owner_map(index)
    moves = {t.instruction.name: t for t in transfers}
    ops: list[OpComparison] = []
    unmatched: list[str] = []
    for name, st in profile.ops.items():
        ins = owner.get(name)
        # A loop's or call's event spans its body's ops (a TPU's "XLA Ops" line): counted there.
        if ins is None or is_free(ins) or is_done(ins) or ins.opcode in CONTROL_FLOW:
            if ins is None:
                unmatched.append(name)
            continue
        what = performer(index, ins)
        move = moves.get(ins.name)
        timed = profile.asyncs.get(name, st)
        pred = predicted_op_us(what, cost, move) * timed.calls
        op_class = OpClassName.HOST_TRANSFER if move is not None else classify(what, cost)
        overlap = move is not None or name in profile.asyncs
        if overlap:
            op_class = _ASYNC_CLASS.get(op_class, op_class)
        done = profile.ops.get(timed.done) if name in profile.asyncs else None
        measured_wait = (done.median_us if done is not None else 0.0) if name in profile.asyncs else None
        ops.append(OpComparison(name, ins.name, op_class, pred, timed.median_us, timed.spread_us, timed.calls,
                                overlap, waits_us.get(ins.name, 0.0) if overlap else 0.0, measured_wait))
    classes = _classes(ops)
    overlaps = _overlaps(index, cost, pairs, owner, profile, waits_us, moves)
    matched = len(profile.ops) - len(unmatched)
    module_matches = not profile.module or profile.module == index.module.name
    named = frozenset(profile.ops) | frozenset(profile.asyncs)
    match = match_profile_to_module(profile.module, index.module.name, tuple(profile.ops), profile.texts, owner,
                                    tuple(t.instruction.name for t in transfers), named)
    return MeasuredComparison(profile, index.module.name, module_matches, len(profile.ops), matched,
                              tuple(unmatched[:10]), tuple(ops), classes, overlaps, step_us,
                              _transfers(cost, pairs, transfers, profile, waits_us, verdicts or {}, judge), match)


#: The class of an async op timed from its start's issue to its done's end, by what it does.
_ASYNC_CLASS = {OpClassName.D2D_COPY: OpClassName.ASYNC_COPY, OpClassName.KERNEL: OpClassName.OTHER_ASYNC,
                OpClassName.GEMM: OpClassName.OTHER_ASYNC}


def _classes(ops: Sequence[OpComparison]) -> tuple[ClassComparison, ...]:
    """Per class, the compute classes first, then the async work beside the compute (its waits summed)."""
    sums: dict[tuple[bool, OpClassName], list[OpComparison]] = defaultdict(list)
    for o in ops:
        sums[(o.overlap, o.op_class)].append(o)
    out = []
    for overlap in (False, True):
        for c in OpClassName:
            if not (rows := sums.get((overlap, c))):
                continue
            waits = [o.measured_wait_us for o in rows if o.measured_wait_us is not None]
            out.append(ClassComparison(c, len(rows), sum(o.predicted_us for o in rows),
                                       sum(o.measured_us for o in rows), overlap,
                                       sum(o.predicted_wait_us for o in rows), sum(waits) if waits else None))
    return tuple(out)


def _transfers(cost: CostModel, pairs: Sequence[AsyncPair], transfers: Sequence[HostTransfer],
               profile: MeasuredProfile, waits_us: Mapping[str, float], verdicts: Mapping[str, VerdictKind],
               judge: Callable[[float], VerdictKind] | None) -> tuple[TransferComparison, ...]:
    done_of = {p.start.name: p.done.name for p in pairs}
    rows: list[TransferComparison] = []
    for t in transfers:
        start = t.instruction.name
        done = done_of.get(start)
        timed = profile.asyncs.get(start)
        if timed is not None:
            measured, calls, exact = timed.median_us, timed.calls, timed.waited_calls
            wait = profile.ops.get(done or timed.done)
            waited: float | None = wait.median_us if wait is not None else 0.0
        elif (op := profile.ops.get(start)) is not None:
            measured, calls, waited, exact = op.median_us, op.calls, None, None
        else:
            continue
        rows.append(TransferComparison(start, done, t.direction, t.bytes, t.executions, calls,
                                       cost.transfer_us(t.bytes, t.direction), measured,
                                       waits_us.get(start, 0.0), waited, exact, verdicts.get(start)))
    if judge is None:
        return tuple(rows)
    rates = _alone_rates(rows)
    return tuple(TransferComparison(r.start, r.done, r.direction, r.bytes, r.predicted_calls, r.measured_calls,
                                    r.predicted_us, r.measured_us, r.predicted_wait_us, r.measured_wait_us,
                                    r.waited_calls, r.predicted_verdict, _measured_verdict(r, rates, judge))
                 for r in rows)


def _alone_rates(rows: Sequence[TransferComparison]) -> dict[Direction, float]:
    """Per direction, the fastest rate a transfer was timed at exactly (every run of it waited for:
    issue to done is its own time)."""
    rate: dict[Direction, float] = {}
    for r in rows:
        bw = r.measured_bandwidth
        if bw is not None and r.waited_calls is not None and r.waited_calls == r.measured_calls:
            rate[r.direction] = max(rate.get(r.direction, 0.0), bw)
    return rate


def _measured_verdict(r: TransferComparison, rates: Mapping[Direction, float],
                      judge: Callable[[float], VerdictKind]) -> VerdictKind | None:
    """The measured verdict, by the rule the model's verdicts follow: the wait at its done over its time
    alone on the link, its bytes at its direction's fastest exact rate (:func:`_alone_rates`). A transfer
    queued behind others took longer than its bytes need, and the queueing is part of its exposure, not
    of its time (v5e: a 32 MiB write issued beside a 128 MiB one waited 11.4 ms for its 2.3 ms of bytes:
    exposed). Where no run of its direction was timed exactly, its own measured time stands in."""
    wait = r.measured_wait_per_call_us
    alone = r.bytes / rates[r.direction] * 1e6 if r.direction in rates else r.measured_per_call_us
    return judge(min(1.0, wait / alone)) if wait is not None and alone > 0 else None


def _waits_or_spans(ins: Instruction | None) -> bool:
    return ins is not None and (is_done(ins) or ins.opcode in CONTROL_FLOW)


def _overlaps(index: ModuleIndex, cost: CostModel, pairs: tuple[AsyncPair, ...], owner: Mapping[str, Instruction],
              profile: MeasuredProfile, waits_us: Mapping[str, float],
              moves: Mapping[str, HostTransfer]) -> tuple[AsyncOverlap, ...]:
    if not profile.intervals:
        return ()
    starts = {p.start.name: p for p in pairs}
    async_names = {iv.name for iv in profile.intervals if (o := owner.get(iv.name)) is not None and o.name in starts}
    # A done's event is the compute waiting there, a loop's spans its body's: neither is work beside it.
    compute = sorted((iv.start_us, iv.end_us) for iv in profile.intervals if iv.name not in async_names
                     and iv.end_us > iv.start_us and not _waits_or_spans(owner.get(iv.name)))
    # Where the profile times async ops on a line of their own, their spans are those.
    spans = profile.async_intervals if profile.asyncs else profile.intervals
    merged: list[list[float]] = []
    for a, b in compute:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    out: list[AsyncOverlap] = []
    for iv in spans:
        if iv.name not in async_names:
            continue
        ins = owner[iv.name]
        dur = iv.us
        beside = sum(max(0.0, min(b, iv.end_us) - max(a, iv.start_us)) for a, b in merged
                     if b > iv.start_us and a < iv.end_us)
        share = beside / dur if dur > 0 else 1.0
        wait = waits_us.get(ins.name, 0.0)
        what = performer(index, ins)
        move = moves.get(ins.name)
        # per step, as the simulated wait is: one run's time by its runs per step
        predicted = max(predicted_op_us(what, cost, move) * index.executions(ins.computation), 1e-9)
        op = collective_kind(what) or starts[ins.name].op
        # A TPU times the wait at its done: hidden when that wait is under half the run (the model's rule).
        seen = iv.wait_us if isinstance(iv, AsyncRun) else None
        hidden = seen < 0.5 * dur if seen is not None else share >= 0.5
        out.append(AsyncOverlap(ins.name, op, dur, share, wait, wait < 0.5 * predicted, hidden, seen,
                                move is not None))
    return tuple(out)
