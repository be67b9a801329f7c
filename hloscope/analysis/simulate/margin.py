"""What each host transfer really costs, and how close its verdict is to flipping.

Pass: ``measure_margins(module, cost, pairs, transfers, callgraph, streams, timeline, thresholds)
-> Margins``, run on a simulated step (``hloscope.analysis.simulate.step``) by re-simulating it:

- **marginal cost** (``marginal_us``): how much shorter the simulated step is when the transfer
  costs nothing (:class:`~hloscope.analysis.simulate.timeline.SimScales` ``free_transfers``: done the moment
  it is issued, holding nothing up). A transfer that waited nothing, was charged nothing and held
  no other copy, stream op or link up in the simulation changes nothing when free: it is not
  re-simulated (its marginal cost is 0).
- **link flip** (``flip_link_gbps``): the host-link bandwidth at which the transfer's verdict
  changes. Both links' bandwidth is scaled by the factors of a log grid, ``2**(k/4)`` for k from
  -13 to 13 (0.105x to 9.51x of the target's figure); for each transfer the grid point nearest 1
  whose verdict differs from the step's is bracketed with the one before it and bisected
  (:data:`BISECTIONS` times, in log space; a point simulated once serves every transfer
  that has it). None when no factor in the grid changes it.
- **compute flip** (``flip_compute_factor``): the same search over a factor on every op's time
  (compute, collectives, other async ops; host transfers aside): below 1 the step's work is
  faster than estimated, above 1 slower.
- **exposure range** (``exposed_low_us`` .. ``exposed_high_us``): the transfer's blame per step
  (``TransferTiming.blame_us``) in two corner simulations, every op's time divided and multiplied
  by its op class's error factor (:func:`class_error_factors`: the errors measured on the target's
  platform, its analysis room's ``class_errors``: the A100 archives' on a GPU, the v5e runs' on a TPU,
  docs/accuracy.md; those of the calibrated target where the target was calibrated).
  The host link is not varied there (no measured error); the link flip says how far it may move.

The verdict in a re-simulated step is decided as the step's own (``judged_by_wait`` then
``judged_by_blame``, ``hloscope.analysis.simulate.overlap``). Each what-if is re-simulated from the
point of the entry computation where it first differs from the step, on a copy of the step's own
simulation paused there, and stopped where it can differ no more
(:class:`~hloscope.analysis.simulate.replay.Replayer`; docs/verdicts.md "How the re-simulations are
cut short"): every figure is then that of a whole re-simulation, the marginal cost to float rounding.
:func:`margins_from` computes the same from any :class:`Resimulations`: the reference the tests compare
against (``tests/analysis/simulate/margins_brute.py``) re-simulates the whole step for each what-if.
Facts only; words in ``hloscope.render``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.kinds import PairKind, Reason, VerdictKind
from hloscope.analysis.measured.compare import OpClassName, classify
from hloscope.analysis.platforms import backend_for
from hloscope.analysis.simulate.costs import cost_table
from hloscope.analysis.simulate.overlap import judged_by_blame_of, judged_by_wait
from hloscope.analysis.simulate.replay import Outcome, Replayer, WhatIf
from hloscope.analysis.simulate.step import simulate_step
from hloscope.analysis.simulate.timeline import WHAT_IF_SETTINGS, SimScales, Timeline, waits_by_start
from hloscope.analysis.simulate.verdict import Thresholds
from hloscope.analysis.structure.callgraph import CallGraph
from hloscope.analysis.structure.opclass import collective_kind
from hloscope.analysis.structure.pairs import AsyncPair
from hloscope.analysis.structure.streams import StreamAssignment
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.hlo.model import Instruction, Module
from hloscope.targets import Platform, Target

#: The log grid's exponents: factors 2**(k/4), k in [-GRID_STEPS, GRID_STEPS] (0.105x to 9.51x).
GRID_STEPS = 13
#: Bisections of each bracket (in log space): 2**(1/4) narrowed to within 2**(1/64), about 1.1%.
BISECTIONS = 4

def error_factor(err: float) -> float:
    """How many times longer or shorter the measured time may be: ``1 + err`` for a model that
    overestimates, ``1 / (1 + err)`` for one that underestimates (at least 1)."""
    return max(1.0 + err, 1.0 / (1.0 + err)) if err > -1.0 else math.inf


def class_error_factors(target: Target) -> dict[OpClassName, float]:
    """Per op class, the error factor of :func:`error_factor`: the calibrated errors for a
    calibrated target, else the datasheet's, measured on the target's platform. Classes not
    measured there take the largest factor of their kind (collectives: the largest collective's;
    device copies: the kernels')."""
    errs = backend_for(target).class_errors(target.calibrated)
    out = {c: error_factor(e) for c, e in errs.items()}
    coll = max(out[c] for c in (OpClassName.ALL_GATHER, OpClassName.ALL_REDUCE, OpClassName.REDUCE_SCATTER))
    out[OpClassName.ALL_TO_ALL] = coll
    out[OpClassName.COLLECTIVE_PERMUTE] = coll
    out[OpClassName.D2D_COPY] = out[OpClassName.KERNEL]
    return out


@dataclass(frozen=True)
class TransferMargin:
    """One judged transfer's cost and distance to flipping.

    computation / start: the transfer. verdict: its verdict in the step. marginal_us: per step,
    how much shorter the simulated step is with the transfer free. flip_link_factor: the factor on
    the host links' bandwidth nearest 1 at which its verdict changes (None: none in the grid);
    flip_link_gbps: that bandwidth for its direction, GB/s; flip_link_verdict: the verdict there.
    flip_compute_factor / flip_compute_verdict: the same for a factor on every op's time.
    exposed_low_us / exposed_high_us: its blame per step in the two error corners (and the step).
    """

    computation: str
    start: str
    verdict: VerdictKind
    marginal_us: float
    flip_link_factor: float | None
    flip_link_gbps: float | None
    flip_link_verdict: VerdictKind | None
    flip_compute_factor: float | None
    flip_compute_verdict: VerdictKind | None
    exposed_low_us: float
    exposed_high_us: float

    @property
    def margin(self) -> float | None:
        """How far the nearer flip is, as a factor at least 1 (None: neither flips in the grid)."""
        got = [max(f, 1.0 / f) for f in (self.flip_link_factor, self.flip_compute_factor) if f is not None]
        return min(got) if got else None


@dataclass(frozen=True)
class Margins:
    """Per judged transfer (async, timed), its :class:`TransferMargin`, keyed (computation, start).

    simulations: re-simulations run (marginal, link grid and bisections, compute grid and
    bisections, the two corners). calibrated: the exposure range used the calibrated target's
    errors. error_factors: per op class, the factor used. corner_step_us: the step in the two
    corners (low exposure, high exposure), widened by a calibrated target's own in-sample step error
    (:func:`step_band`). grid: the factors' range (lowest, highest).
    platform: whose measured errors the exposure range used (the target's platform).
    """

    transfers: dict[tuple[str, str], TransferMargin]
    simulations: int
    calibrated: bool
    error_factors: tuple[tuple[OpClassName, float], ...]
    corner_step_us: tuple[float, float]
    grid: tuple[float, float]
    platform: Platform

    def of(self, computation: str, start: str) -> TransferMargin | None:
        return self.transfers.get((computation, start))

    def fix_first(self) -> list[TransferMargin]:
        """Transfers by marginal cost, largest first (those that cost something); costs equal to the
        nanosecond (the figure's precision: :func:`measure_margins` may differ from a whole
        re-simulation in the last bits) by computation and start."""
        return sorted((m for m in self.transfers.values() if m.marginal_us > 0),
                      key=lambda m: (-round(m.marginal_us, 3), m.computation, m.start))


Key = tuple[str, str]


def verdicts_of(timeline: Timeline | Outcome, keys: Sequence[Key], transfer_us: Callable[[Key], float],
                thresholds: Thresholds) -> dict[Key, VerdictKind]:
    """Each transfer's verdict in a simulated step, decided as the step's own (wait, then blame). A
    what-if's figures are read without building its :class:`TransferTiming` (``Outcome.figures``)."""
    out: dict[Key, VerdictKind] = {}
    figures = timeline.figures if isinstance(timeline, Outcome) else None
    for k in keys:
        if figures is not None:
            got = figures(k)
            if got is None:
                continue
            executions, waits, blame, held_up = got
        else:
            t = timeline.transfers.get(k)
            if t is None or not t.matched or t.executions == 0:
                continue
            executions, waits, blame, held_up = t.executions, t.wait_us_per_step, t.blame_us, t.held_up_us
        us = transfer_us(k)
        kind, reason, _ = judged_by_wait(VerdictKind.EXPOSED, Reason.ESTIMATED, us, waits / executions, thresholds)
        kind, _ = judged_by_blame_of(kind, reason, us, executions, blame, held_up, thresholds)
        out[k] = kind
    return out


class WhatIfRun(Protocol):
    """One what-if re-simulation as the margins read it (:class:`~hloscope.analysis.simulate.replay.WhatIf`):
    ``upto(keys)``: run at least until the figures of ``keys`` are final; ``whole()``: to the step's end."""

    def upto(self, keys: frozenset[Key]) -> Timeline | Outcome: ...

    def whole(self) -> Timeline | Outcome: ...


class Resimulations(Protocol):
    """What :func:`margins_from` asks of the step's re-simulations. count: re-simulations run.
    ``free_each(keys)``: the step time with each transfer of ``keys`` free, one by one.
    ``what_if(scales, fork_at)``: a re-simulation with ``scales`` (``fork_at``: the transfers before
    whose first reach ``scales`` changes nothing)."""

    @property
    def count(self) -> int: ...

    def free_each(self, keys: Sequence[Key]) -> list[float]: ...

    def what_if(self, scales: SimScales, fork_at: frozenset[Key] | None = None) -> WhatIfRun: ...


class _Forked:
    """The same re-simulations, each started where it first differs from the step
    (:class:`~hloscope.analysis.simulate.replay.Replayer`): a free transfer from the first point of
    the entry computation that reaches it, a factor on the links from the first that reaches any
    transfer; a factor on the work's time changes the step from its first op. Each runs only as far as
    the transfers it is read for need (:class:`~hloscope.analysis.simulate.replay.WhatIf`): a grid
    point to the last judged transfer, a bisection to the last transfer of its bracket."""

    def __init__(self, module: Module, cost: CostModel, pairs: list[AsyncPair], transfers: list[HostTransfer],
                 callgraph: CallGraph, streams: StreamAssignment | None) -> None:
        self.replay = Replayer(module, cost, pairs, transfers, callgraph, streams)

    @property
    def count(self) -> int:
        return self.replay.count

    def free_each(self, keys: Sequence[Key]) -> list[float]:
        return self.replay.steps_from([(frozenset({k}), SimScales(free_transfers=frozenset({k}))) for k in keys])

    def what_if(self, scales: SimScales, fork_at: frozenset[Key] | None = None) -> WhatIf:
        return self.replay.what_if(scales, fork_at)


def _step(run: Timeline | Outcome) -> float:
    assert run.step_us is not None  # a whole run
    return run.step_us


#: What a grid point or bisection is asked: the factor, and the transfers whose verdicts are read there.
Run = Callable[[float, Sequence[Key]], dict[Key, VerdictKind]]


def _flips(base: dict[Key, VerdictKind], run: Run) -> dict[Key, tuple[float, VerdictKind]]:
    """Per transfer, the factor nearest 1 at which its verdict differs from ``base``, refined by
    bisection, with the verdict there. ``run(f, keys)``: the verdicts at factor ``f``, of ``keys`` at
    least (a transfer missing from it was not judged there: it keeps its verdict)."""
    ups = [2 ** (k / 4) for k in range(1, GRID_STEPS + 1)]
    everyone = list(base)
    grid: dict[float, dict[Key, VerdictKind]] = {}
    for f in ups:
        grid[f] = run(f, everyone)
        grid[1 / f] = run(1 / f, everyone)
    brackets: dict[tuple[float, float], list[Key]] = {}
    for k, v0 in base.items():
        best: tuple[float, float] | None = None
        for i, f in enumerate(ups):
            prev = ups[i - 1] if i else 1.0
            hit = [(prev, f)] if grid[f].get(k, v0) != v0 else []
            if grid[1 / f].get(k, v0) != v0:
                hit.append((1 / prev, 1 / f))
            if hit:
                best = hit[0] if len(hit) == 1 else hit[1]  # equally near: the lower side (less bandwidth/time)
                break
        if best is not None:
            brackets.setdefault(best, []).append(k)
    out: dict[Key, tuple[float, VerdictKind]] = {}
    for (inside, outside), keys in brackets.items():
        lo, hi = inside, outside  # lo keeps the base verdict, hi has flipped (per key: refined below)
        state = {k: (lo, hi) for k in keys}
        for _ in range(BISECTIONS):
            mids = {math.sqrt(a * b) for a, b in state.values()}
            for mid in mids:
                at_mid = [k for k, (a, b) in state.items() if math.sqrt(a * b) == mid]
                got = run(mid, at_mid)
                for k in at_mid:
                    a, b = state[k]
                    state[k] = (a, mid) if got.get(k, base[k]) != base[k] else (mid, b)
        for k, (_a, b) in state.items():
            out[k] = (b, run(b, [k]).get(k, base[k]))  # ``run`` keeps what it ran: no new simulation
    return out


def measure_margins(module: Module, cost: CostModel, pairs: Sequence[AsyncPair], transfers: Sequence[HostTransfer],
                    callgraph: CallGraph, streams: StreamAssignment | None, timeline: Timeline,
                    thresholds: Thresholds) -> Margins:
    """Marginal cost, link and compute flips and exposure range of every async transfer the
    simulation timed (module docstring), each what-if re-simulated from the point where it first
    differs from the step (:class:`~hloscope.analysis.simulate.replay.Replayer`): the same figures as
    whole re-simulations (``tests/analysis/simulate/margins_brute.py``), bit for bit."""
    runs = _Forked(module, cost, list(pairs), list(transfers), callgraph, streams)
    return margins_from(runs, cost, timeline, thresholds, transfers)


def margins_from(runs: Resimulations, cost: CostModel, timeline: Timeline, thresholds: Thresholds,
                 runs_transfers: Sequence[HostTransfer]) -> Margins:
    """The margins of :func:`measure_margins` (module docstring) computed from ``runs``, the step's
    re-simulations (``runs_transfers``: the transfers they simulate)."""
    keys = [k for k, t in timeline.transfers.items() if t.is_async and t.matched and t.executions > 0]
    lat = cost.transfer_latency_us
    alone = {k: timeline.transfers[k].transfer_us for k in keys}

    def us_at(link: float) -> Callable[[Key], float]:
        return lambda k: lat + (alone[k] - lat) / link

    base = verdicts_of(timeline, keys, us_at(1.0), thresholds)

    # marginal cost
    touched = timeline.influential
    costly = [k for k in keys if timeline.transfers[k].blame_us > 0 or timeline.transfers[k].wait_us_per_step > 0
              or k in touched]
    steps = dict(zip(costly, runs.free_each(costly), strict=True))
    marginal = {k: max(0.0, timeline.step_us - steps[k]) if k in steps else 0.0 for k in keys}

    # One what-if per factor, run as far as the transfers read there need; per transfer its verdict
    # there (None: not judged there, it keeps the step's).
    memo: dict[tuple[bool, float], tuple[WhatIfRun, dict[Key, VerdictKind | None]]] = {}
    everything = frozenset((t.computation, t.instruction.name) for t in runs_transfers)

    def verdicts_at(link: bool, f: float, want: Sequence[Key]) -> dict[Key, VerdictKind]:
        got = memo.get((link, f))
        if got is None:
            run = (runs.what_if(SimScales(link=f), everything) if link else runs.what_if(SimScales(compute=f)))
            got = memo[(link, f)] = (run, {})
        run, known = got
        missing = [k for k in want if k not in known]
        if missing:
            found = verdicts_of(run.upto(frozenset(missing)), missing, us_at(f if link else 1.0), thresholds)
            known.update((k, found.get(k)) for k in missing)
        return {k: v for k in want if (v := known[k]) is not None}

    def link_run(f: float, want: Sequence[Key]) -> dict[Key, VerdictKind]:
        return verdicts_at(True, f, want)

    def compute_run(f: float, want: Sequence[Key]) -> dict[Key, VerdictKind]:
        return verdicts_at(False, f, want)

    link_flips = _flips(base, link_run) if keys else {}
    compute_flips = _flips(base, compute_run) if keys else {}

    # exposure range: the two corners
    factors = class_error_factors(cost.target)
    cls_cache: dict[str, float] = {}

    def per_op(slower: bool) -> Callable[[Instruction], float]:
        def f(ins: Instruction) -> float:
            r = cls_cache.get(ins.name)
            if r is None:
                r = cls_cache[ins.name] = factors.get(classify(ins, cost), 1.0)
            return r if slower else 1.0 / r
        return f

    low = runs.what_if(SimScales(per_op=per_op(True))).whole()  # work slower: more to hide behind
    high = runs.what_if(SimScales(per_op=per_op(False))).whole()
    out: dict[Key, TransferMargin] = {}
    for k in keys:
        t = timeline.transfers[k]
        lf = link_flips.get(k)
        cf = compute_flips.get(k)
        corner = [t.blame_us, *(c.transfers[k].blame_us for c in (low, high) if k in c.transfers)]
        out[k] = TransferMargin(
            computation=k[0], start=k[1], verdict=base[k], marginal_us=marginal[k],
            flip_link_factor=lf[0] if lf else None,
            flip_link_gbps=lf[0] * cost.link_bandwidth(t.direction) / 1e9 if lf else None,
            flip_link_verdict=lf[1] if lf else None,
            flip_compute_factor=cf[0] if cf else None, flip_compute_verdict=cf[1] if cf else None,
            exposed_low_us=min(corner), exposed_high_us=max(corner))
    return Margins(out, runs.count, cost.target.calibrated, tuple(sorted(factors.items())),
                   step_band(_step(low), _step(high), timeline.step_us, cost.target.calibrated_step_error),
                   (2 ** (-GRID_STEPS / 4), 2 ** (GRID_STEPS / 4)), cost.target.platform)


def step_band(low: float, high: float, step_us: float, calibrated_error: float) -> tuple[float, float]:
    """The corner steps (``low``: the slower-work corner's, ``high``: the faster-work one's), widened so
    the band holds the step at the target's own in-sample error (``Target.calibrated_step_error``,
    0 for a datasheet target: nothing widened). A calibrated target was off by that much on the run it
    was fitted on: the band never claims less (step / factor to step x factor, ``error_factor``)."""
    if not calibrated_error or step_us <= 0:
        return low, high
    f = error_factor(calibrated_error)
    lo_i, hi_i = (0, 1) if low <= high else (1, 0)
    out = [low, high]
    out[lo_i] = min(out[lo_i], step_us / f)
    out[hi_i] = max(out[hi_i], step_us * f)
    return out[0], out[1]


# -- async collectives (held against the measured A100 runs, docs/accuracy.md) -----------------------


@dataclass(frozen=True)
class CollectiveMargin:
    """One async collective's cost and distance to flipping, judged as ``hloscope.analysis.measured.compare``
    judges it beside a measured profile: hidden when the simulated compute stream waits at its done
    less than half the model's time for it.

    start: its start. model_us: the model's time for one run. wait_us: the simulated waits at its
    done in the step. hidden: wait_us < model_us / 2. marginal_us: how much shorter the simulated
    step is with it free. flip_collective_factor: the factor on every collective's time nearest 1
    at which ``hidden`` changes; flip_compute_factor: the same on every other op's time (None: no
    change in the grid).
    """

    start: str
    model_us: float
    wait_us: float
    hidden: bool
    marginal_us: float
    flip_collective_factor: float | None
    flip_compute_factor: float | None

    @property
    def margin(self) -> float | None:
        got = [max(f, 1.0 / f) for f in (self.flip_collective_factor, self.flip_compute_factor) if f is not None]
        return min(got) if got else None


def measure_collective_margins(module: Module, cost: CostModel, pairs: Sequence[AsyncPair],
                               transfers: Sequence[HostTransfer], callgraph: CallGraph,
                               streams: StreamAssignment | None, timeline: Timeline) -> dict[str, CollectiveMargin]:
    """Marginal cost and flips of every async collective of the step (by start name)."""
    table = cost_table(module, cost, {(t.computation, t.instruction.name): t for t in transfers}, callgraph)

    def resim(scales: SimScales) -> Timeline:  # a whole re-simulation, verdicts and step time only
        return simulate_step(module, cost, list(pairs), list(transfers), callgraph, WHAT_IF_SETTINGS, streams=streams,
                             scales=scales, table=table)

    colls = [p for p in pairs if p.kind is PairKind.COLLECTIVE and collective_kind(p.start)]
    model = {p.start.name: max(cost.collective_us(p.start), 1e-9) for p in colls}
    names = list(model)

    def hidden_in(tl: Timeline, coll_f: float) -> dict[tuple[str, str], VerdictKind]:
        waits = waits_by_start(tl, colls)
        return {("", n): VerdictKind.HIDDEN if waits.get(n, 0.0) < 0.5 * model[n] * coll_f else VerdictKind.EXPOSED
                for n in names}

    base_waits = waits_by_start(timeline, colls)
    base = hidden_in(timeline, 1.0)

    def is_coll(ins: Instruction) -> bool:
        return bool(collective_kind(ins))

    def coll_run(f: float) -> dict[tuple[str, str], VerdictKind]:
        return hidden_in(resim(SimScales(per_op=lambda ins: f if is_coll(ins) else 1.0)), f)

    def comp_run(f: float) -> dict[tuple[str, str], VerdictKind]:
        return hidden_in(resim(SimScales(per_op=lambda ins: 1.0 if is_coll(ins) else f)), 1.0)

    memo: dict[tuple[str, float], dict[tuple[str, str], VerdictKind]] = {}

    def cached(kind: str, run: Callable[[float], dict[tuple[str, str], VerdictKind]]) -> Run:
        def go(f: float, _want: Sequence[Key]) -> dict[tuple[str, str], VerdictKind]:
            got = memo.get((kind, f))
            if got is None:
                got = memo[(kind, f)] = run(f)
            return got
        return go

    cf = _flips(base, cached("coll", coll_run)) if names else {}
    pf = _flips(base, cached("comp", comp_run)) if names else {}
    out: dict[str, CollectiveMargin] = {}
    for n in names:
        free = resim(SimScales(free=frozenset({n})))
        out[n] = CollectiveMargin(n, model[n], base_waits.get(n, 0.0), base[("", n)] is VerdictKind.HIDDEN,
                                  max(0.0, timeline.step_us - free.step_us),
                                  cf[("", n)][0] if ("", n) in cf else None, pf[("", n)][0] if ("", n) in pf else None)
    return out
