"""Fit a target's own figures to a measured profile: ``fit_target(index, target, profile)``.

The model's times are linear in the reciprocals of its figures, so each figure is fitted by
ordinary least squares on the measured ops its term prices, per execution of one op:

- kernel launch and achieved HBM bandwidth: on the kernels the model calls memory-bound
  (HBM time at least the math time), ``t = kernel_launch_us + bytes / hbm_bandwidth``: a line
  through (bytes, t), intercept and slope;
- achieved GEMM throughput: on the GEMMs (cuBLAS and Triton GEMM kernels, dots) the model calls
  compute-bound, ``t - kernel_launch_us = effective FLOPs / peak`` (effective: divided by the
  tile efficiency the model already applies, so the fit scales that curve): a line through
  the origin, ``peak = sum(x^2) / sum(x y)``;
- each collective kind: ``t = latency + ring traffic / bandwidth`` (traffic: what each GPU
  sends in a ring over its group), intercept and slope; written as ``collective_figures``;
- host link and DMA latency: the same line on the host transfers, per direction, when the
  profile times any.

A figure is fitted only from at least :data:`MIN_SAMPLES` ops whose predictor varies (else
the data cannot inform it) and only if the fit is physical (positive bandwidth and peak,
latency clamped at 0); otherwise it keeps the datasheet value and its :class:`Figure` says
why (:class:`Unfitted`). The result is data: the words are in ``hloscope.render``.

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
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from hloscope.analysis.cost.collectives import first_replica_group, ring_traffic
from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.measured.compare import MeasuredProfile, OpClassName, classify, owner_map, performer
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.opclass import CONTROL_FLOW, collective_kind, is_done, is_free, value_shape
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.targets import CALIBRATED_ON, COLLECTIVE_KINDS, Target
from hloscope.vocab import Direction

__all__ = ["MIN_SAMPLES", "RATE_CLASSES", "Calibration", "Figure", "Rate", "Unfitted", "fit_rates", "fit_target"]

#: Fewest measured ops a figure is fitted from.
MIN_SAMPLES = 3


class Unfitted(StrEnum):
    """Why a figure kept its datasheet value."""

    FITTED = ""
    NO_SAMPLES = "no-samples"  # the profile times no op this figure prices
    TOO_FEW = "too-few"  # fewer than MIN_SAMPLES ops, or all with one predictor value
    UNPHYSICAL = "unphysical"  # the fit gave a non-positive bandwidth or peak
    HIDDEN = "hidden"  # every run finished before its done was reached: timed to the done, an upper bound


@dataclass(frozen=True)
class Figure:
    """One target figure: its name (a Target field, or ``collective_figures.KIND.bandwidth``),
    unit, datasheet value and fitted value (``after`` = ``before`` when not fitted), how many
    measured ops it was fitted on, and why not (``Unfitted.FITTED`` when it was)."""

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


@dataclass(frozen=True)
class Calibration:
    """A fitted target and its figures, in a fixed order; rates: what the chip achieved per run
    (:func:`fit_rates`)."""

    base: Target
    target: Target
    figures: tuple[Figure, ...]
    rates: tuple[Rate, ...] = ()


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
    target called ``name``. ``transfers``: the module's host transfers (their bytes and direction)."""
    cost = CostModel(index, base)
    owner = owner_map(index)
    mem: list[tuple[float, float]] = []  # (bytes, µs) of memory-bound kernels
    gemm: list[tuple[float, float]] = []  # (effective FLOPs, µs) of compute-bound GEMMs
    coll: dict[str, list[tuple[float, float]]] = {k: [] for k in COLLECTIVE_KINDS}
    host: dict[tuple[str, str], tuple[float, float]] = {}  # (direction, name) -> (bytes, µs)
    moves = {t.instruction.name: t for t in transfers}
    for op, st in profile.ops.items():
        ins = owner.get(op)
        if ins is None or is_free(ins) or is_done(ins) or ins.opcode in CONTROL_FLOW or st.calls <= 0:
            continue
        # An async op timed on a line of its own (a TPU's) is measured there, not by its start's issue.
        us = profile.asyncs.get(op, st).per_call_us
        if ins.name in moves:
            t = moves[ins.name]
            host[(str(t.direction), ins.name)] = (float(t.bytes), us)
            continue
        what = performer(index, ins)
        kind = collective_kind(what)
        if kind:
            group = first_replica_group(what.attr_text, index.module.num_partitions)
            nbytes = value_shape(what).byte_size * (len(group) if kind == "reduce-scatter" else 1)
            coll.setdefault(kind, []).append((ring_traffic(kind, nbytes, len(group)), us))
            continue
        op_class = classify(what, cost)
        if op_class not in (OpClassName.GEMM, OpClassName.KERNEL):
            continue
        _flops, effective, dtype, nbytes = cost.roofline_terms(what)
        compute = effective / base.peak_flops(dtype) * 1e6
        memory = nbytes / base.hbm_bandwidth * 1e6
        if op_class is OpClassName.GEMM and compute > memory:
            gemm.append((effective, us))
        elif op_class is OpClassName.KERNEL and memory >= compute and nbytes > 0:
            mem.append((float(nbytes), us))
    figures: list[Figure] = []
    changes: dict[str, Any] = {}
    launch, bw = base.kernel_launch_us, base.hbm_bandwidth
    fit = _line([b for b, _ in mem], [t for _, t in mem]) if len(mem) >= MIN_SAMPLES else None
    why = _why(len(mem), fit is not None)
    if fit is not None and fit[1] > 0:
        launch, bw = max(0.0, fit[0]), 1e6 / fit[1]
        changes.update(kernel_launch_us=launch, hbm_bandwidth=bw)
    elif fit is not None:
        why = Unfitted.UNPHYSICAL
    figures += [Figure("kernel_launch_us", "us", base.kernel_launch_us, launch, len(mem), why),
                Figure("hbm_bandwidth", "B/s", base.hbm_bandwidth, bw, len(mem), why)]
    peak = base.peak_bf16_flops
    why = _why(len(gemm), len({x for x, _ in gemm}) > 1)
    if why is Unfitted.FITTED:
        sxy = sum(x * max(0.0, t - launch) for x, t in gemm)
        if sxy > 0:
            peak = sum(x * x for x, _ in gemm) / sxy * 1e6
            changes["peak_bf16_flops"] = peak
        else:
            why = Unfitted.UNPHYSICAL
    figures.append(Figure("peak_bf16_flops", "FLOP/s", base.peak_bf16_flops, peak, len(gemm), why))
    measured: list[tuple[str, float, float]] = []
    for kind in COLLECTIVE_KINDS:
        pts = coll.get(kind, [])
        ring = base.collective_figure(kind)
        before_bw, before_lat = ring if ring else (base.interconnect_bandwidth, base.collective_launch_us)
        fit = _line([x for x, _ in pts], [t for _, t in pts]) if len(pts) >= MIN_SAMPLES else None
        why = _why(len(pts), fit is not None)
        after_bw, after_lat = before_bw, before_lat
        if fit is not None and fit[1] > 0:
            after_bw, after_lat = 1e6 / fit[1], max(0.0, fit[0])
            measured.append((kind, after_bw, after_lat))
        elif fit is not None:
            why = Unfitted.UNPHYSICAL
        figures += [Figure(f"collective_figures.{kind}.bandwidth", "B/s", before_bw, after_bw, len(pts), why),
                    Figure(f"collective_figures.{kind}.latency_us", "us", before_lat, after_lat, len(pts), why)]
    latencies: list[float] = []
    for direction, key, peak_key in ((Direction.TO_HOST, "host_link_achieved_to_host", "host_link_to_host"),
                                     (Direction.TO_DEVICE, "host_link_achieved_to_device", "host_link_to_device")):
        pts = [xfer for d, xfer in host.items() if d[0] == direction]
        before_bw = base.host_link_bandwidth(direction) * base.host_link_sharers
        fit = _line([b for b, _ in pts], [t for _, t in pts]) if len(pts) >= MIN_SAMPLES else None
        why = _why(len(pts), fit is not None)
        after_bw = before_bw
        through_origin = fit is None and bool(pts) and len({b for b, _ in pts}) == 1
        if through_origin:
            # All of one size (a TPU step's offloads usually are): no latency can be told apart, so the
            # rate is the least-squares line through the origin, every byte at the achieved bandwidth.
            sxy = sum(b * t for b, t in pts)
            fit = (0.0, sxy / sum(b * b for b, _ in pts)) if sxy > 0 else None
            why = Unfitted.FITTED if fit is not None else why
        if fit is not None and fit[1] > 0:
            # Achieved, never above the link's peak: the figures are per link, shared by host_link_gpus.
            after_bw = min(1e6 / fit[1] * base.host_link_sharers, float(getattr(base, peak_key)))
            changes[key] = after_bw
            if not through_origin:  # a line through the origin tells no latency
                latencies.append(max(0.0, fit[0]))
        elif fit is not None:
            why = Unfitted.UNPHYSICAL
        figures.append(Figure(key, "B/s", before_bw, after_bw, len(pts), why))
    lat = sum(latencies) / len(latencies) if latencies else base.host_dma_latency_us
    if latencies:
        changes["host_dma_latency_us"] = lat
    figures.append(Figure("host_dma_latency_us", "us", base.host_dma_latency_us, lat,
                          sum(1 for _ in host), Unfitted.FITTED if latencies else Unfitted.NO_SAMPLES))
    target = replace(base, name=name, description=f"{base.description}{CALIBRATED_ON}{profile.source}",
                     collective_figures=tuple(measured), calibrated_on=profile.source, **changes)
    return Calibration(base, target, tuple(figures), fit_rates(index, cost, profile, transfers))


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
