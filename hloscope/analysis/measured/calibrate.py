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
from hloscope.analysis.structure.opclass import collective_kind, is_done, is_free, value_shape
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.targets import COLLECTIVE_KINDS, Target
from hloscope.vocab import Direction

__all__ = ["MIN_SAMPLES", "Calibration", "Figure", "Unfitted", "fit_target"]

#: Fewest measured ops a figure is fitted from.
MIN_SAMPLES = 3


class Unfitted(StrEnum):
    """Why a figure kept its datasheet value."""

    FITTED = ""
    NO_SAMPLES = "no-samples"  # the profile times no op this figure prices
    TOO_FEW = "too-few"  # fewer than MIN_SAMPLES ops, or all with one predictor value
    UNPHYSICAL = "unphysical"  # the fit gave a non-positive bandwidth or peak


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
class Calibration:
    """A fitted target and its figures, in a fixed order."""

    base: Target
    target: Target
    figures: tuple[Figure, ...]


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
        if ins is None or is_free(ins) or is_done(ins) or st.calls <= 0:
            continue
        us = st.median_us / st.calls
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
        if fit is not None and fit[1] > 0:
            # Achieved, never above the link's peak: the figures are per link, shared by host_link_gpus.
            after_bw = min(1e6 / fit[1] * base.host_link_sharers, float(getattr(base, peak_key)))
            changes[key] = after_bw
            latencies.append(max(0.0, fit[0]))
        elif fit is not None:
            why = Unfitted.UNPHYSICAL
        figures.append(Figure(key, "B/s", before_bw, after_bw, len(pts), why))
    lat = sum(latencies) / len(latencies) if latencies else base.host_dma_latency_us
    if latencies:
        changes["host_dma_latency_us"] = lat
    figures.append(Figure("host_dma_latency_us", "us", base.host_dma_latency_us, lat,
                          sum(1 for _ in host), Unfitted.FITTED if latencies else Unfitted.NO_SAMPLES))
    target = replace(base, name=name, description=f"{base.description}, calibrated on {profile.source}",
                     collective_figures=tuple(measured), calibrated_on=profile.source, **changes)
    return Calibration(base, target, tuple(figures))


def _why(samples: int, varies: bool) -> Unfitted:
    if samples == 0:
        return Unfitted.NO_SAMPLES
    if samples < MIN_SAMPLES or not varies:
        return Unfitted.TOO_FEW
    return Unfitted.FITTED
