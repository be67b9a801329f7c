"""What one deviceless compile produced: :class:`CompileResult` (plain data, no JAX).

Its own module so that the compile cache (``hloscope.compile.cache``) can build one
without importing the compiler (``hloscope.compile.deviceless``, which imports the
cache): no import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class CompileResult:
    """What one deviceless compile produced.

    optimized_hlo / unoptimized_hlo: HLO text after / before XLA's passes.
    memory: byte figures (see docs/compile.md for each key).
    options: the XLA compiler options passed, name -> value.
    versions: package versions; target: target name; devices: device count.
    compile_seconds: wall time of lower + compile.
    device_memory_size: the HBM size, bytes, XLA compiled for (the target's, or
    ``memory_override_bytes`` when one was given).
    extra_files: artifact name -> text: XLA's memory-usage report, the live-at-peak
    section of its live-range dump, the buffer-assignment lines of those values.
    tensor_names: the step's ``checkpoint_name`` call sites read from its jaxpr
    (``hloscope.compile.names``); the analysis matches transfers to them.
    compiled: the ``jax.stages.Compiled`` (in the process that compiled it only).
    scheduler: which scheduler ran and which latency estimator drove it, read from this
    compile (``hloscope.analysis.inputs.ScheduleRun.to_record``: name, estimator,
    requested, source, sol_table, reason); the manifest's ``scheduler`` key.
    topology: the compile-only topology the devices came from (``2x16x4``) and how it
    is wired (``hloscope.compile.topology``).
    """

    optimized_hlo: str
    unoptimized_hlo: str
    memory: dict[str, int]
    options: dict[str, Any]
    versions: dict[str, str]
    target: str
    devices: int
    mesh_shape: dict[str, int]
    compile_seconds: float
    device_memory_size: int = 0
    extra_files: dict[str, str] = field(default_factory=dict)
    tensor_names: list[dict[str, Any]] = field(default_factory=list)
    #: The compile cache's word on this result (hloscope.compile.cache): hit, key, compiled_seconds.
    cache: dict[str, Any] = field(default_factory=dict)
    #: What the traced step asked to offload (``hloscope.analysis.intent.Intent``), None if unread.
    intent: Any = None
    scheduler: dict[str, Any] = field(default_factory=dict)
    topology: str = ""
    compiled: Any = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        # The jax Compiled object stays in the process that made it (it does not pickle).
        return {k: v for k, v in self.__dict__.items() if k != "compiled"} | {"compiled": None}
