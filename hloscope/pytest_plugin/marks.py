"""The ``hloscope`` marker: its keywords, documented once, and their reading into a check config.

:data:`MARK_KEYWORDS` is the table: every rule of :data:`~hloscope.check.rules.RULES`
and the settings that make sense on one test, with ``_`` for ``-``. The marker's
registration line and the validation of a marker both come from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hloscope.check.config import SETTINGS, CheckConfig, config_from_mapping
from hloscope.check.rules import RULES
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError

#: Settings a marker may give (sources come from the test: what it returns or builds).
_MARK_SETTINGS = ("target", "hbm-margin", "allow-empty", "baseline", "tolerance-us", "tolerance-fraction",
                  "memory-tolerance", "allow")

MARK_KEYWORDS: dict[str, str] = {
    **{r.keyword: r.meaning for r in RULES.values()},
    **{k.replace("-", "_"): SETTINGS[k][1] for k in _MARK_SETTINGS},
}


def marker_line() -> str:
    """The ``markers`` ini line that registers ``hloscope``."""
    return (f"hloscope({', '.join(f'{k}=...' for k in MARK_KEYWORDS)}): check the step the test returns or "
            "builds with the hloscope_step fixture; see docs/ci.md")


def config_from_marker(args: tuple[Any, ...], kwargs: Mapping[str, Any], test_dir: Path) -> CheckConfig:
    """Validate a marker's arguments; a relative ``baseline`` is relative to the test file's folder."""
    if args:
        raise HloscopeError("@pytest.mark.hloscope takes keyword arguments only, e.g. no_sync=True", EXIT_BAD_INPUT)
    unknown = sorted(set(kwargs) - set(MARK_KEYWORDS))
    if unknown:
        raise HloscopeError(f"@pytest.mark.hloscope: unknown keyword(s) {', '.join(unknown)}; valid: "
                            f"{', '.join(MARK_KEYWORDS)}", EXIT_BAD_INPUT)
    cfg = config_from_mapping(dict(kwargs), "@pytest.mark.hloscope")
    if cfg.baseline and not Path(cfg.baseline).is_absolute():
        from dataclasses import replace

        cfg = replace(cfg, baseline=str(test_dir / cfg.baseline))
    return cfg
