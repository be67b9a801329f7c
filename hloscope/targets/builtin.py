"""The built-in targets, read once from the package's data files (``data/<platform>.toml``).

A data file holds one platform's targets in a user target file's field names, every figure beside
its source: ``[sources]`` names each citation or measurement once, and a figure is written
``{ value = ..., source = "<id>" }`` (only the words, ``description``, ``host_link`` and
``host_map_source``, stand alone). ``[defaults]`` holds figures every target of the file shares
unless it gives its own; a target's ``aliases`` are the other names users type for it. The file is
loaded on first use and checked as a user's target file is (:func:`~hloscope.targets.checks.check_fields`),
and more: a figure without a known source, a source nothing cites. A bad data file is one line and
exit 70 (a bug in hloscope), never a traceback.
"""

from __future__ import annotations

import functools
import math
import tomllib
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from enum import Enum
from importlib import resources
from importlib.resources.abc import Traversable
from typing import TypeVar, overload

from hloscope.errors import EXIT_INTERNAL, HloscopeError
from hloscope.targets.checks import check_fields
from hloscope.targets.gpu import CopyEngineCount, GpuTarget, LinkMeasurement
from hloscope.targets.model import Platform, Target
from hloscope.targets.tpu import TpuTarget

#: The target class of each platform; each has its data file, ``data/<platform>.toml``.
TARGET_CLASSES: dict[Platform, type[Target]] = {Platform.GPU: GpuTarget, Platform.TPU: TpuTarget}

#: Fields that are words, not figures: they need no source.
_WORDS = frozenset({"description", "host_link", "host_map_source"})

T = TypeVar("T", bound=Target)
V = TypeVar("V")


@dataclass(frozen=True)
class Builtins:
    """Every built-in target by name, in the data files' order (GPUs first), and its aliases."""

    targets: dict[str, Target]
    aliases: dict[str, str]
    #: Each ``[measured]`` table's rows by its name (the class's :attr:`~Target.measured`).
    measured: dict[str, tuple[object, ...]]


#: The folder of the data files (package data: pyproject.toml's ``[tool.setuptools.package-data]``).
DATA: Traversable = resources.files("hloscope.targets") / "data"


@functools.cache
def builtins() -> Builtins:
    """The built-in targets, read from :data:`DATA` and checked on the first call."""
    return read_builtins(DATA)


def read_builtins(folder: Traversable) -> Builtins:
    """Every platform's targets from ``folder``'s data files; a bad or missing file is one line, exit 70."""
    targets: dict[str, Target] = {}
    aliases: dict[str, str] = {}
    measured: dict[str, tuple[object, ...]] = {}
    for platform, cls in TARGET_CLASSES.items():
        res = folder / f"{platform}.toml"
        try:
            text = res.read_text(encoding="utf-8")
        except OSError as e:
            raise _fail(str(res), f"cannot read hloscope's data file: {e.strerror or e}") from None
        family_targets, family_measured = _read_family(str(res), text, cls)
        for target, names in family_targets:
            if target.name in targets:
                raise _fail(str(res), f"target {target.name!r} is already a built-in target")
            targets[target.name] = target
            aliases.update((alias, target.name) for alias in names)
        measured.update(family_measured)
    return Builtins(targets, aliases, measured)


def family(cls: type[T]) -> tuple[T, ...]:
    """The built-in targets of one platform's class, in their data file's order."""
    return tuple(t for t in builtins().targets.values() if isinstance(t, cls))


Family = tuple[list[tuple[Target, list[str]]], dict[str, tuple[object, ...]]]


def _read_family(where: str, text: str, cls: type[Target]) -> Family:
    """The targets of one data file with their aliases, and its measurements; a bad file is one line, exit 70."""
    try:
        return _targets_of(where, text, cls)
    except HloscopeError as e:  # a user's file says exit 2; a built-in one is hloscope's own bug
        raise HloscopeError(str(e), EXIT_INTERNAL) from None


def _fail(where: str, message: str) -> HloscopeError:
    return HloscopeError(f"{where}: {message}", EXIT_INTERNAL)


