"""Check settings: from ``[tool.hloscope]`` in ``pyproject.toml``, from flags, or from keyword arguments.

One :class:`CheckConfig` holds the rules to evaluate (name -> parameter, names
from :data:`~hloscope.check.rules.RULES`) and the settings around them. Keys are
written with ``-`` in TOML and on the command line and with ``_`` in Python; an
unknown key is an error (exit 2) that lists the valid ones. See docs/ci.md.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hloscope.check.allow import AllowEntry
from hloscope.check.baseline import Tolerance
from hloscope.check.rules import RULES
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.request import CompileSettings
from hloscope.targets import memory_fraction_problem

#: Settings that are not rules: key -> kind. What each means: ``hloscope.render.check.meaning.SETTING_MEANING``.
SETTINGS: dict[str, str] = {
    "target": "str",
    "hbm-margin": "fraction",
    "host-pool-gb": "float",
    "allow-empty": "bool",
    "baseline": "str",
    "tolerance-us": "float",
    "tolerance-fraction": "fraction",
    "memory-tolerance": "fraction",
    "path": "str",
    "unoptimized": "str",
    "workload": "str",
    "fn": "str",
    "args": "str",
    "devices": "int",
    "memory-fraction": "hbm-share",
    "maxtext": "strings",
    "set": "table",
    "allow": "allow",
}

_ALLOW_KEYS = {"checkpoint", "instruction", "source", "reason", "rules"}


@dataclass(frozen=True)
class CheckConfig:
    """rules: rule name -> parameter (only the rules to evaluate). where: where the settings
    came from, for messages. compile: the compile's settings (target, workload / fn / maxtext,
    ``args``, ``devices``, ``set``, ``memory-fraction``), perhaps partial: ``hloscope.cli.check``
    builds the request from them when they name a step. Other fields: see :data:`SETTINGS`."""

    rules: dict[str, Any] = field(default_factory=dict)
    hbm_margin: float = 0.0
    allow_empty: bool = False
    baseline: str | None = None
    tolerance: Tolerance = field(default_factory=Tolerance)
    allow: tuple[AllowEntry, ...] = ()
    path: str | None = None
    unoptimized: str | None = None
    compile: CompileSettings = field(default_factory=CompileSettings)
    where: str = ""
    host_pool_gb: float | None = None
    given: frozenset[str] = frozenset()  # the setting keys given where it was read (pyproject spelling)

    @property
    def target(self) -> str | None:
        """The target's name, for a compile or an artifact folder (None: the default, or the folder's own)."""
        return self.compile.target

    def merged(self, over: CheckConfig) -> CheckConfig:
        """``self`` with every rule and setting ``over`` gives replaced (flags over pyproject): a setting
        given there replaces this one's even when it is the default's value (``--devices 8`` over
        ``devices = 16``, ``--hbm-margin 0`` over ``hbm-margin = 0.1``)."""
        changes: dict[str, Any] = {"rules": {**self.rules, **over.rules}}
        for key, f in _FIELD_OF.items():
            if key in over.given:
                changes[f] = getattr(over, f)
        tol = self.tolerance
        changes["tolerance"] = replace(tol, **{f: getattr(over.tolerance, f) for key, f in _TOLERANCE_OF.items()
                                               if key in over.given})
        changes["compile"] = self.compile.merged(over.compile, {f for key, f in _COMPILE_OF.items()
                                                                if key in over.given})
        changes["allow"] = self.allow + over.allow
        changes["given"] = self.given | over.given
        return replace(self, **changes)


#: Setting key -> the CheckConfig field, the Tolerance field, the CompileSettings field it sets.
_FIELD_OF = {"hbm-margin": "hbm_margin", "allow-empty": "allow_empty", "baseline": "baseline", "path": "path",
             "unoptimized": "unoptimized", "host-pool-gb": "host_pool_gb"}
_TOLERANCE_OF = {"tolerance-us": "exposed_us", "tolerance-fraction": "exposed_fraction",
                 "memory-tolerance": "memory_growth"}
_COMPILE_OF = {"target": "target", "devices": "devices", "workload": "workload", "set": "sets", "fn": "fn",
               "args": "args", "memory-fraction": "memory_fraction", "maxtext": "maxtext"}


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)?\s*$", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_bytes(value: Any, where: str) -> int:
    """``1048576``, ``"1MiB"``, ``"1.5 GB"`` -> bytes."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    m = _SIZE.match(str(value)) if isinstance(value, str) else None
    if not m:
        raise HloscopeError(f"{where}: expected a size such as 1048576 or '64MiB', got {value!r}", EXIT_BAD_INPUT)
    return int(float(m.group(1)) * _UNITS[(m.group(2) or "B").lower()])


