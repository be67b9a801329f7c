"""The settings of one analysis (:class:`AnalysisOptions`), read by every pass through its
:class:`~hloscope.analysis.context.StepContext`.

Its own module so that the step context can name it without importing a pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.measured.compare import MeasuredProfile
from hloscope.analysis.simulate.verdict import DEFAULT_THRESHOLDS, Thresholds
from hloscope.hlo.profiles.host_lines import HostExecution
from hloscope.hlo.shape import HOST_MEMORY_SPACE
from hloscope.targets import DEFAULT_HOST_POOL_BYTES
from hloscope.vocab import LinkMode


@dataclass(frozen=True)
class AnalysisOptions:
    """Settings of the analysis.

    host_space: the memory space number of host memory (5 on XLA:GPU).
    thresholds: the exposed fractions that make a transfer hidden, partial or exposed
    (:class:`~hloscope.analysis.simulate.verdict.Thresholds`), for the simulated wait and the window estimate.
    link_mode: host link figures, ``achieved`` (default) or ``peak`` (docs/targets.md).
    simulate: replay the schedule (analysis/simulate/step.py) and judge async transfers by the
    simulated wait at their done; False judges by the window alone.
    measured_us: (instruction name, µs) pairs measured on a GPU (``hloscope.analysis.cost.calibration``)
    that replace the cost model's figure for those instructions.
    compare_with: a measured profile (``hloscope.analysis.measured.compare``) to put beside the model's
    figures (``Report.measured``); it changes no figure (``measured_us`` does that).
    host_pool_bytes: PJRT's pinned-host pool per process (``MemoryFacts.host_pool_bytes``).
    host_lines: a measured TPU profile's executions with the host's buffer mappings before each
    (``hloscope.hlo.profiles.host_lines``), put beside the call's modeled host work (``Report.host_call``).
    """

    host_space: int = HOST_MEMORY_SPACE
    thresholds: Thresholds = DEFAULT_THRESHOLDS
    link_mode: LinkMode = LinkMode.ACHIEVED
    simulate: bool = True
    measured_us: tuple[tuple[str, float], ...] = ()
    compare_with: MeasuredProfile | None = None
    host_pool_bytes: int = DEFAULT_HOST_POOL_BYTES
    host_lines: tuple[HostExecution, ...] | None = None
