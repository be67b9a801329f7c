"""Fit a target's own figures to a measured profile: ``fit_target(index, target, profile)``.

One walk over the profile's ops sorts them by the figure that prices them (:class:`_Samples`);
then one job per group of figures. Only the figures the platform has are fitted:

- a target whose datasheet prices a launch per op (a GPU's ``kernel_launch_us`` > 0): kernel
  launch and achieved HBM bandwidth on the kernels the model calls memory-bound (HBM time at least
  the math time), ``t = kernel_launch_us + bytes / hbm_bandwidth``: a least-squares line through
  (bytes, t), intercept and slope; achieved GEMM throughput on the compute-bound GEMMs,
  ``t - kernel_launch_us = effective FLOPs / peak`` (effective: divided by the tile efficiency the
  model already applies): a line through the origin, ``peak = sum(x^2) / sum(x y)``;
- a target that prices none (a TPU): a per-op time only where the profile's compute line sat idle
  between ops at least :data:`GAP_SHARE` of the step (:func:`idle_gaps`: that idle time per op run;
  the v5e runs' TensorCore was idle 0.001-0.022 ms a step, so none); HBM bandwidth and each peak
  as a scale of the model's own times (:func:`_scale`: the figure times the model's summed time over
  the measured sum, less any per-op time, of the ops it prices on the compute line: memory-bound
  ones for the bandwidth, the others with FLOPs by their peak), so the fit holds whatever the cost
  model prices an op at. The figure scaled is the datasheet's: the target's achieved shares
  (``TpuTarget.hbm_efficiency``, ``mxu_efficiency``) stay in it and the cost model still multiplies
  them in, so an op is priced at ``datasheet x share x scale`` = what the profile measured (never
  the shares twice: the scale is fitted to the model's times, which hold the shares already);
- each collective kind: ``t = latency + ring traffic / bandwidth`` (traffic: what each device
  sends in a ring over its group), intercept and slope; written as ``collective_figures``;
- host link and DMA latency: the same line on the host transfers, per direction. Where the profile
  times async ops on a line of their own (a TPU's), only the runs the compute waited for are
  timed by their own work, and each is a sample of its direction's busy period
  (:func:`_collect_host_runs`): the rate is then the line through the origin.

An async op timed on a line of its own (a VMEM copy, a slice) overlaps the compute: it informs no
compute figure. A figure is fitted only from at least :data:`MIN_SAMPLES` ops (for a line with an
intercept, ones whose predictor varies) and only if the fit is physical (positive bandwidth and
peak, latency clamped at 0); otherwise it keeps the datasheet value and its :class:`Figure` says
why (:class:`Unfitted`). Which fitted groups (:class:`FigureGroup`) a target adopts is decided
by the step (``hloscope.analysis.calibration``; :func:`adopt`). The result is data: the words are
in ``hloscope.render``.

:func:`fit_rates` asks less of the target: what the chip achieved, per run, on each kind of
work the profile times, independent of any target's figures (a TPU's profile, whose target
family carries other fields than a GPU's): the host link per direction (bytes per run of each
transfer; where the profile times async ops on a line of their own, a TPU's, each run of the
median execution at whose done the compute waited is a sample: a run that finished before its
done was reached is timed to the done, not by its own work), and per op class the rate of its runs (GEMMs: FLOP/s; other
kernels: HBM bytes/s; device-to-device copies: bytes copied per second). Each rate is the least-squares line through
the origin (a run's fixed costs are inside the rate), from at least :data:`MIN_SAMPLES` runs.
:class:`Calibration` carries them beside the fitted target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from hloscope.analysis.cost.collectives import first_replica_group, ring_traffic
from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.measured.compare import (
    AsyncRun,
    MeasuredProfile,
    OpClassName,
    classify,
    owner_map,
    performer,
)
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.opclass import CONTROL_FLOW, collective_kind, is_done, is_free, value_shape
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.hlo.model import Instruction
from hloscope.targets import CALIBRATED_ON, COLLECTIVE_KINDS, Target
from hloscope.vocab import Direction, LinkMode

__all__ = ["GAP_SHARE", "MIN_SAMPLES", "RATE_CLASSES", "Calibration", "Figure", "FigureGroup", "IdleGaps", "Rate",
           "Unfitted", "adopt", "fit_rates", "fit_target", "fitted_groups", "group_of", "idle_gaps", "target_of"]

#: Fewest measured ops a figure is fitted from.
MIN_SAMPLES = 3


class Unfitted(StrEnum):
    """Why a figure kept its datasheet value."""

    FITTED = ""
    NO_SAMPLES = "no-samples"  # the profile times no op this figure prices
    TOO_FEW = "too-few"  # fewer than MIN_SAMPLES ops, or all with one predictor value
    UNPHYSICAL = "unphysical"  # the fit gave a non-positive bandwidth or peak
    HIDDEN = "hidden"  # every run finished before its done was reached: timed to the done, an upper bound
    NO_LATENCY = "no-latency"  # the host samples were all of one size, or busy periods: no latency told apart
    DROPPED = "dropped"  # fitted, but the simulated step was closer to the measured one without its group
    NO_GAPS = "no-gaps"  # the platform prices no per-op time and the profile's compute line sat idle too little
    WITHIN_SPREAD = "within-spread"  # fitted within the target's run_spread: no evidence this program differs


@dataclass(frozen=True)
class Figure:
    """One target figure: its name (a Target field, or ``collective_figures.KIND.bandwidth``),
    unit, datasheet value and fitted value (``after`` = ``before`` when not fitted; for
    ``Unfitted.DROPPED`` the value fitted, which the target does not take), how many measured ops
    (or host-link busy periods) it was fitted on, and why not (``Unfitted.FITTED`` when it was)."""

    name: str
    unit: str
    before: float
    after: float
    samples: int
    unfitted: Unfitted


@dataclass(frozen=True)
class Rate:
    """What the chip achieved on one kind of work, per run, fitted from a profile.

    work: ``host link`` (``direction`` set) or an op class's name (``OpClassName``). unit:
    ``B/s`` or ``FLOP/s``. value: the fitted rate (None when not fitted). samples: the runs it was
    fitted on; unfitted: why not (``Unfitted.FITTED`` when it was).
    """

    work: str
    direction: Direction | None
    unit: str
    value: float | None
    samples: int
    unfitted: Unfitted


#: Idle share of the step, between the ops of the compute line, from which a platform that prices no
#: per-op time gets one (``kernel_launch_us``): the v5e runs' TensorCore sat idle 0.001-0.02 ms of
#: 24-271 ms steps (under 0.02%), where a 105-269 µs launch fitted to their kernels' line put the
#: in-sample step +10% to +33% off (fixtures/measured/tpu_v5e/; docs/accuracy.md).
GAP_SHARE = 0.01


@dataclass(frozen=True)
class IdleGaps:
    """The compute line's idle time in a profile's median execution: step_us, its time; busy_us, the
    union of its op events (a loop's span and a done's wait count as busy); op_runs, the runs of ops
    the model prices (loops, calls, dones and async ops on a line of their own aside)."""

    step_us: float
    busy_us: float
    op_runs: int

    @property
    def idle_us(self) -> float:
        return max(0.0, self.step_us - self.busy_us)

    @property
    def per_op_us(self) -> float:
        """Idle time per op run: the per-op time it would take to account for it."""
        return self.idle_us / self.op_runs if self.op_runs else 0.0

    @property
    def shows_gaps(self) -> bool:
        """Idle at least :data:`GAP_SHARE` of the step, with ops to charge it to."""
        return self.op_runs > 0 and self.idle_us >= GAP_SHARE * self.step_us


@dataclass(frozen=True)
class Calibration:
    """A fitted target and its figures, in a fixed order; rates: what the chip achieved per run
    (:func:`fit_rates`); gaps: the compute line's idle time (None where the profile places no run)."""

    base: Target
    target: Target
    figures: tuple[Figure, ...]
    rates: tuple[Rate, ...] = ()
    gaps: IdleGaps | None = None


