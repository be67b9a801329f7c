"""Measured per-op times in place of the model: a profile parsed into ``{instruction name: µs}``.

``parse_profile_file(file)`` parses the bytes ``hloscope.hlo.profile_files.read_profile_file``
read (this module opens no file), in one of three forms chosen by content:

- XLA's profile-guided latency estimator (PGLE) profile, the text form of a
  ``ProfiledInstructionsProto`` (``xla/service/latency_hiding_scheduler`` reads the
  same file through ``--xla_gpu_pgle_profile_file_or_directory_path``)::

      costs { name: "fusion.12" cost_us: 41.5 }
      costs { name: "all-gather-start.1" cost_us: 67.0 }
      latencies { source: "all-gather-start.1" target: "all-gather-done.1" latency_us: 70.2 }

  ``costs`` give an instruction's time; ``latencies`` the time from an async start
  (``source``) to its done, used for that start (a collective's time).
- JSON: ``{"fusion.12": 41.5, ...}``, or ``{"costs": [{"name": ..., "cost_us": ...}]}``
  (the proto's JSON form).
- CSV: ``name,us`` per line (a header line whose second field is not a number is skipped;
  ``#`` starts a comment).

Names are HLO instruction names of the optimized module the profile was taken on: a
profile from another compile matches only the names it shares (``match_profile`` says
how many). Bad input is one :class:`~hloscope.errors.HloscopeError` naming the file and
line (exit 2), never a traceback. The cost model takes the result as ``measured``
(``CostModel(..., measured=...)``): a compute op's figure, a collective's time.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.model import Module
from hloscope.hlo.profile_files import ProfileFile
from hloscope.hlo.protowire import FIXED64, LEN, WireError, as_bytes, as_double, as_text, fields

__all__ = ["ProfileMatch", "match_profile", "parse_profile", "parse_profile_bytes", "parse_profile_file",
           "read_pgle_binary"]

_ENTRY = re.compile(r"\b(costs|latencies)\s*\{([^{}]*)\}", re.S)
_FIELD = re.compile(r'(\w+)\s*:\s*("(?:[^"\\]|\\.)*"|[-+0-9.eE]+|\w+)')


def _bad(source: str, what: str) -> HloscopeError:
    return HloscopeError(f"{source}: not a usable profile: {what}", EXIT_BAD_INPUT)


def _us(source: str, name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _bad(source, f"time of '{name}' must be a number of µs, not {value!r}")
    try:
        us = float(value)
    except ValueError:
        raise _bad(source, f"time of '{name}' must be a number of µs, not {value!r}") from None
    if not math.isfinite(us) or us < 0:
        raise _bad(source, f"time of '{name}' must be a non-negative number of µs, not {value!r}")
    return us


_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|(.))", re.S)
_SIMPLE = {"n": b"\n", "t": b"\t", "r": b"\r", "a": b"\a", "b": b"\b", "f": b"\f", "v": b"\v"}


def _unquote(quoted: str) -> str:
    """A protobuf text-format string literal's value: C escapes, octal and hex bytes, UTF-8."""
    body = quoted[1:-1]
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(body):
        out += body[pos:m.start()].encode("utf-8")
        if m.group(1):
            out.append(int(m.group(1), 8) & 0xFF)
        elif m.group(2):
            out.append(int(m.group(2), 16))
        else:
            out += _SIMPLE.get(m.group(3), m.group(3).encode("utf-8"))
        pos = m.end()
    out += body[pos:].encode("utf-8")
    return out.decode("utf-8", errors="replace")


def _from_proto_text(text: str, source: str) -> dict[str, float]:
    out: dict[str, float] = {}
    latencies: dict[str, float] = {}
    for m in _ENTRY.finditer(text):
        fields = {k: v for k, v in _FIELD.findall(m.group(2))}
        line = text.count("\n", 0, m.start()) + 1
        if m.group(1) == "costs":
            name, value = fields.get("name"), fields.get("cost_us")
        else:
            name, value = fields.get("source"), fields.get("latency_us")
        if name is None or value is None or not name.startswith('"'):
            raise _bad(f"{source}:{line}", f"a {m.group(1)} entry needs a quoted name and a time in µs")
        key = _unquote(name)
        us = _us(f"{source}:{line}", key, value)
        (out if m.group(1) == "costs" else latencies)[key] = us
    out.update(latencies)  # a start's start-to-done latency is its time as an async op
    return out