def _convert(kind: str, value: Any, where: str) -> Any:
    if kind == "bool":
        if not isinstance(value, bool):
            raise HloscopeError(f"{where}: expected true or false, got {value!r}", EXIT_BAD_INPUT)
        return value
    if kind == "factor":
        if isinstance(value, bool) or not isinstance(value, int | float) or not 1 <= value < float("inf"):
            raise HloscopeError(f"{where}: expected a factor >= 1 (1.5: within 1.5x of flipping), got {value!r}",
                                EXIT_BAD_INPUT)
        return float(value)
    if kind == "hbm-share":  # the share of the HBM JAX's allocator takes: one check for every face
        problem = memory_fraction_problem(value)
        if problem:
            raise HloscopeError(f"{where}: {problem}", EXIT_BAD_INPUT)
        return float(value)
    if kind in ("float", "fraction"):
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise HloscopeError(f"{where}: expected a number >= 0, got {value!r}", EXIT_BAD_INPUT)
        if kind == "fraction" and value > 1:
            raise HloscopeError(f"{where}: expected a fraction between 0 and 1, got {value!r}", EXIT_BAD_INPUT)
        return float(value)
    if kind == "strings":  # MaxText's [CONFIG.yml] KEY=VALUE ..., as --maxtext takes them
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise HloscopeError(f"{where}: expected a list of strings such as [\"model_name=llama3.1-8b\"], "
                                f"got {value!r}", EXIT_BAD_INPUT)
        return tuple(value)
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise HloscopeError(f"{where}: expected a whole number >= 1, got {value!r}", EXIT_BAD_INPUT)
        return value
    if kind == "bytes":
        return parse_bytes(value, where)
    if kind == "names":
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
            raise HloscopeError(f"{where}: expected a list of names, got {value!r}", EXIT_BAD_INPUT)
        return list(value)
    if kind == "str":
        if not isinstance(value, str) or not value:
            raise HloscopeError(f"{where}: expected a non-empty string, got {value!r}", EXIT_BAD_INPUT)
        return value
    if kind == "table":
        if not isinstance(value, Mapping):
            raise HloscopeError(f"{where}: expected a table such as {{layers = 2}}, got {value!r}", EXIT_BAD_INPUT)
        return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}
    raise AssertionError(kind)


def _allow_entry(item: Any, where: str) -> AllowEntry:
    if isinstance(item, AllowEntry):
        return item
    if not isinstance(item, Mapping):
        raise HloscopeError(f"{where}: an allow entry is a table with a reason, got {item!r}", EXIT_BAD_INPUT)
    unknown = sorted(set(item) - _ALLOW_KEYS)
    if unknown:
        raise HloscopeError(f"{where}: unknown key(s) {', '.join(unknown)}; an allow entry has "
                            f"{', '.join(sorted(_ALLOW_KEYS))}", EXIT_BAD_INPUT)
    reason = item.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise HloscopeError(f"{where}: every allow entry needs a reason", EXIT_BAD_INPUT)
    if not any(item.get(k) for k in ("checkpoint", "instruction", "source")):
        raise HloscopeError(f"{where}: an allow entry names a checkpoint, instruction or source", EXIT_BAD_INPUT)
    rules = _convert("names", item.get("rules", []), f"{where}.rules") if item.get("rules") else []
    bad = sorted(set(rules) - set(RULES) - {"baseline"})
    if bad:
        raise HloscopeError(f"{where}.rules: unknown rule(s) {', '.join(bad)}; choose from "
                            f"{', '.join([*RULES, 'baseline'])}", EXIT_BAD_INPUT)
    for k in ("checkpoint", "instruction", "source"):
        if item.get(k) is not None and not isinstance(item.get(k), str):
            raise HloscopeError(f"{where}.{k}: expected a string pattern", EXIT_BAD_INPUT)
    return AllowEntry(reason.strip(), item.get("checkpoint"), item.get("instruction"), item.get("source"),
                      tuple(rules))


