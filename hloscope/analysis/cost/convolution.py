"""What a ``convolution`` computes, from its ``dim_labels`` and ``window``: a dot or a real convolution.

TPU XLA writes every matmul as a ``convolution`` (``dim_labels=bf_io->bf``, ``fb_io->bf``,
``bf_oi->bf``, ``0bf_io0->0bf`` with ``window={size=1}``). ``dim_labels`` is
``lhs_rhs->out``: ``b`` the batch dimension, ``f`` the feature dimension, ``i``/``o`` the
kernel's input/output feature dimensions, a digit ``d`` the ``d``-th spatial dimension; the
``window`` lists, per spatial dimension in that order, ``size``, ``stride``, ``pad``
(``low_high``), ``lhs_dilate`` and ``rhs_dilate``.

One output element ``(b, spatial..., o)`` sums ``i`` input features times the kernel
positions that land on a real input element (not on padding nor between dilated elements):

``flops = 2 * (output elements / output spatial size) * i * prod(valid pairs per spatial dimension)``

(a valid pair: an output position and a kernel position that read a real input element)

as XLA's own ``HloCostAnalysis::GetConvolutionFlops`` counts them. ``i`` is the kernel's
input-feature dimension, already per group (``feature_group_count``); with
``batch_group_count`` the output batch is the grouped one, so the formula holds unchanged.
A window of size 1 everywhere (or none) is a dot: ``2 * output elements * i``. Without
``dim_labels`` (none of XLA's printed modules lack it) :func:`convolution_flops` returns None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from math import gcd

__all__ = ["Convolution", "convolution_flops", "read_convolution", "window_sizes"]

_DIM_LABELS = re.compile(r"(?:^|, )dim_labels=([0-9a-z]+)_([0-9a-z]+)->([0-9a-z]+)")
_WINDOW = re.compile(r"(?:^|, )window=\{([^}]*)\}")


@dataclass(frozen=True)
class Convolution:
    """A convolution's labelled dimensions.

    lhs, rhs, out: the ``dim_labels`` strings, one character per dimension. window: per
    spatial dimension ``(size, stride, pad_low, pad_high, lhs_dilate, rhs_dilate)``.
    """

    lhs: str
    rhs: str
    out: str
    window: tuple[tuple[int, int, int, int, int, int], ...]

    @property
    def is_dot(self) -> bool:
        """Its window is of size 1 everywhere: a matmul written as a convolution."""
        return all(w[0] == 1 for w in self.window)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split("x") if x.lstrip("-").isdigit()]


def window_sizes(attr_text: str) -> tuple[int, ...]:
    """The ``size`` of each spatial dimension of a ``window``; ``()`` without one (a window of 1)."""
    found = _WINDOW.search(attr_text)
    for item in (found.group(1).split() if found else ()):
        key, _, value = item.partition("=")
        if key == "size":
            return tuple(_ints(value))
    return ()


def read_convolution(attr_text: str) -> Convolution | None:
    """The dimensions of a ``convolution`` from its attributes; None without ``dim_labels``."""
    labels = _DIM_LABELS.search(attr_text)
    if labels is None:
        return None
    lhs, rhs, out = labels.groups()
    spatial = sum(1 for c in lhs if c.isdigit())
    fields: dict[str, list[int]] = {}
    pads: list[tuple[int, int]] = []
    found = _WINDOW.search(attr_text)
    for item in (found.group(1).split() if found else ()):
        key, _, value = item.partition("=")
        if key == "pad":
            for p in value.split("x"):
                parts = [int(x) for x in re.findall(r"-?\d+", p)]
                pads.append((parts[0], parts[1]) if len(parts) > 1 else (0, 0))
        else:
            fields[key] = _ints(value)

    def at(key: str, d: int, default: int) -> int:
        values = fields.get(key, [])
        return values[d] if d < len(values) else default

    window = tuple((at("size", d, 1), at("stride", d, 1), *(pads[d] if d < len(pads) else (0, 0)),
                    at("lhs_dilate", d, 1), at("rhs_dilate", d, 1)) for d in range(spatial))
    return Convolution(lhs, rhs, out, window)


def _valid_pairs(out_size: int, in_size: int, size: int, stride: int, pad_low: int, lhs_dilate: int,
                 rhs_dilate: int) -> int:
    """(output position, kernel position) pairs of one spatial dimension that read a real input element."""
    if in_size <= 0 or out_size <= 0:
        return 0
    stride, lhs_dilate = max(1, stride), max(1, lhs_dilate)
    span = (in_size - 1) * lhs_dilate + 1  # the dilated input, before padding
    period = lhs_dilate // gcd(stride, lhs_dilate)
    total = 0
    for k in range(size):
        offset = k * rhs_dilate - pad_low  # input index of output position 0
        lo = max(0, -(offset // stride))  # first o with o*stride + offset >= 0
        hi = min(out_size - 1, (span - 1 - offset) // stride)  # last o with o*stride + offset < span
        if hi < lo:
            continue
        if lhs_dilate == 1:
            total += hi - lo + 1
            continue
        # o*stride + offset must be a multiple of lhs_dilate: one residue of o modulo ``period``, if any
        g = gcd(stride, lhs_dilate)
        if offset % g:
            continue
        first = (-offset // g) * pow(stride // g, -1, period) % period
        start = lo + (first - lo) % period
        if start <= hi:
            total += (hi - start) // period + 1
    return total


def convolution_flops(conv: Convolution, lhs_dims: tuple[int, ...], rhs_dims: tuple[int, ...],
                      out_dims: tuple[int, ...]) -> float | None:
    """FLOPs of one execution (module docstring); None when the labels do not fit the shapes."""
    if not (len(conv.lhs) == len(lhs_dims) and len(conv.rhs) == len(rhs_dims) and len(conv.out) == len(out_dims)):
        return None
    if "i" not in conv.rhs:
        return None
    products = float(rhs_dims[conv.rhs.index("i")])
    for c, d in zip(conv.out, out_dims, strict=True):
        if not c.isdigit():
            products *= d  # batch and feature: one sum each
    for s, (size, stride, pad_low, _, lhs_dilate, rhs_dilate) in enumerate(conv.window):
        label = str(s)
        if label not in conv.lhs or label not in conv.out:
            return None
        out_size = out_dims[conv.out.index(label)]
        in_size = lhs_dims[conv.lhs.index(label)]
        if size == 1 and stride == 1 and pad_low == 0 and lhs_dilate == 1:
            products *= out_size if out_size <= in_size else in_size  # a dot along it: every position reads one
        else:
            products *= _valid_pairs(out_size, in_size, size, stride, pad_low, lhs_dilate, rhs_dilate)
    return 2.0 * products
