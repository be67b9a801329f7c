"""The ``hloscope`` marker: its keywords, documented once, and their reading into a check config.

:data:`MARK_KEYWORDS` is the table: every rule of :data:`~hloscope.check.rules.RULES`
and the settings that make sense on one test, with ``_`` for ``-``. The marker's
registration line and the validation of a marker both come from it.

A marker's config also carries the project's allow-list: the ``[[tool.hloscope.allow]]``
entries of the nearest ``pyproject.toml`` above the test file, before the marker's own
``allow`` entries (the project's rules and source are ``hloscope check``'s, not the marker's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from hloscope.check.allow import AllowEntry
from hloscope.check.config import CheckConfig, config_from_mapping, find_pyproject, load_pyproject
from hloscope.check.rules import RULES
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.render.check.meaning import rule_meaning, setting_meaning

#: Settings a marker may give (sources come from the test: what it returns or builds).
_MARK_SETTINGS = ("target", "hbm-margin", "allow-empty", "baseline", "tolerance-us", "tolerance-fraction",
                  "memory-tolerance", "allow")

MARK_KEYWORDS: dict[str, str] = {
    **{r.keyword: rule_meaning(r.name) for r in RULES.values()},
    **{k.replace("-", "_"): setting_meaning(k) for k in _MARK_SETTINGS},
}


def marker_line() -> str:
    """The ``markers`` ini line that registers ``hloscope``."""
    return (f"hloscope({', '.join(f'{k}=...' for k in MARK_KEYWORDS)}): check the step the test returns or "
            "builds with the hloscope_step fixture; see docs/ci.md")


def project_allow(test_dir: Path) -> tuple[AllowEntry, ...]:
    """The ``[[tool.hloscope.allow]]`` entries of the nearest ``pyproject.toml`` at or above ``test_dir``."""
    pyproject = find_pyproject(test_dir.resolve())
    return load_pyproject(pyproject).allow if pyproject is not None else ()


def config_from_marker(args: tuple[Any, ...], kwargs: Mapping[str, Any], test_dir: Path) -> CheckConfig:
    """Validate a marker's arguments; a relative ``baseline`` is relative to the test file's folder.
    The project's allow-list (:func:`project_allow`) comes first in ``allow``."""
    if args:
        raise HloscopeError("@pytest.mark.hloscope takes keyword arguments only, e.g. no_sync=True", EXIT_BAD_INPUT)
    unknown = sorted(set(kwargs) - set(MARK_KEYWORDS))
    if unknown:
        raise HloscopeError(f"@pytest.mark.hloscope: unknown keyword(s) {', '.join(unknown)}; valid: "
                            f"{', '.join(MARK_KEYWORDS)}", EXIT_BAD_INPUT)
    cfg = config_from_mapping(dict(kwargs), "@pytest.mark.hloscope")
    baseline = cfg.baseline
    if baseline and not Path(baseline).is_absolute():
        baseline = str(test_dir / baseline)
    return replace(cfg, baseline=baseline, allow=(*project_allow(test_dir), *cfg.allow))