def _line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float] | None:
    """(intercept, slope) of the least-squares line, or None when x does not vary. A latency
    cannot be negative: when the free fit's intercept is, the line is fitted through the origin
    (least squares with the intercept held at its bound, 0)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx <= 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    if my - slope * mx >= 0:
        return my - slope * mx, slope
    return 0.0, sum(x * y for x, y in zip(xs, ys, strict=True)) / sum(x * x for x in xs)


def fit_target(index: ModuleIndex, base: Target, profile: MeasuredProfile, name: str,
               transfers: Sequence[HostTransfer] = ()) -> Calibration:
    """The figures of ``base`` fitted to ``profile`` (measured on ``index``'s module), as a
    target called ``name``. ``transfers``: the module's host transfers (their bytes and direction).
    One job per group of figures (module docstring), each returning its :class:`Figure` rows; the
    target takes every fitted one (:func:`target_of`)."""
    cost = CostModel(index, base)
    gaps = idle_gaps(index, profile)
    samples = _collect(index, cost, profile, transfers)
    figures = _fit_compute(samples, base, gaps) + _fit_collectives(samples, base) + _fit_host_link(samples, base)
    figures = [_within_spread(f, base) for f in figures]
    target = target_of(base, name, profile.source, figures)
    return Calibration(base, target, tuple(figures), fit_rates(index, cost, profile, transfers), gaps)


def _fit_compute(samples: _Samples, base: Target, gaps: IdleGaps | None) -> list[Figure]:
    """The compute line's figures: a launch line and the GEMM peak where the platform prices a launch
    per op, else a per-op time only from idle gaps and each figure as a scale of the model's times."""
    if base.kernel_launch_us > 0:  # the platform prices a launch per op: the kernels' line tells it
        figures = _fit_launch_line(samples, base)
        return figures + _fit_gemm_peak(samples, base, figures[0].after)
    figures = [_fit_launch_from_gaps(gaps, base)]  # no per-op time unless the compute line sat idle between ops
    return figures + _fit_scales(samples, base, figures[0].after)


def _within_spread(f: Figure, base: Target) -> Figure:
    """``f``, marked ``Unfitted.WITHIN_SPREAD`` (its ``after`` the value fitted) when it departs from the
    target's value by no more than the target's ``run_spread`` for it: one run's fit inside the spread of the
    runs the target was fitted on tells nothing that would carry to another program."""
    spread = base.spread_of(f.name)
    if f.unfitted is not Unfitted.FITTED or spread is None or not f.before:
        return f
    return replace(f, unfitted=Unfitted.WITHIN_SPREAD) if abs(f.after / f.before - 1) <= spread else f


class FigureGroup(StrEnum):
    """Figures adopted or kept together: those of the compute line, the collectives and the host link."""

    COMPUTE = "compute"
    COLLECTIVES = "collectives"
    HOST_LINK = "host link"


def group_of(figure: str) -> FigureGroup:
    """The group of a :class:`Figure` by its name."""
    if figure.startswith("collective_figures."):
        return FigureGroup.COLLECTIVES
    if figure.startswith("host_"):
        return FigureGroup.HOST_LINK
    return FigureGroup.COMPUTE


def fitted_groups(cal: Calibration) -> tuple[FigureGroup, ...]:
    """The groups with at least one fitted figure, in :class:`FigureGroup` order."""
    got = {group_of(f.name) for f in cal.figures if f.unfitted is Unfitted.FITTED}
    return tuple(g for g in FigureGroup if g in got)


def target_of(base: Target, name: str, source: str, figures: Sequence[Figure]) -> Target:
    """``base`` with each fitted figure's value, called ``name``, calibrated on ``source``."""
    changes: dict[str, Any] = {f.name: f.after for f in figures
                               if f.unfitted is Unfitted.FITTED and group_of(f.name) is not FigureGroup.COLLECTIVES}
    fitted = {f.name: f.after for f in figures if f.unfitted is Unfitted.FITTED}
    keys = {kind: f"collective_figures.{kind}" for kind in COLLECTIVE_KINDS}
    measured = tuple((kind, fitted[f"{key}.bandwidth"], fitted[f"{key}.latency_us"])
                     for kind, key in keys.items() if f"{key}.bandwidth" in fitted)
    return replace(base, name=name, description=f"{base.description}{CALIBRATED_ON}{source}",
                   collective_figures=measured, calibrated_on=source, **changes)


def adopt(cal: Calibration, groups: Sequence[FigureGroup]) -> Calibration:
    """``cal`` with only the fitted figures of ``groups``: each other fitted figure is marked
    ``Unfitted.DROPPED`` (its ``after`` the value fitted) and the target keeps its datasheet value."""
    figures = tuple(f if f.unfitted is not Unfitted.FITTED or group_of(f.name) in groups
                    else replace(f, unfitted=Unfitted.DROPPED) for f in cal.figures)
    source = cal.target.calibrated_on
    return replace(cal, target=target_of(cal.base, cal.target.name, source, figures), figures=figures)


@dataclass
class _Samples:
    """What a profile's ops say, sorted by the figure that prices them (one walk over its ops).

    kernels / gemms: (HBM bytes or effective FLOPs, µs per run) of the memory-bound kernels and the
    compute-bound GEMMs as a platform with a launch per op reads them (the line's fits).
    memory / compute: (the model's µs per run at the datasheet figures, the measured µs per run, runs
    per execution) of every op on the compute line the model calls memory-bound, and of the others
    with FLOPs, by the peak figure that prices them (the scale fits). collectives: per kind, (ring
    traffic, µs). host: per direction, (bytes, µs) of the runs timed by their own work; host_runs:
    per direction, how many runs were timed at all; host_queued: the host samples are busy periods of
    one queue per direction (:func:`_collect_host_runs`).
    """

    kernels: list[tuple[float, float]] = field(default_factory=list)
    gemms: list[tuple[float, float]] = field(default_factory=list)
    memory: list[tuple[float, float, int]] = field(default_factory=list)
    compute: dict[str, list[tuple[float, float, int]]] = field(default_factory=dict)
    collectives: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    host: dict[Direction, list[tuple[float, float]]] = field(default_factory=dict)
    host_runs: dict[Direction, int] = field(default_factory=dict)
    host_queued: bool = False


def _collect(index: ModuleIndex, cost: CostModel, profile: MeasuredProfile,
             transfers: Sequence[HostTransfer]) -> _Samples:
    """Sort the profile's timed ops into :class:`_Samples`. An async op a profile times on a line of
    its own (a TPU's "Async XLA Ops") overlaps the compute: it informs no compute figure."""
    base = cost.target
    owner = owner_map(index)
    moves = {t.instruction.name: t for t in transfers}
    out = _Samples()
    for op, st in profile.ops.items():
        ins = owner.get(op)
        if ins is None or is_free(ins) or is_done(ins) or ins.opcode in CONTROL_FLOW or st.calls <= 0:
            continue
        if ins.name in moves:
            if not profile.async_intervals:  # no async line: the start's own event is the copy
                t = moves[ins.name]
                out.host.setdefault(t.direction, []).append((float(t.bytes), st.per_call_us))
                out.host_runs[t.direction] = out.host_runs.get(t.direction, 0) + st.calls
            continue
        what = performer(index, ins)
        kind = collective_kind(what)
        if kind:
            us = profile.asyncs.get(op, st).per_call_us
            group = first_replica_group(what.attr_text, index.module.num_partitions)
            nbytes = value_shape(what).byte_size * (len(group) if kind == "reduce-scatter" else 1)
            out.collectives.setdefault(kind, []).append((ring_traffic(kind, nbytes, len(group)), us))
            continue
        if op in profile.asyncs:
            continue
        _sort_compute(out, cost, what, st.per_call_us, st.calls)
    peak = {d: base.host_link_bandwidth(d, LinkMode.PEAK) * base.host_link_sharers for d in Direction}
    _collect_host_runs(out, owner, profile, moves, peak)
    return out


def _sort_compute(out: _Samples, cost: CostModel, what: Instruction, us: float, calls: int) -> None:
    """One op on the compute line into the samples of the figures that price it."""
    base = cost.target
    op_class = classify(what, cost)
    _flops, effective, dtype, nbytes = cost.roofline_terms(what)
    compute = effective / base.peak_flops(dtype) * 1e6
    memory = nbytes / base.hbm_bandwidth * 1e6
    if op_class is OpClassName.GEMM and compute > memory:
        out.gemms.append((effective, us))
    elif op_class is OpClassName.KERNEL and memory >= compute and nbytes > 0:
        out.kernels.append((float(nbytes), us))
    c = cost.op_cost(what)
    if c.memory_bound and c.hbm_bytes > 0:
        out.memory.append((c.us, us, calls))
    elif c.flops > 0 and c.us > 0:
        # Which figure prices it: the profile's bf16 peak (on a TPU the figure times the target's MXU share).
        peak = "peak_bf16_flops" if cost.profile.peak_flops(dtype) == cost.profile.peak_flops("bf16") else \
            "peak_fp32_flops"
        out.compute.setdefault(peak, []).append((c.us, us, calls))


def _collect_host_runs(out: _Samples, owner: dict[str, Instruction], profile: MeasuredProfile,
                       moves: dict[str, HostTransfer], peak: dict[Direction, float]) -> None:
    """The host transfers' runs on a line of their own. Only a run the compute waited for at its done
    ends where its bytes did (another is timed to the done, an upper bound); and a run issued while
    others of its direction were on the link queued behind them (one queue in issue order, as the
    model runs them: the v5e's 32 MiB copy issued beside a 128 MiB one ended when all 160 MiB had
    moved). So each waited run is a sample of the bytes its direction's link moved from the start of
    its busy period to its end. A busy period runs on while each run is issued before the runs
    before it in the period could have moved their bytes even at the link's peak (``peak``, bytes/s
    per direction): the link surely had not gone idle."""
    runs: dict[Direction, list[tuple[AsyncRun, HostTransfer]]] = {}
    for run in profile.async_intervals:
        ins = owner.get(run.name)
        if ins is not None and ins.name in moves:
            t = moves[ins.name]
            runs.setdefault(t.direction, []).append((run, t))
    out.host_queued = bool(runs)
    for direction, these in runs.items():
        these.sort(key=lambda rt: rt[0].start_us)
        out.host_runs[direction] = len(these)
        begin, moved = 0.0, 0
        for i, (run, t) in enumerate(these):
            if i == 0 or run.start_us >= begin + moved / peak[direction] * 1e6:
                begin, moved = run.start_us, 0  # the link may have been free: a new busy period
            moved += t.bytes
            if run.waited and run.end_us > begin:
                out.host.setdefault(direction, []).append((float(moved), run.end_us - begin))


def _fit_launch_line(samples: _Samples, base: Target) -> list[Figure]:
    """Kernel launch and achieved HBM bandwidth: the line through the memory-bound kernels' (bytes, µs)."""
    mem = samples.kernels
    launch, bw = base.kernel_launch_us, base.hbm_bandwidth
    fit = _line([b for b, _ in mem], [t for _, t in mem]) if len(mem) >= MIN_SAMPLES else None
    why = _why(len(mem), fit is not None)
    if fit is not None and fit[1] > 0:
        launch, bw = max(0.0, fit[0]), 1e6 / fit[1]
    elif fit is not None:
        why = Unfitted.UNPHYSICAL
    return [Figure("kernel_launch_us", "us", base.kernel_launch_us, launch, len(mem), why),
            Figure("hbm_bandwidth", "B/s", base.hbm_bandwidth, bw, len(mem), why)]


def _fit_gemm_peak(samples: _Samples, base: Target, launch: float) -> list[Figure]:
    """Achieved GEMM throughput: the line through the origin of (effective FLOPs, µs less the launch)."""
    gemm = samples.gemms
    peak = base.peak_bf16_flops
    why = _why(len(gemm), len({x for x, _ in gemm}) > 1)
    if why is Unfitted.FITTED:
        sxy = sum(x * max(0.0, t - launch) for x, t in gemm)
        if sxy > 0:
            peak = sum(x * x for x, _ in gemm) / sxy * 1e6
        else:
            why = Unfitted.UNPHYSICAL
    return [Figure("peak_bf16_flops", "FLOP/s", base.peak_bf16_flops, peak, len(gemm), why)]


def _fit_launch_from_gaps(gaps: IdleGaps | None, base: Target) -> Figure:
    """A per-op time on a platform that prices none: the compute line's idle time per op run, only
    where it sat idle at least :data:`GAP_SHARE` of the step (else 0 is kept, and why)."""
    before = base.kernel_launch_us
    if gaps is None:
        return Figure("kernel_launch_us", "us", before, before, 0, Unfitted.NO_SAMPLES)
    if not gaps.shows_gaps:
        return Figure("kernel_launch_us", "us", before, before, gaps.op_runs, Unfitted.NO_GAPS)
    return Figure("kernel_launch_us", "us", before, gaps.per_op_us, gaps.op_runs, Unfitted.FITTED)


def _scale(points: Sequence[tuple[float, float, int]], launch: float) -> tuple[float | None, Unfitted]:
    """The factor on a figure that makes the model's summed time of ``points`` (model µs at the
    datasheet figure, measured µs, runs) the measured sum less the launch of each run: a ratio
    estimator (errors in proportion to the op's time), so the class's total is fitted exactly."""
    if not points:
        return None, Unfitted.NO_SAMPLES
    if len(points) < MIN_SAMPLES:
        return None, Unfitted.TOO_FEW
    model = sum(m * n for m, _, n in points)
    measured = sum(max(0.0, t - launch) * n for _, t, n in points)
    if model <= 0 or measured <= 0:
        return None, Unfitted.UNPHYSICAL
    return model / measured, Unfitted.FITTED


def _fit_scales(samples: _Samples, base: Target, launch: float) -> list[Figure]:
    """HBM bandwidth from every op the model calls memory-bound, each peak from the ops it prices."""
    out = []
    for key, unit, points in (("hbm_bandwidth", "B/s", samples.memory),
                              ("peak_bf16_flops", "FLOP/s", samples.compute.get("peak_bf16_flops", [])),
                              ("peak_fp32_flops", "FLOP/s", samples.compute.get("peak_fp32_flops", []))):
        before = float(getattr(base, key))
        factor, why = _scale(points, launch)
        out.append(Figure(key, unit, before, before * factor if factor else before, len(points), why))
    return out


def _fit_collectives(samples: _Samples, base: Target) -> list[Figure]:
    """Each collective kind's bandwidth and latency: the line through (ring traffic, µs)."""
    figures: list[Figure] = []
    for kind in COLLECTIVE_KINDS:
        pts = samples.collectives.get(kind, [])
        ring = base.collective_figure(kind)
        before_bw, before_lat = ring if ring else (base.interconnect_bandwidth, base.collective_launch_us)
        fit = _line([x for x, _ in pts], [t for _, t in pts]) if len(pts) >= MIN_SAMPLES else None
        why = _why(len(pts), fit is not None)
        after_bw, after_lat = before_bw, before_lat
        if fit is not None and fit[1] > 0:
            after_bw, after_lat = 1e6 / fit[1], max(0.0, fit[0])
        elif fit is not None:
            why = Unfitted.UNPHYSICAL
        figures += [Figure(f"collective_figures.{kind}.bandwidth", "B/s", before_bw, after_bw, len(pts), why),
                    Figure(f"collective_figures.{kind}.latency_us", "us", before_lat, after_lat, len(pts), why)]
    return figures


def _fit_host_link(samples: _Samples, base: Target) -> list[Figure]:
    """The host link per direction and the DMA latency: the line through (bytes, µs) of the runs timed
    by their own work; all of one size, the line through the origin (no latency told apart)."""
    figures: list[Figure] = []
    latencies: list[float] = []
    for direction, key, peak_key in ((Direction.TO_HOST, "host_link_achieved_to_host", "host_link_to_host"),
                                     (Direction.TO_DEVICE, "host_link_achieved_to_device", "host_link_to_device")):
        pts = samples.host.get(direction, [])
        before_bw = base.host_link_bandwidth(direction) * base.host_link_sharers
        fit = _line([b for b, _ in pts], [t for _, t in pts]) if len(pts) >= MIN_SAMPLES else None
        why = _why(len(pts), fit is not None)
        after_bw = before_bw
        through_origin = bool(pts) and (samples.host_queued or (fit is None and len({b for b, _ in pts}) == 1))
        if through_origin:
            # All of one size (a TPU step's offloads usually are), or busy periods of one queue (each
            # holds a latency per run): no latency can be told apart, so the rate is the line through
            # the origin, every byte at the achieved bandwidth (all of one size: least squares).
            moved, took = sum(b for b, _ in pts), sum(t for _, t in pts)
            fit = (0.0, took / moved) if took > 0 and moved > 0 else None
            why = Unfitted.FITTED if fit is not None else why
        if fit is not None and fit[1] > 0:
            # Achieved, never above the link's peak: the figures are per link, shared by host_link_gpus.
            after_bw = min(1e6 / fit[1] * base.host_link_sharers, float(getattr(base, peak_key)))
            if not through_origin:  # a line through the origin tells no latency
                latencies.append(max(0.0, fit[0]))
        elif fit is not None:
            why = Unfitted.UNPHYSICAL
        elif not pts and samples.host_runs.get(direction):
            why = Unfitted.HIDDEN
        figures.append(Figure(key, "B/s", before_bw, after_bw, len(pts), why))
    lat = sum(latencies) / len(latencies) if latencies else base.host_dma_latency_us
    samples_n = sum(len(v) for v in samples.host.values())
    why = Unfitted.FITTED if latencies else Unfitted.NO_LATENCY if samples_n else Unfitted.NO_SAMPLES
    figures.append(Figure("host_dma_latency_us", "us", base.host_dma_latency_us, lat, samples_n, why))
    return figures


def idle_gaps(index: ModuleIndex, profile: MeasuredProfile) -> IdleGaps | None:
    """The compute line's idle time in the profile's median execution (None where the profile places
    no op run: a PGLE profile): its step less the union of its op events (a done's wait is busy; a
    loop's or call's span is not counted, it would cover the gaps between its body's ops), and the
    runs of the ops the model prices there."""
    step = profile.median_step_us
    if not profile.intervals or not step:
        return None
    owner = owner_map(index)
    spans = []
    runs = 0
    for iv in profile.intervals:
        ins = owner.get(iv.name)
        if ins is not None and ins.opcode in CONTROL_FLOW:
            continue
        spans.append((max(0.0, iv.start_us), min(step, iv.end_us)))
        runs += ins is not None and not is_free(ins) and not is_done(ins) and iv.name not in profile.asyncs
    busy, reach = 0.0, 0.0
    for a, b in sorted(spans):
        if b > reach:
            busy += b - max(a, reach)
            reach = b
    return IdleGaps(step, busy, runs)


#: The op classes :func:`fit_rates` fits, and what their rate counts.
RATE_CLASSES = ((OpClassName.GEMM, "FLOP/s"), (OpClassName.KERNEL, "B/s"), (OpClassName.D2D_COPY, "B/s"))


def _through_origin(points: Sequence[tuple[float, float]]) -> tuple[float | None, Unfitted]:
    """(rate per second, why) of the least-squares line through the origin of (amount, µs) points."""
    points = [(x, y) for x, y in points if x > 0]
    if not points:
        return None, Unfitted.NO_SAMPLES
    if len(points) < MIN_SAMPLES:
        return None, Unfitted.TOO_FEW
    sxy = sum(x * y for x, y in points)
    if sxy <= 0:
        return None, Unfitted.UNPHYSICAL
    return sum(x * x for x, _ in points) / sxy * 1e6, Unfitted.FITTED


def fit_rates(index: ModuleIndex, cost: CostModel, profile: MeasuredProfile,
              transfers: Sequence[HostTransfer] = ()) -> tuple[Rate, ...]:
    """What ``profile`` (measured on ``index``'s module) shows the chip achieved per run: the
    host link per direction, then each class of :data:`RATE_CLASSES`. ``cost`` only classifies
    and counts (FLOPs, bytes): no figure of its target enters a rate."""
    owner = owner_map(index)
    moves = {t.instruction.name: t for t in transfers}
    link: dict[Direction, list[tuple[float, float]]] = {d: [] for d in Direction}
    work: dict[OpClassName, list[tuple[float, float]]] = {c: [] for c, _ in RATE_CLASSES}
    runs: dict[str, list[float]] = {}
    bounded: dict[str, int] = {}  # runs left out: timed to their done, an upper bound
    for run in profile.async_intervals:  # only a run the compute waited for is timed by its own work
        runs.setdefault(run.name, [])
        if run.waited:
            runs[run.name].append(run.us)
        else:
            bounded[run.name] = bounded.get(run.name, 0) + 1
    left_out: dict[object, int] = {}
    for op, st in profile.ops.items():
        ins = owner.get(op)
        if ins is None or is_free(ins) or is_done(ins) or ins.opcode in CONTROL_FLOW or st.calls <= 0:
            continue
        each = runs.get(op, [st.per_call_us])
        if ins.name in moves:
            t = moves[ins.name]
            link[t.direction] += [(float(t.bytes), us) for us in each]
            left_out[t.direction] = left_out.get(t.direction, 0) + bounded.get(op, 0)
            continue
        what = performer(index, ins)
        op_class = classify(what, cost)
        left_out[op_class] = left_out.get(op_class, 0) + bounded.get(op, 0)
        if op_class is OpClassName.GEMM:
            amount = cost.op_cost(what).flops
        elif op_class is OpClassName.D2D_COPY:
            amount = float(value_shape(what).byte_size)  # bytes copied (a TPU's side may be VMEM, not HBM)
        else:
            amount = float(cost.op_cost(what).hbm_bytes)
        if op_class in work:
            work[op_class] += [(amount, us) for us in each]
    out: list[Rate] = []
    for direction in (Direction.TO_HOST, Direction.TO_DEVICE):
        value, why = _through_origin(link[direction])
        why = Unfitted.HIDDEN if why is Unfitted.NO_SAMPLES and left_out.get(direction) else why
        out.append(Rate("host link", direction, "B/s", value, len(link[direction]), why))
    for op_class, unit in RATE_CLASSES:
        value, why = _through_origin(work[op_class])
        why = Unfitted.HIDDEN if why is Unfitted.NO_SAMPLES and left_out.get(op_class) else why
        out.append(Rate(str(op_class), None, unit, value, len(work[op_class]), why))
    return tuple(out)


def _why(samples: int, varies: bool) -> Unfitted:
    if samples == 0:
        return Unfitted.NO_SAMPLES
    if samples < MIN_SAMPLES or not varies:
        return Unfitted.TOO_FEW
    return Unfitted.FITTED
