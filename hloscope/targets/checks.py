"""The one check of a target's fields, for a user's target file and for the built-in data files alike.

Each field's :class:`~hloscope.targets.model.Kind` (its metadata) says what it takes; a bad value is
one :class:`~hloscope.errors.HloscopeError` naming the file, the key and what it must be. Values come
back converted (an integer figure as an ``int``, a bandwidth as a ``float``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import MISSING, fields
from typing import Any, TypeGuard

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.targets.model import Kind, Target

#: What ``hloscope calibrate`` appends to a fitted target's description, before what it was fitted on.
CALIBRATED_ON = ", calibrated on "

#: The kinds a measured collective figure may be given for.
COLLECTIVE_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")

#: A link's peak figure -> its achieved figure (which may not exceed it).
ACHIEVED_OF = {"host_link_to_host": "host_link_achieved_to_host",
               "host_link_to_device": "host_link_achieved_to_device"}


def _number(v: object) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _text(v: object) -> object:
    return v if isinstance(v, str) and v else None


def _note(v: object) -> object:
    return v if isinstance(v, str) else None


def _positive(v: object) -> float | None:
    return float(v) if _number(v) and 0 < v < math.inf else None


def _latency(v: object) -> float | None:
    return float(v) if _number(v) and 0 <= v < math.inf else None


def _bytes(v: object) -> int | None:
    return int(v) if _number(v) and v >= 0 and float(v).is_integer() else None


def _share(v: object) -> float | None:
    return float(v) if _number(v) and 0 < v <= 1 else None


def _error(v: object) -> float | None:
    return float(v) if _number(v) and -1 < v < math.inf else None


def _rate(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < float("inf"):
        return None
    return float(v)


def _run_spread(where: str, value: object) -> tuple[tuple[str, float], ...]:
    if isinstance(value, tuple):
        return value
    if not isinstance(value, dict):
        raise HloscopeError(f"{where}: target field 'run_spread' must be a table of figure = fraction", EXIT_BAD_INPUT)
    out: list[tuple[str, float]] = []
    for figure, v in value.items():
        got = _rate(v)
        if got is None:
            raise HloscopeError(f"{where}: run_spread.{figure} must be a non-negative fraction, not {v!r}",
                                EXIT_BAD_INPUT)
        out.append((str(figure), got))
    return tuple(out)


def _capability(v: object) -> tuple[int, int] | None:
    if isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                                             for x in v):
        return v[0], v[1]
    return None


#: Kind -> (what it must be, in the error; its check: the converted value, or None when bad).
_RULES: dict[Kind, tuple[str, Callable[[object], object]]] = {
    Kind.TEXT: ("a non-empty string", _text),
    Kind.NOTE: ("a string", _note),
    Kind.POSITIVE: ("a positive number", _positive),
    Kind.OPTIONAL: ("a positive number", _positive),
    Kind.COUNT: ("a positive number", _positive),
    Kind.BYTES: ("a non-negative integer (bytes; 0: unknown)", _bytes),
    Kind.LATENCY: ("a non-negative number (µs)", _latency),
    Kind.SHARE: ("a share above 0 and at most 1", _share),
    Kind.ERROR: ("a number above -1 (simulated over measured step, minus 1)", _error),
    Kind.CAPABILITY: ("two non-negative integers, like [9, 0]", _capability),
    Kind.RATE: ("a non-negative number (bytes/s; 0: not priced)", _rate),
}


def check_fields(where: str, data: dict[str, Any], cls: type[Target]) -> dict[str, Any]:
    """Every field of a ``cls`` target in ``data`` checked and converted, the fields left out at their
    defaults; a bad value is an error naming ``where`` (the file) and its key (exit 2)."""

    def bad(key: str, want: str) -> HloscopeError:
        return HloscopeError(f"{where}: target field '{key}' must be {want}, not {data[key]!r}", EXIT_BAD_INPUT)

    for f in fields(cls):  # a field with a default may be left out
        if f.default is not MISSING and f.name not in data:
            data[f.name] = f.default
    for f in fields(cls):
        kind: Kind = f.metadata["kind"]
        v = data[f.name]
        if kind is Kind.COLLECTIVES:
            data[f.name] = _collective_figures(where, v)
            continue
        if kind is Kind.SPREAD:
            data[f.name] = _run_spread(where, v)
            continue
        if kind is Kind.OPTIONAL and v is None:
            continue
        want, rule = _RULES[kind]
        got = rule(v)
        if got is None:
            raise bad(f.name, want)
        if kind is Kind.COUNT:
            if not float(v).is_integer():
                raise bad(f.name, "a positive integer")
            got = int(v)
        data[f.name] = got
    if not data.get("calibrated_on") and CALIBRATED_ON in data["description"]:
        # A file ``hloscope calibrate`` wrote before the field said it only in its description.
        data["calibrated_on"] = data["description"].rsplit(CALIBRATED_ON, 1)[1]
    for peak_key, achieved_key in ACHIEVED_OF.items():
        achieved = data.get(achieved_key)
        if achieved is not None and achieved > data[peak_key]:
            raise bad(achieved_key, f"at most {peak_key} ({data[peak_key]:g})")
    return data


def _collective_figures(where: str, value: object) -> tuple[tuple[str, float, float], ...]:
    if isinstance(value, tuple):
        return value
    if not isinstance(value, dict):
        raise HloscopeError(f"{where}: target field 'collective_figures' must be a table of kinds", EXIT_BAD_INPUT)
    out: list[tuple[str, float, float]] = []
    for kind, fig in value.items():
        if kind not in COLLECTIVE_KINDS:
            raise HloscopeError(f"{where}: collective_figures.{kind}: not a collective kind ("
                                f"{', '.join(COLLECTIVE_KINDS)})", EXIT_BAD_INPUT)
        bw = fig.get("bandwidth") if isinstance(fig, dict) else None
        lat = fig.get("latency_us") if isinstance(fig, dict) else None
        ok_bw, ok_lat = _positive(bw), _latency(lat)
        if ok_bw is None or ok_lat is None:
            raise HloscopeError(f"{where}: collective_figures.{kind} needs bandwidth (bytes/s, > 0) and latency_us "
                                f"(>= 0), not {fig!r}", EXIT_BAD_INPUT)
        out.append((kind, ok_bw, ok_lat))
    return tuple(out)