def _targets_of(where: str, text: str, cls: type[Target]) -> Family:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise _fail(where, f"not a valid data file: {e}") from None
    extra = sorted(set(data) - {"sources", "defaults", "targets", "measured"})
    if extra or not isinstance(data.get("targets"), dict) or not isinstance(data.get("sources"), dict):
        raise _fail(where, "a data file holds [sources], [defaults], [targets.<name>] and [measured] tables"
                    + (f", not {', '.join(extra)}" if extra else ""))
    sources: dict[str, object] = data["sources"]
    cited: set[str] = set()
    defaults = _figures(f"{where}: defaults", data.get("defaults", {}), sources, cited)
    names = {f.name for f in fields(cls)}
    required = {f.name for f in fields(cls) if f.default is MISSING}
    out: list[tuple[Target, list[str]]] = []
    for name, table in data["targets"].items():
        at = f"{where}: targets.{name}"
        if not isinstance(table, dict):
            raise _fail(at, "a target is a table of fields")
        aliases = table.pop("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) and a for a in aliases):
            raise _fail(at, f"aliases must be a list of names, not {aliases!r}")
        given = {"name": name, **defaults, **_figures(at, table, sources, cited)}
        unknown = sorted(set(given) - names)
        missing = sorted(required - set(given))
        if unknown or missing:
            raise _fail(at, f"unknown field(s): {', '.join(unknown)}" if unknown else f"missing {', '.join(missing)}")
        out.append((cls(**check_fields(at, given, cls)), aliases))
    unused = sorted(set(sources) - cited)
    if unused:
        raise _fail(where, f"source(s) no figure cites: {', '.join(unused)}")
    return out, _measured(f"{where}: measured", data.get("measured", {}), cls, {t.name for t, _ in out})


def _measured(where: str, tables: object, cls: type[Target], names: set[str]) -> dict[str, tuple[object, ...]]:
    """The ``[measured]`` tables: each row a ``cls.measured[table]`` whose ``target`` is one of ``names``."""
    if not isinstance(tables, dict) or set(tables) - set(cls.measured):
        raise _fail(where, f"holds only the tables {', '.join(cls.measured) or '(none)'}")
    out: dict[str, tuple[object, ...]] = {}
    for table, rows in tables.items():
        row_cls = cls.measured[table]
        hints = typing.get_type_hints(row_cls)
        keys = {f.name for f in fields(row_cls)}
        got = []
        for i, row in enumerate(rows if isinstance(rows, list) else [None]):
            at = f"{where}.{table}[{i}]"
            if not isinstance(row, dict) or set(row) != keys:
                raise _fail(at, f"a row has exactly {', '.join(sorted(keys))}, not {row!r}")
            values = {k: _cell(at, k, row[k], hints[k]) for k in row}
            if values.get("target") not in names:
                raise _fail(at, f"target {row.get('target')!r} is not a target of this file")
            got.append(row_cls(**values))
        out[table] = tuple(got)
    return out


def _cell(where: str, key: str, v: object, kind: type) -> object:
    """One measurement's value of the row field's type: a non-empty string, a positive number, an enum's value."""
    if kind is str and isinstance(v, str) and v:
        return v
    if kind in (int, float) and isinstance(v, kind if kind is int else (int, float)) and not isinstance(v, bool) \
            and 0 < v < math.inf:
        return kind(v)
    if isinstance(kind, type) and issubclass(kind, Enum) and v in {e.value for e in kind}:
        return kind(v)
    raise _fail(where, f"{key} must be {'a positive ' + kind.__name__ if kind in (int, float) else kind.__name__}, "
                f"not {v!r}")

def _figures(where: str, table: object, sources: dict[str, object], cited: set[str]) -> dict[str, object]:
    """``table``'s figures without their sources; every figure's source must be one of ``sources``."""
    if not isinstance(table, dict):
        raise _fail(where, "must be a table of fields")
    out: dict[str, object] = {}
    for key, v in table.items():
        if key in _WORDS and not isinstance(v, dict):
            out[key] = v
            continue
        if not isinstance(v, dict) or set(v) != {"value", "source"}:
            raise _fail(where, f"figure '{key}' needs its source: {key} = {{ value = ..., source = \"<id>\" }}")
        if v["source"] not in sources:
            raise _fail(where, f"figure '{key}' cites {v['source']!r}, which [sources] does not name")
        cited.add(v["source"])
        out[key] = v["value"]
    return out


class _View(Mapping[str, V]):
    """A read-only mapping that reads the data files on first use (so that importing hloscope reads
    nothing, and a bad data file fails where the CLI prints one line)."""

    def __init__(self, get: Callable[[], Mapping[str, V]]) -> None:
        self._get = get

    def __getitem__(self, key: str) -> V:
        return self._get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __repr__(self) -> str:
        return repr(dict(self._get()))


class _Family(Sequence[T]):
    """One platform's built-in targets, read on first use."""

    def __init__(self, cls: type[T]) -> None:
        self._cls = cls

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[T]: ...

    def __getitem__(self, i: int | slice) -> T | Sequence[T]:
        return family(self._cls)[i]

    def __len__(self) -> int:
        return len(family(self._cls))


class _Rows(Sequence[V]):
    """One ``[measured]`` table's rows (each a ``row``), read on first use."""

    def __init__(self, table: str, row: type[V]) -> None:
        self._table, self._row = table, row

    def _rows(self) -> tuple[V, ...]:
        return tuple(r for r in builtins().measured[self._table] if isinstance(r, self._row))

    @overload
    def __getitem__(self, i: int) -> V: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[V]: ...

    def __getitem__(self, i: int | slice) -> V | Sequence[V]:
        return self._rows()[i]

    def __len__(self) -> int:
        return len(self._rows())


#: Every built-in target by name (the GPUs of data/gpu.toml, then the TPUs of data/tpu.toml).
BUILTIN_TARGETS: Mapping[str, Target] = _View(lambda: builtins().targets)
#: The names users type for a built-in target (Google's product names, the scaling book's, MaxText's
#: generation prefixes) -> its name: each target's ``aliases`` in its data file.
TARGET_ALIASES: Mapping[str, str] = _View(lambda: builtins().aliases)
#: The built-in TPU targets, in data/tpu.toml's order.
TPU_TARGETS: Sequence[TpuTarget] = _Family(TpuTarget)
#: Every published host-link figure per GPU hloscope knows (data/gpu.toml's ``measured.host_link``;
#: docs/targets.md, "Host link: measured").
HOST_LINK_MEASUREMENTS: Sequence[LinkMeasurement] = _Rows("host_link", LinkMeasurement)
#: Every published asyncEngineCount hloscope knows (data/gpu.toml's ``measured.copy_engines``;
#: docs/targets.md, "Copy engines").
COPY_ENGINE_COUNTS: Sequence[CopyEngineCount] = _Rows("copy_engines", CopyEngineCount)
