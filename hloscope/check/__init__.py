"""Rules over a :class:`~hloscope.analysis.report.Report`: pure functions returning violations.

Headless: imports the analysis only (no CLI, no JAX, no UI). ``hloscope analyze
--fail-on`` and ``hloscope check`` evaluate these rules; the pytest plugin and
the assertion helpers call them too.
"""

from hloscope.check.rules import (
    Emptiness,
    NothingToJudge,
    StepWait,
    Violation,
    fail_on_verdicts,
    nothing_to_judge,
    parse_verdicts,
    step_wait,
)

__all__ = ["Emptiness", "NothingToJudge", "StepWait", "Violation", "fail_on_verdicts", "nothing_to_judge",
           "parse_verdicts", "step_wait"]
