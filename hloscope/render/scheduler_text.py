"""Which scheduler XLA ran, in words: one line of the table report and the JSON ``scheduler`` object.

The facts are the compile's record (:class:`~hloscope.analysis.inputs.ScheduleRun`, on
``report.scheduler``); a plain HLO file has none and gets no line.
"""

from __future__ import annotations

import re
from dataclasses import asdict
from typing import Any

from hloscope.analysis.inputs import ScheduleRun

_ESTIMATOR_WORDS = {
    "sol": "speed-of-light estimator",
    "approximate": "approximate estimator",
    "analytical": "analytical estimator",
    "pgle": "profile-guided estimator",
}


def _runs(m: re.Match[str]) -> str:
    """``{0,1,2,3}`` -> ``{0..3}``: a replica group of consecutive devices, as XLA's own dumps write it."""
    ids = [int(x) for x in m.group(1).split(",")]
    if len(ids) > 2 and ids == list(range(ids[0], ids[0] + len(ids))):
        return f"{{{ids[0]}..{ids[-1]}}}"
    return m.group(0)


def _listed_devices(reason: str) -> int | None:
    """How many device ids the replica groups in XLA's reason list (``{{0,1,...},{...}}``), or None."""
    groups = reason.partition("replica group")[2]
    if not re.fullmatch(r"[:\s]*\{(\{[\d,]*\},?)+\}\s*", groups):
        return None
    return len(set(re.findall(r"\d+", groups))) or None


def _fallback_words(reason: str) -> str:
    """Why XLA left its speed-of-light estimator. XLA's "Non homogenous replica group" comes from
    reading its own collective table for the GPU (the groups it names are the table's: the GB200
    entry's 4 x 18 over 72 devices), before and whatever the step: said so, without XLA's error
    words, which read as a failed compile (the JSON keeps them). Other reasons keep XLA's words,
    replica groups shortened."""
    if "Non homogenous replica group" in reason:
        n = _listed_devices(reason)
        table = f", with replica groups over {n} devices," if n else ""
        return ("XLA's speed-of-light estimator did not start: the collective table XLA carries for this GPU"
                f"{table} does not load in this XLA, whatever the step; nothing in this compile failed; "
                "docs/targets.md")
    short = re.sub(r"\{(\d+(?:,\d+)+)\}", _runs, reason)
    return f"XLA fell back: {short}"


def estimator_words(estimator: str) -> str:
    """``speed-of-light estimator``, ``approximate estimator``...: how every view names XLA's estimator."""
    return _ESTIMATOR_WORDS.get(estimator, estimator + " estimator")


def scheduler_line(run: ScheduleRun | None) -> str:
    """``scheduler: lhs, speed-of-light estimator (H100 table)``, ``scheduler: none (no latency
    hiding scheduler)``...; "" when the compile's record is unknown."""
    if run is None:
        return ""
    if run.name != "lhs":
        text = f"scheduler: {run.name}" + (" (no latency hiding scheduler)" if run.name == "none" else "")
    elif run.estimator is None:
        text = "scheduler: lhs, estimator unknown" + (f" ({run.source})" if run.source else "")
    else:
        text = f"scheduler: lhs, {estimator_words(run.estimator)}"
        if run.estimator == "sol" and run.sol_table:
            text += " (XLA's default table)" if run.sol_table == "default" else f" ({run.sol_table} table)"
        if run.reason:
            text += f" ({_fallback_words(run.reason)})"
    if run.requested and run.requested not in (run.name, "lhs-approx" if run.estimator == "approximate" else ""):
        text += f"; asked for {run.requested}"
    return text


def scheduler_dict(run: ScheduleRun) -> dict[str, Any]:
    """The JSON report's ``scheduler`` object: the compile's record, as recorded."""
    return asdict(run)
