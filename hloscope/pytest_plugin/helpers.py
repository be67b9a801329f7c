"""Plain functions for ordinary asserts on a step; no pytest needed.

``check_offloads(step, **rules) -> CheckResult`` evaluates rules (keywords of
:data:`~hloscope.pytest_plugin.marks.MARK_KEYWORDS`) on a step;
``assert_offloads_hidden(step, ...)`` raises :class:`OffloadCheckFailed` (an
``AssertionError``) worded as ``hloscope check`` words it. A step is a path (HLO
file, dump or artifact folder), HLO text, a :class:`Report`, a
:class:`Subject`, the ``(CompileResult, Report)`` pair of
``hloscope.compile_step``, or a ``jax`` ``Compiled`` / ``Lowered``.
"""

from __future__ import annotations

import io
import os
from typing import Any

from hloscope.analysis.report import Report
from hloscope.api import analyze
from hloscope.check.baseline import load_snapshot
from hloscope.check.config import config_from_mapping
from hloscope.check.run import CheckResult, NothingToCheck, run_check
from hloscope.check.subject import Subject, load_path, subject_from_compile
from hloscope.hlo.loader import looks_like_hlo_text
from hloscope.hlo.parser import parse_hlo
from hloscope.render.check.formats import TextFormat
from hloscope.render.check.words import nothing_to_check_words
from hloscope.targets import Target, as_target


class OffloadCheckFailed(AssertionError):
    """A rule was violated, or there was nothing to check. ``result``: the check (None when empty)."""

    def __init__(self, message: str, result: CheckResult | None = None) -> None:
        super().__init__(message)
        self.result = result


def to_subject(step: Any, target: Target | str | None = None, label: str | None = None) -> Subject:
    """Whatever a test returns or builds, as a :class:`Subject`. ``label`` (e.g. the test's id) names
    a step that is not a path: HLO text is parsed under that name, so its report and errors say it."""
    if isinstance(step, Subject):
        return step
    if isinstance(step, Report):  # the subject carries the test's name; the report is not made again
        return Subject(step, step.module.source_path or label or step.module.name)
    if isinstance(step, tuple) and len(step) == 2 and isinstance(step[1], Report):
        return subject_from_compile(step[1], step[0].unoptimized_hlo, label or step[1].module.name)
    if isinstance(step, os.PathLike) or (isinstance(step, str) and not looks_like_hlo_text(step)):
        # a path with no target given is judged on its own (an artifact folder's manifest, an archive's GPU)
        return load_path(os.fspath(step), as_target(target) if target else None)

    if isinstance(step, str) and label is not None:
        step = parse_hlo(step, label)
        step.source_path = label  # the name the report is shown under
    report = analyze(step, as_target(target))
    return Subject(report, label or report.module.name)


def render_result(result: CheckResult) -> str:
    buf = io.StringIO()
    TextFormat().render(result, buf)
    return buf.getvalue()


def check_offloads(step: Any, target: Target | str | None = None, **rules: Any) -> CheckResult:
    """Evaluate ``rules`` on ``step`` (no rule given: the default gate, ``check.run.DEFAULT_RULES``). Raises
    :class:`~hloscope.check.run.NothingToCheck` when there is nothing to judge and not ``allow_empty``."""
    cfg = config_from_mapping(rules, "check_offloads")
    subject = to_subject(step, target or cfg.target)
    return run_check(subject, cfg, load_snapshot(cfg.baseline) if cfg.baseline else None)


def assert_offloads_hidden(step: Any, target: Target | str | None = None, *, no_sync: bool = True,
                           no_exposed: bool = True, **rules: Any) -> CheckResult:
    """Assert every host transfer of ``step`` is async and not exposed (and any further ``rules``).

    ``rules`` are the marker's keywords: ``max_exposed_us=50``, ``min_hidden_fraction=0.9``,
    ``fits_hbm=True``, ``allow=[{"instruction": "...", "reason": "..."}]`` ... Pass
    ``no_exposed=False`` to tolerate exposed transfers within the other limits.
    """
    try:
        result = check_offloads(step, target, no_sync=no_sync, no_exposed=no_exposed, **rules)
    except NothingToCheck as e:
        raise OffloadCheckFailed(nothing_to_check_words(e.nothing)) from None
    if not result.passed:
        raise OffloadCheckFailed(render_result(result), result)
    return result
