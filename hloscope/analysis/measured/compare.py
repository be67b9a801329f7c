"""Measured GPU profiles beside the model: the profile type, and its comparison with the step's estimates.

The parsers (``hloscope.analysis.measured.read``: nsys-jax archives, Chrome trace JSON, PGLE
profiles; ``hloscope.compile.xplane``: ``.xplane.pb`` through jaxlib), of the files
``hloscope.hlo.profile_files`` reads, all build one
:class:`MeasuredProfile` with :func:`profile_from_events`: per op the median and spread over executions of its
time per execution, the step time of each execution, and the op intervals of the median
execution (for the measured overlap of async ops). :func:`compare_measured` then puts the
model's figure beside each one, per op class, and returns a frozen
:class:`MeasuredComparison` (facts only; the words are in ``hloscope.render``).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.opclass import collective_kind, custom_call_target, is_done, is_free, value_shape
from hloscope.analysis.structure.pairs import AsyncPair
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.model import Instruction

__all__ = ["MeasuredComparison", "MeasuredProfile", "OpClassName", "compare_measured", "profile_from_events"]


@dataclass(frozen=True)
class OpStats:
    """One op's measured time per execution of the module, µs: median and spread (max - min)
    over executions; calls: how many times it ran in one execution (loops run it again)."""

    name: str
    median_us: float
    spread_us: float
    calls: int


@dataclass(frozen=True)
class Interval:
    """One op's measured GPU interval in the median execution, µs from the module's start."""

    name: str
    start_us: float
    end_us: float


@dataclass(frozen=True)
class MeasuredProfile:
    """A measured profile. source: the file. kind: ``nsys`` or ``pgle``. module: the module
    name the profile names ("" where it names none). step_us: the measured time of each
    execution, in order (empty for PGLE). ops: per op name. intervals: the median execution's
    op intervals, in start order (empty for PGLE). other_modules: executions of other modules
    in the file, by name (ignored)."""

    source: str
    kind: str
    module: str
    step_us: tuple[float, ...]
    ops: Mapping[str, OpStats]
    intervals: tuple[Interval, ...] = ()
    other_modules: tuple[str, ...] = ()

    @property
    def median_step_us(self) -> float | None:
        return statistics.median(self.step_us) if self.step_us else None

    def times_us(self) -> dict[str, float]:
        """Median µs per op per execution (what ``--profile`` would replace figures with)."""
        return {n: s.median_us for n, s in self.ops.items()}


def profile_from_events(source: str, kind: str, runs: Mapping[object, tuple[str, int, int]],
                        events: Mapping[object, Sequence[tuple[str, int, int]]], module_name: str = "",
                        ) -> MeasuredProfile:
    """One profile from measured events, nanoseconds: ``runs`` maps an execution's key to (module,
    start, duration); ``events`` maps the same key to its ops' (name, start, duration). Keeps the
    executions of ``module_name`` (default: the module with the most op events); per op, the median
    and spread over executions of its summed time per execution; the median execution's intervals."""
    rows_by_module: dict[str, int] = defaultdict(int)
    for key, rows in events.items():
        if key in runs:
            rows_by_module[runs[key][0]] += len(rows)
    if not rows_by_module:
        raise HloscopeError(f"{source}: not a usable measured profile: no op events inside a module execution",
                            EXIT_BAD_INPUT)
    chosen = module_name if module_name in rows_by_module else max(rows_by_module, key=lambda k: rows_by_module[k])
    order = sorted((runs[k][1], i, k) for i, k in enumerate(events) if k in runs and runs[k][0] == chosen)
    keys = [k for _, _, k in order]
    steps = [runs[k][2] / 1e3 for k in keys]
    per_op: dict[str, list[float]] = defaultdict(list)
    calls: dict[str, int] = {}
    for k in keys:
        totals: dict[str, float] = defaultdict(float)
        count: dict[str, int] = defaultdict(int)
        for op, _start, dur in events[k]:
            totals[op] += dur / 1e3
            count[op] += 1
        for op, us in totals.items():
            per_op[op].append(us)
            calls[op] = max(calls.get(op, 0), count[op])
    ops = {op: OpStats(op, statistics.median(v), max(v) - min(v), calls[op]) for op, v in per_op.items()}
    median_key = keys[sorted(range(len(keys)), key=lambda i: steps[i])[len(keys) // 2]]
    t0 = runs[median_key][1]
    ordered = sorted(events[median_key], key=lambda r: r[1])
    intervals = tuple(Interval(op, (s - t0) / 1e3, (s + d - t0) / 1e3) for op, s, d in ordered)
    others = tuple(sorted({m for m, _, _ in runs.values()} - {chosen}))
    return MeasuredProfile(source, kind, chosen, tuple(steps), ops, intervals, others)


def runs_from_spans(events: Mapping[object, Sequence[tuple[str, int, int]]], modules: Mapping[object, str],
                    ) -> dict[object, tuple[str, int, int]]:
    """Executions timed by the span of their op events (a trace without module ranges: XLA:CPU)."""
    out: dict[object, tuple[str, int, int]] = {}
    for key, rows in events.items():
        if rows and key in modules:
            start = min(s for _, s, _ in rows)
            out[key] = (modules[key], start, max(s + d for _, s, d in rows) - start)
    return out


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


_KINDS = {"all-gather": OpClassName.ALL_GATHER, "all-reduce": OpClassName.ALL_REDUCE,
          "reduce-scatter": OpClassName.REDUCE_SCATTER, "all-to-all": OpClassName.ALL_TO_ALL,
          "collective-permute": OpClassName.COLLECTIVE_PERMUTE}


@dataclass(frozen=True)
class OpComparison:
    """One measured op beside the model. name: the op as the profile names it; instruction: the
    instruction whose figure it is (an async start for a wrapped collective). predicted_us /
    measured_us: per execution of the module (calls included); spread_us: measured max - min."""

    name: str
    instruction: str
    op_class: OpClassName
    predicted_us: float
    measured_us: float
    spread_us: float
    calls: int

    @property
    def ratio(self) -> float | None:
        """predicted / measured (None when nothing was measured)."""
        return self.predicted_us / self.measured_us if self.measured_us > 0 else None


@dataclass(frozen=True)
class ClassComparison:
    """Sums over one class's matched ops, µs per execution."""

    name: OpClassName
    ops: int
    predicted_us: float
    measured_us: float

    @property
    def ratio(self) -> float | None:
        return self.predicted_us / self.measured_us if self.measured_us > 0 else None


@dataclass(frozen=True)
class AsyncOverlap:
    """One async pair's measured overlap beside the simulation's.

    start: the start instruction; op: its kind. measured_us: its kernel time in the median
    execution; measured_overlap: the share of that time other (compute) ops ran beside it.
    simulated_wait_us: what the simulated step waited at its done; hidden_by_model: that wait is
    under half the model's time for the op; hidden_measured: measured_overlap >= 0.5.
    """

    start: str
    op: str
    measured_us: float
    measured_overlap: float
    simulated_wait_us: float
    hidden_by_model: bool
    hidden_measured: bool

    @property
    def disagree(self) -> bool:
        return self.hidden_by_model != self.hidden_measured


@dataclass(frozen=True)
class MeasuredComparison:
    """The model against one measured profile.

    profile: what was read. module_matches: the profile names this module (or none at all).
    measured_ops / matched_ops: op names in the profile / those naming an instruction here.
    unmatched: up to ten names that match nothing. ops / classes / overlaps: as above.
    predicted_step_us: the simulated step (None unscheduled)."""

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
    return OpClassName.KERNEL


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
    """The instruction that says what ``ins`` does: itself, or the root an unsugared async start
    calls (``async-start(...), calls=%wrapped``)."""
    if ins.opcode == "async-start" and not ins.wrapped_opcode:
        return index.wrapped_root(ins) or ins
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
        if ins.opcode == "async-start" and not ins.wrapped_opcode:  # async-start(...), calls=%wrapped
            for c in ins.called_computations:
                for inner in index.module.computations[c].instructions:
                    by_name[inner.name] = ins
    return by_name


def compare_measured(index: ModuleIndex, cost: CostModel, pairs: tuple[AsyncPair, ...],
                     transfers: Sequence[HostTransfer], profile: MeasuredProfile,
                     step_us: float | None, waits_us: Mapping[str, float]) -> MeasuredComparison:
    """Each measured op beside the model's figure, per class; each async pair's measured
    overlap beside the simulated wait at its done (``waits_us``: done-start name -> µs)."""
    owner = owner_map(index)
    moves = {t.instruction.name: t for t in transfers}
    ops: list[OpComparison] = []
    unmatched: list[str] = []
    for name, st in profile.ops.items():
        ins = owner.get(name)
        if ins is None or is_free(ins) or is_done(ins):
            if ins is None:
                unmatched.append(name)
            continue
        what = performer(index, ins)
        move = moves.get(ins.name)
        pred = predicted_op_us(what, cost, move) * st.calls
        op_class = OpClassName.HOST_TRANSFER if move is not None else classify(what, cost)
        ops.append(OpComparison(name, ins.name, op_class, pred, st.median_us, st.spread_us, st.calls))
    sums: dict[OpClassName, list[float]] = {}
    for o in ops:
        s = sums.setdefault(o.op_class, [0, 0.0, 0.0])
        s[0] += 1
        s[1] += o.predicted_us
        s[2] += o.measured_us
    classes = tuple(ClassComparison(c, int(v[0]), v[1], v[2]) for c in OpClassName if (v := sums.get(c)))
    overlaps = _overlaps(index, cost, pairs, owner, profile, waits_us)
    matched = len(profile.ops) - len(unmatched)
    module_matches = not profile.module or profile.module == index.module.name
    return MeasuredComparison(profile, index.module.name, module_matches, len(profile.ops), matched,
                              tuple(unmatched[:10]), tuple(ops), classes, overlaps, step_us)


def _overlaps(index: ModuleIndex, cost: CostModel, pairs: tuple[AsyncPair, ...], owner: Mapping[str, Instruction],
              profile: MeasuredProfile, waits_us: Mapping[str, float]) -> tuple[AsyncOverlap, ...]:
    if not profile.intervals:
        return ()
    starts = {p.start.name: p for p in pairs}
    async_names = {iv.name for iv in profile.intervals if (o := owner.get(iv.name)) is not None and o.name in starts}
    compute = sorted((iv.start_us, iv.end_us) for iv in profile.intervals if iv.name not in async_names
                     and iv.end_us > iv.start_us)
    merged: list[list[float]] = []
    for a, b in compute:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    out: list[AsyncOverlap] = []
    for iv in profile.intervals:
        if iv.name not in async_names:
            continue
        ins = owner[iv.name]
        dur = iv.end_us - iv.start_us
        beside = sum(max(0.0, min(b, iv.end_us) - max(a, iv.start_us)) for a, b in merged
                     if b > iv.start_us and a < iv.end_us)
        share = beside / dur if dur > 0 else 1.0
        wait = waits_us.get(ins.name, 0.0)
        what = performer(index, ins)
        predicted = max(cost.collective_us(what), 1e-9)
        op = collective_kind(what) or starts[ins.name].op
        out.append(AsyncOverlap(ins.name, op, dur, share, wait, wait < 0.5 * predicted, share >= 0.5))
    return tuple(out)