def valid_keys() -> list[str]:
    return [*RULES, *SETTINGS]


def config_from_mapping(data: Mapping[str, Any], where: str) -> CheckConfig:
    """Validate ``data`` (TOML-style ``-`` keys or Python-style ``_`` keys) into a :class:`CheckConfig`."""
    rules: dict[str, Any] = {}
    settings: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = str(raw_key).replace("_", "-")
        at = f"{where}: {raw_key}"
        if key in RULES:
            rules[key] = _convert(RULES[key].kind, value, at)
        elif key == "allow":
            items = value if isinstance(value, list | tuple) else [value]
            settings[key] = tuple(_allow_entry(it, f"{where}: allow[{i}]") for i, it in enumerate(items))
        elif key in SETTINGS:
            settings[key] = _convert(SETTINGS[key], value, at)
        else:
            raise HloscopeError(f"{where}: unknown key '{raw_key}'; valid keys: {', '.join(valid_keys())}",
                                EXIT_BAD_INPUT)
    # A rule switched off (no-sync = false) is simply not evaluated.
    rules = {k: v for k, v in rules.items() if v is not False}
    tol = Tolerance(settings.get("tolerance-us", Tolerance.exposed_us),
                    settings.get("tolerance-fraction", Tolerance.exposed_fraction),
                    settings.get("memory-tolerance", Tolerance.memory_growth))
    sources = [k for k in ("path", "workload", "fn", "maxtext") if k in settings]
    if len(sources) > 1:
        raise HloscopeError(f"{where}: give one of path, workload, fn, maxtext (got {', '.join(sources)})",
                            EXIT_BAD_INPUT)
    steps = CompileSettings(target=settings.get("target"), devices=settings.get("devices", 8),
                            workload=settings.get("workload"), sets=tuple(settings.get("set", {}).items()),
                            fn=settings.get("fn"), args=settings.get("args"),
                            memory_fraction=settings.get("memory-fraction"), maxtext=settings.get("maxtext"))
    return CheckConfig(rules=rules, hbm_margin=settings.get("hbm-margin", 0.0),
                       allow_empty=settings.get("allow-empty", False), baseline=settings.get("baseline"),
                       tolerance=tol, allow=settings.get("allow", ()), path=settings.get("path"),
                       unoptimized=settings.get("unoptimized"), compile=steps, where=where,
                       host_pool_gb=settings.get("host-pool-gb"), given=frozenset(settings))


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` in ``start`` or a folder above it."""
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_pyproject(path: Path) -> CheckConfig:
    """``[tool.hloscope]`` of ``path``; an empty config when the table is absent.

    Paths in it (path, unoptimized, baseline) are relative to the pyproject's folder.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise HloscopeError(f"{path}: cannot read: {e.strerror or e}", EXIT_BAD_INPUT) from None
    except tomllib.TOMLDecodeError as e:
        raise HloscopeError(f"{path}: not valid TOML: {e}", EXIT_BAD_INPUT) from None
    table = data.get("tool", {}).get("hloscope")
    if table is None:
        return CheckConfig(where=str(path))
    if not isinstance(table, dict):
        raise HloscopeError(f"{path}: [tool.hloscope] must be a table", EXIT_BAD_INPUT)
    cfg = config_from_mapping(table, f"{path} [tool.hloscope]")
    base = path.parent
    fixes: dict[str, Any] = {f: str(base / getattr(cfg, f)) for f in ("path", "unoptimized", "baseline")
             if getattr(cfg, f) and not Path(getattr(cfg, f)).is_absolute()}
    return replace(cfg, **fixes)
