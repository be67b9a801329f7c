"""Read ``jax.profiler``'s XSpace (``*.xplane.pb``) on the project's protobuf wire reader: no jaxlib.

Contract: :func:`parse_xspace` takes the bytes of an ``XSpace`` and returns its planes, lines and
events with every name and stat resolved through the plane's metadata maps. Field numbers are
those of ``tsl/profiler/protobuf/xplane.proto`` (read there, not vendored):

- ``XSpace``: planes 1.
- ``XPlane``: id 1, name 2, lines 3, event_metadata 4 and stat_metadata 5 (maps: key 1, value 2),
  stats 6.
- ``XLine``: id 1, name 2, timestamp_ns 3, events 4, display_name 11.
- ``XEvent``: metadata_id 1, offset_ps 2, duration_ps 3, stats 4 (num_occurrences 5, of
  aggregated events, has no time and is skipped).
- ``XStat``: metadata_id 1, then one of double 2, uint64 3, int64 4, str 5, bytes 6, ref 7 (the
  name of another stat metadata: how repeated strings are stored).
- ``XEventMetadata``: id 1, name 2, display_name 4, stats 5. ``XStatMetadata``: id 1, name 2.

An event's own stats and its metadata's are kept apart (``stats``, ``metadata_stats``): the
readers look for ``hlo_op``/``hlo_module`` on the event itself, as ``jax.profiler.ProfileData``
does. Malformed bytes raise :class:`~hloscope.hlo.protowire.WireError`
(the format readers turn it into one line naming the file).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hloscope.hlo.protowire import FIXED32, FIXED64, LEN, as_bytes, as_double, as_text, fields, signed64

__all__ = ["StatValue", "XEvent", "XLine", "XPlane", "XSpace", "parse_xspace"]

#: A stat's value: a number, a string (``str_value`` or a resolved ``ref_value``) or bytes.
StatValue = float | int | str | bytes


@dataclass(frozen=True, slots=True)
class XEvent:
    """One timed event. name / display_name: its metadata's ("" when none). start_ps: its start,
    from the line's timestamp (picoseconds since the epoch of the profile's clock); duration_ps.
    stats: its own, by stat name; metadata_stats: its metadata's (shared by every event of that
    name)."""

    name: str
    display_name: str
    start_ps: int
    duration_ps: int
    stats: Mapping[str, StatValue]
    metadata_stats: Mapping[str, StatValue]


@dataclass(frozen=True, slots=True)
class XLine:
    """One line (a thread, a stream, an XLA op line) and its events, in file order."""

    id: int
    name: str
    display_name: str
    events: tuple[XEvent, ...]


@dataclass(frozen=True, slots=True)
class XPlane:
    """One plane (``/device:TPU:0``, ``/device:GPU:0``, ``/host:CPU`` ...) and its own stats."""

    id: int
    name: str
    lines: tuple[XLine, ...]
    stats: Mapping[str, StatValue]


@dataclass(frozen=True, slots=True)
class XSpace:
    planes: tuple[XPlane, ...]


@dataclass(frozen=True, slots=True)
class _EventMeta:
    name: str
    display_name: str
    stats: Mapping[str, StatValue]


#: The last bytes parsed and their XSpace: a profile's readers (its executions, its host lines) are
#: each given the same file's bytes, which are parsed once (the XSpace is frozen, so it is shared).
_last: tuple[bytes | memoryview, XSpace] | None = None


def parse_xspace(data: bytes | memoryview) -> XSpace:
    """The planes of one serialized XSpace (the same ``data`` object again: the same XSpace, not parsed again)."""
    global _last
    if _last is not None and _last[0] is data:
        return _last[1]
    space = XSpace(tuple(_plane(as_bytes(v)) for n, _w, v in fields(data) if n == 1))
    _last = (data, space)
    return space


def _map_entry(buf: memoryview) -> tuple[int, memoryview | None]:
    key, value = 0, None
    for n, _w, v in fields(buf):
        if n == 1 and isinstance(v, int):
            key = signed64(v)
        elif n == 2:
            value = as_bytes(v)
    return key, value


def _plane(buf: memoryview) -> XPlane:
    plane_id, name = 0, ""
    lines: list[memoryview] = []
    event_raw: list[memoryview] = []
    stat_names: dict[int, str] = {}
    stats_raw: list[memoryview] = []
    for n, _w, v in fields(buf):
        if n == 1 and isinstance(v, int):
            plane_id = signed64(v)
        elif n == 2:
            name = as_text(v)
        elif n == 3:
            lines.append(as_bytes(v))
        elif n == 4:
            event_raw.append(as_bytes(v))
        elif n == 5:
            key, value = _map_entry(as_bytes(v))
            if value is not None:
                stat_names[key] = _stat_meta_name(value)
        elif n == 6:
            stats_raw.append(as_bytes(v))
    # Metadata first: the maps may come after the lines in the file.
    events: dict[int, _EventMeta] = {}
    for raw in event_raw:
        key, value = _map_entry(raw)
        if value is not None:
            events[key] = _event_meta(value, stat_names)
    return XPlane(plane_id, name, tuple(_line(b, events, stat_names) for b in lines),
                  _stats(stats_raw, stat_names))


def _stat_meta_name(buf: memoryview) -> str:
    for n, _w, v in fields(buf):
        if n == 2:
            return as_text(v)
    return ""


def _event_meta(buf: memoryview, stat_names: Mapping[int, str]) -> _EventMeta:
    name, display = "", ""
    stats: list[memoryview] = []
    for n, _w, v in fields(buf):
        if n == 2:
            name = as_text(v)
        elif n == 4:
            display = as_text(v)
        elif n == 5:
            stats.append(as_bytes(v))
    return _EventMeta(name, display, _stats(stats, stat_names))


def _stats(raws: list[memoryview], stat_names: Mapping[int, str]) -> dict[str, StatValue]:
    out: dict[str, StatValue] = {}
    for raw in raws:
        meta = 0
        value: StatValue | None = None
        for n, w, v in fields(raw):
            if n == 1 and isinstance(v, int):
                meta = signed64(v)
            elif n == 2 and w in (FIXED64, FIXED32):
                value = as_double(w, v)
            elif n == 3 and isinstance(v, int):
                value = v
            elif n == 4 and isinstance(v, int):
                value = signed64(v)
            elif n == 5 and w == LEN:
                value = as_text(v)
            elif n == 6 and w == LEN:
                value = bytes(as_bytes(v))
            elif n == 7 and isinstance(v, int):
                value = stat_names.get(v, "")
        if value is not None:
            out[stat_names.get(meta, str(meta))] = value
    return out


def _line(buf: memoryview, metas: Mapping[int, _EventMeta], stat_names: Mapping[int, str]) -> XLine:
    line_id, name, display, timestamp_ns = 0, "", "", 0
    raws: list[memoryview] = []
    for n, _w, v in fields(buf):
        if n == 1 and isinstance(v, int):
            line_id = signed64(v)
        elif n == 2:
            name = as_text(v)
        elif n == 3 and isinstance(v, int):
            timestamp_ns = signed64(v)
        elif n == 4:
            raws.append(as_bytes(v))
        elif n == 11:
            display = as_text(v)
    base_ps = timestamp_ns * 1000
    empty = _EventMeta("", "", {})
    events: list[XEvent] = []
    for raw in raws:
        meta_id, offset_ps, duration_ps, timed = 0, 0, 0, True
        stats: list[memoryview] = []
        for n, _w, v in fields(raw):
            if n == 1 and isinstance(v, int):
                meta_id = signed64(v)
            elif n == 2 and isinstance(v, int):
                offset_ps = signed64(v)
            elif n == 3 and isinstance(v, int):
                duration_ps = signed64(v)
            elif n == 4:
                stats.append(as_bytes(v))
            elif n == 5:
                timed = False
        if not timed:
            continue
        meta = metas.get(meta_id, empty)
        events.append(XEvent(meta.name, meta.display_name, base_ps + offset_ps, duration_ps,
                             _stats(stats, stat_names), meta.stats))
    return XLine(line_id, name, display, tuple(events))
