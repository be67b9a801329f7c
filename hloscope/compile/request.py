"""What to compile, as one frozen value: the request every compile path carries.

Light to import (no JAX, no analysis): the CLI, the TUI, check, sweep and the
what-if build a :class:`CompileRequest` and hand it to ``hloscope.compile.jobs``;
the compile cache keys on what the request turns into (the lowered module and the
XLA options), never on the request alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Scheduler(StrEnum):
    """Which scheduler XLA's GPU compiler runs, and what drives it (docs/compile.md).

    LHS: the latency hiding scheduler with the latency estimator XLA chooses for the
    target (the analytical speed-of-light estimator on Hopper and Blackwell).
    LHS_APPROX: the latency hiding scheduler driven by XLA's approximate estimator
    (the speed-of-light estimator turned off). NONE: no latency hiding scheduler.
    """

    LHS = "lhs"
    LHS_APPROX = "lhs-approx"
    NONE = "none"

    @classmethod
    def from_lhs(cls, lhs: bool | None) -> Scheduler:
        """``--lhs`` / ``--no-lhs`` (and ``lhs=`` in the API) as a scheduler."""
        return cls.NONE if lhs is False else cls.LHS


@dataclass(frozen=True)
class CompileRequest:
    """One compile: a built-in workload or the user's ``module:function``, for a target.

    workload / sets / policy: a built-in workload (``hloscope compile --workload``), its
    ``--set`` overrides and offload policy. fn / args / cwd: the user's function, its
    abstract arguments (``--args`` spec) and the folder its module is imported from.
    Exactly one of ``workload`` and ``fn`` is set. memory_override_bytes: compile as if
    the target had this much HBM (the what-if). memory_fraction: compile as JAX does on a
    GPU whose allocator takes this fraction of the HBM (``XLA_PYTHON_CLIENT_MEM_FRACTION``);
    None: as a compile-only device, where XLA plans for 80% of the HBM.
    """

    target: str
    devices: int = 8
    workload: str | None = None
    sets: tuple[tuple[str, str], ...] = ()
    policy: str | None = None
    fn: str | None = None
    args: str | None = None
    cwd: str | None = None
    scheduler: Scheduler = Scheduler.LHS
    pipelined: bool = True
    xla_flags: tuple[str, ...] = field(default=())
    memory_override_bytes: int | None = None
    memory_fraction: float | None = None

    def __post_init__(self) -> None:
        if (self.workload is None) == (self.fn is None):
            raise ValueError("a CompileRequest names exactly one of workload and fn")
        if self.memory_fraction is not None and not 0 < self.memory_fraction <= 1:
            raise ValueError(f"memory_fraction {self.memory_fraction!r} is not in (0, 1]")

    @property
    def sets_dict(self) -> dict[str, str]:
        return dict(self.sets)

    @property
    def label(self) -> str:
        what = f"workload {self.workload}" if self.workload else f"--fn {self.fn}"
        return f"{what} ({self.target}, {self.devices} devices, scheduler {self.scheduler.value})"