def _from_json(data: object, source: str) -> dict[str, float]:
    if isinstance(data, dict) and isinstance(data.get("costs"), list):
        entries: Iterable[object] = data["costs"]
        out: dict[str, float] = {}
        for e in entries:
            if not isinstance(e, dict) or not isinstance(e.get("name"), str):
                raise _bad(source, "each of 'costs' must be {\"name\": ..., \"cost_us\": ...}")
            out[e["name"]] = _us(source, e["name"], e.get("cost_us"))
        return out
    if isinstance(data, dict):
        return {str(k): _us(source, str(k), v) for k, v in data.items()}
    raise _bad(source, "JSON must map instruction names to µs")


def _from_csv(text: str, source: str) -> dict[str, float]:
    out: dict[str, float] = {}
    rows = csv.reader(io.StringIO(text))
    for i, row in enumerate(rows, start=1):
        cells = [c.strip() for c in row]
        if not cells or not cells[0] or cells[0].startswith("#"):
            continue
        if len(cells) < 2:
            raise _bad(f"{source}:{i}", "a CSV line is 'name,us'")
        if i == 1 and not re.fullmatch(r"[-+0-9.eE]+", cells[1]):
            continue  # a header
        out[cells[0]] = _us(f"{source}:{i}", cells[0], cells[1])
    return out


def parse_profile(text: str, source: str = "<profile>") -> dict[str, float]:
    """``{instruction name: µs}`` from a profile's text (PGLE proto text, JSON or CSV)."""
    stripped = text.lstrip()
    if not stripped:
        raise _bad(source, "the file is empty")
    if stripped[0] in "{[":
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if data is not None:
            got = _from_json(data, source)
            if not got:
                raise _bad(source, "no instruction times in it")
            return got
    if _ENTRY.search(text):
        return _from_proto_text(text, source)
    got = _from_csv(text, source)
    if not got:
        raise _bad(source, "no 'costs { name: ... cost_us: ... }' entries, JSON object or 'name,us' lines")
    return got


def parse_profile_file(file: ProfileFile) -> dict[str, float]:
    """The profile in a file read by ``read_profile_file`` (text or binary PGLE, JSON, CSV)."""
    return parse_profile_bytes(file.data, file.source)


def parse_profile_bytes(data: bytes, source: str) -> dict[str, float]:
    """A profile's bytes: UTF-8 text (``parse_profile``) or a binary ``ProfiledInstructionsProto``
    (what JAX's manual PGLE recipe writes as ``profile.pb``)."""
    if not data.strip():
        raise _bad(source, "the file is empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return read_pgle_binary(data, source)
    if "\0" in text or (data[:1] == b"\n" and not data[:2].isspace()):
        try:
            return read_pgle_binary(data, source)
        except HloscopeError:
            pass
    return parse_profile(text, source)


def read_pgle_binary(data: bytes, source: str) -> dict[str, float]:
    """A binary ``ProfiledInstructionsProto``: costs (1: {1 name, 2 cost_us}) and latencies
    (2: {1 source, 2 target, 3 latency_us}); a start's latency is its time as an async op."""
    out: dict[str, float] = {}
    latencies: dict[str, float] = {}
    try:
        for n, w, v in fields(data):
            if n not in (1, 2) or w != LEN:
                raise WireError(f"field {n} is not a ProfiledInstructionsProto field", 0)
            name, us = "", None
            for fn, fw, fv in fields(as_bytes(v)):
                if fn == 1:
                    name = as_text(fv)
                elif fw == FIXED64 and ((n == 1 and fn == 2) or (n == 2 and fn == 3)):
                    us = as_double(fw, fv)
            if not name or us is None or not us >= 0:
                raise WireError("an entry without a name or a non-negative time", 0)
            (out if n == 1 else latencies)[name] = us
    except WireError as e:
        raise _bad(source, f"binary ProfiledInstructionsProto unreadable at byte {e.offset}: {e}") from None
    out.update(latencies)
    if not out:
        raise _bad(source, "no instruction times in it")
    return out


@dataclass(frozen=True)
class ProfileMatch:
    """How a profile met a module: ``matched`` of its ``entries`` name an instruction;
    ``unknown``: up to ten that name none (a profile of another compile)."""

    entries: int
    matched: int
    unknown: tuple[str, ...]


def match_profile(profile: Mapping[str, float], module: Module) -> ProfileMatch:
    """Which of a profile's names the module has."""
    names = {ins.name for comp in module.computations.values() for ins in comp.instructions}
    unknown = [n for n in profile if n not in names]
    return ProfileMatch(len(profile), len(profile) - len(unknown), tuple(unknown[:10]))
