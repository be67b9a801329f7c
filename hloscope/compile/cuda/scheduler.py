"""The scheduler axis: the XLA options each :class:`Scheduler` sets, and what really ran.

Measured with jaxlib 0.10.2 (XLA 5a9e73cb), deviceless, on Hopper and Blackwell targets:

- ``xla_gpu_enable_latency_hiding_scheduler`` defaults to false, yet the latency hiding
  scheduler (LHS) runs whenever the analytical speed-of-light (SOL) latency estimator
  is enabled (``xla_gpu_enable_analytical_sol_latency_estimator``, default true): the
  SOL estimator is only used by LHS, so XLA turns LHS on for it (``gpu_hlo_schedule.cc``
  ``IsLHSEnabled``). ``false`` for the LHS option alone therefore changes nothing.
- LHS really off needs both options false; LHS with XLA's approximate ("T-shirt size")
  estimator needs LHS true and SOL false.
- When LHS ran, every scheduled instruction carries ``scheduling_name`` in its
  metadata; without LHS none does.
- ``gpu_hlo_schedule.cc`` logs ``Fingerprint before LHS for module ...`` for every module
  it schedules, LHS or not: its absence means the log was off.
- Which estimator drove LHS is in the plugin's log (``gpu_hlo_schedule.cc``):
  ``Using unified latency estimator`` (the SOL estimator), then possibly ``Cannot
  construct unified latency estimator, falling back to T-shirt sizes. Reason: ...``
  (e.g. a GPU with no SOL table, named "NVIDIA GB200", with collectives over more than
  one node), ``Using analytical latency estimator``, ``using profile guided latency
  estimator`` (PGLE) or ``PGLE fallback: using GpuLatencyEstimator (T-shirt sizes)``;
  no such line means the approximate estimator. ``sol_gpu_cost_model.cc`` says which
  device table SOL used (``[SoL] Using config for device: NVIDIA B200`` or ``No SoL
  config found for device: NVIDIA GB200. Using default config.``).
"""

from __future__ import annotations

import re
from enum import StrEnum

from hloscope.analysis.inputs import ScheduleRun
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.request import Scheduler

LHS_FLAG = "xla_gpu_enable_latency_hiding_scheduler"
SOL_FLAG = "xla_gpu_enable_analytical_sol_latency_estimator"

#: XLA options per scheduler (docs/compile.md).
SCHEDULER_OPTIONS: dict[Scheduler, dict[str, bool]] = {
    Scheduler.LHS: {LHS_FLAG: True},
    Scheduler.LHS_APPROX: {LHS_FLAG: True, SOL_FLAG: False},
    Scheduler.NONE: {LHS_FLAG: False, SOL_FLAG: False},
}

class Estimator(StrEnum):
    """The latency estimator that drove LHS, as the manifest and the report name it."""

    SOL = "sol"  # the analytical speed-of-light estimator ("unified" in XLA's log)
    APPROXIMATE = "approximate"  # XLA's "T-shirt size" estimator
    ANALYTICAL = "analytical"
    PGLE = "pgle"  # profile guided


SOL, APPROXIMATE, ANALYTICAL, PGLE = Estimator.SOL, Estimator.APPROXIMATE, Estimator.ANALYTICAL, Estimator.PGLE

_LINE = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ (?P<src>[\w.]+):\d+\] (?P<msg>.*)$")


def resolve(scheduler: Scheduler | str | None, lhs: bool | None) -> Scheduler:
    """The scheduler asked for: ``scheduler`` if given, else ``lhs`` as the old alias
    (True or None: LHS, False: NONE). Both given and disagreeing is an error."""
    if scheduler is not None:
        try:
            chosen = Scheduler(scheduler)
        except ValueError:
            raise HloscopeError(f"unknown scheduler '{scheduler}'; choose one of: "
                                f"{', '.join(s.value for s in Scheduler)}", EXIT_BAD_INPUT) from None
        if lhs is not None and (chosen is not Scheduler.NONE) != lhs:
            raise HloscopeError(f"scheduler={chosen.value} contradicts lhs={lhs}; give one of them",
                                EXIT_BAD_INPUT)
        return chosen
    return Scheduler.from_lhs(lhs)


def lhs_ran(optimized_hlo: str) -> bool:
    """Whether LHS scheduled the module: its instructions carry ``scheduling_name``."""
    return "scheduling_name=" in optimized_hlo


def read_run(optimized_hlo: str, native_log: str | None, requested: Scheduler | None) -> ScheduleRun:
    """What ran, from the optimized HLO and the plugin's log of that compile (a cache hit carries
    the record of the compile that made the entry, so it is never read again).

    ``native_log`` None, or without the ``Fingerprint before LHS`` line XLA logs for every
    module it schedules: the plugin's log was not on (its logging started before hloscope
    could turn it on), so the estimator is not known.
    """
    req = requested.value if requested is not None else None
    if not lhs_ran(optimized_hlo):
        return ScheduleRun("none", None, req, "optimized HLO (no scheduling_name metadata)")
    if native_log is None or "Fingerprint before LHS" not in native_log:
        return ScheduleRun("lhs", None, req, "optimized HLO; XLA's log was not available (the CUDA plugin "
                            "started logging before hloscope), so the estimator is unknown")
    estimator = APPROXIMATE
    sol_table: str | None = None
    reason: str | None = None
    for line in native_log.splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        msg = m.group("msg")
        if msg.startswith("Using unified latency estimator"):
            estimator = SOL
        elif msg.startswith("Cannot construct unified latency estimator"):
            estimator = APPROXIMATE
            reason = msg.partition("Reason: ")[2][:300] or msg[:300]
        elif msg.startswith("Using analytical latency estimator"):
            estimator = ANALYTICAL
        elif "using profile guided latency estimator" in msg:
            estimator = PGLE
        elif msg.startswith("PGLE fallback"):
            estimator = APPROXIMATE
            reason = msg[:300]
        elif msg.startswith("[SoL] Using config for device: "):
            sol_table = msg.removeprefix("[SoL] Using config for device: ").strip()
        elif msg.startswith("No SoL config found for device"):
            sol_table = "default"
    return ScheduleRun("lhs", estimator, req, "optimized HLO and XLA's log", sol_table, reason)
