"""What to compile, as one frozen value: the request every compile path carries.

Light to import (no JAX, no analysis, no compile layer: it sits under the analyses, and tune's
search, ``hloscope.search.tune.TuneSpec``, holds one): the CLI, the TUI, check, sweep, the
what-if and the Python API build a :class:`CompileRequest`; ``hloscope.compile.run.jobs`` turns a
built-in workload or a ``module:function`` into the step to trace, and
``hloscope.compile.step.deviceless.compile_step(request, fn, args)`` compiles it with the
request's settings. The compile cache keys on what the request turns into (the lowered
module and the XLA options), never on the request alone.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum

from hloscope.targets import memory_fraction_problem


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


class Policy(StrEnum):
    """What a built-in workload does with its tagged activations (``--policy``, docs/compile.md).

    OFFLOAD: saved to host memory (MaxText's ``offload``); REMAT: recomputed in the backward
    pass; SAVE: kept on the device.
    """

    OFFLOAD = "offload"
    REMAT = "remat"
    SAVE = "save"


@dataclass(frozen=True)
class CompileSettings:
    """A compile's settings as they are gathered, perhaps in parts: every field of a
    :class:`CompileRequest`, where a field may still be missing (``target`` None, no step).

    ``hloscope check`` reads them from ``[tool.hloscope]`` of pyproject.toml and then from its flags
    (:meth:`merged`), and may never form a request (it checks an artifact folder instead);
    :meth:`request` is the compile they ask for. A :class:`CompileRequest` is the complete case, so
    a compile option is one field here: every request, and every face that gathers settings, has it.

    target: the target's name. Exactly one of workload / fn / maxtext names the step (see
    :class:`CompileRequest`, which documents every field).
    """

    target: str | None = None
    devices: int = 8
    workload: str | None = None
    sets: tuple[tuple[str, str], ...] = ()
    policy: Policy | None = None
    fn: str | None = None
    args: str | None = None
    cwd: str | None = None
    scheduler: Scheduler = Scheduler.LHS
    pipelined: bool | None = True
    xla_flags: tuple[str, ...] = field(default=())
    memory_override_bytes: int | None = None
    memory_fraction: float | None = None
    maxtext: tuple[str, ...] | None = None
    topology: str | None = None
    slices: int = 1
    per_core: bool = False

    def merged(self, over: CompileSettings, given: Collection[str]) -> CompileSettings:
        """``self`` with the fields named in ``given`` taken from ``over``, whatever their value (flags
        over pyproject: ``hloscope.check.config.CheckConfig.merged``)."""
        return replace(self, **{name: getattr(over, name) for name in given})

    def request(self) -> CompileRequest:
        """The compile these settings ask for; ValueError when they name no target or not exactly one step."""
        if self.target is None:
            raise ValueError("a CompileRequest names a target")
        return CompileRequest(**{f.name: getattr(self, f.name) for f in fields(CompileSettings)})


@dataclass(frozen=True)
class CompileRequest(CompileSettings):
    """One compile: a built-in workload or the user's ``module:function``, for a target: the
    complete :class:`CompileSettings` (its fields, in its order).

    workload / sets / policy: a built-in workload (``hloscope compile --workload``), its
    ``--set`` overrides and offload policy. fn / args / cwd: the user's function
    (``package.module:function``; for a Python function given to the API, its module and
    qualified name), its abstract arguments (``--args`` spec) and the folder its module is
    imported from. maxtext: MaxText's own train step (``--maxtext [CONFIG.yml] KEY=VALUE ...``,
    ``hloscope.compile.maxtext``): the config file, when given, then MaxText's overrides.
    Exactly one of ``workload``, ``fn`` and ``maxtext`` is set. scheduler / pipelined /
    xla_flags: XLA's scheduler, pipelined host offloading (None: XLA's default), extra XLA options
    (``NAME=VALUE``, as ``--xla-flag`` takes them). memory_override_bytes: compile as if
    the target had this much HBM (the what-if). memory_fraction: compile as JAX does on a
    GPU whose allocator takes this fraction of the HBM (``XLA_PYTHON_CLIENT_MEM_FRACTION``);
    None: as a compile-only device, where XLA plans for 80% of the HBM. topology: for a TPU target,
    the slice's shape where one matters (``v5p:4x4x8``, or the Cloud TPU name ``v5p-256``; its device
    count must be ``devices``); None: the slice ``devices`` makes (``hloscope.compile.tpu.slices``).
    slices: for a TPU target, how many such slices the ``devices`` span, joined over the data-center
    network (DCN): ``devices`` is slices x devices per slice (``--slices``). per_core: for a TPU target
    whose chips join two TensorCores as one megacore device (v4, v5p), one device per TensorCore
    instead (``--per-core``: twice the devices per chip, each with half the chip's HBM).
    """

    target: str

    def __post_init__(self) -> None:
        if [self.workload, self.fn, self.maxtext].count(None) != 2:
            raise ValueError("a CompileRequest names exactly one of workload, fn and maxtext")
        if self.maxtext is not None and not isinstance(self.maxtext, tuple):
            object.__setattr__(self, "maxtext", tuple(self.maxtext))
        problem = None if self.memory_fraction is None else memory_fraction_problem(self.memory_fraction)
        if problem:
            raise ValueError(f"memory_fraction {problem}")
        # A policy or scheduler given by its value ("offload", "lhs") is the enum member.
        if self.policy is not None and not isinstance(self.policy, Policy):
            object.__setattr__(self, "policy", Policy(self.policy))
        if not isinstance(self.scheduler, Scheduler):
            object.__setattr__(self, "scheduler", Scheduler(self.scheduler))

    @property
    def layout(self) -> Layout:
        """Where the devices are, beyond their count (the platform rooms read it)."""
        return Layout(self.topology, self.slices, self.per_core)

    @property
    def sets_dict(self) -> dict[str, str]:
        return dict(self.sets)

    @property
    def workload_settings(self) -> dict[str, str]:
        """The workload's settings as ``workloads.resolve`` takes them: the ``--set`` overrides and the policy."""
        sets = self.sets_dict
        if self.policy is not None:
            sets["policy"] = self.policy.value
        return sets

    @property
    def label(self) -> str:
        if self.maxtext is not None:
            what = "--maxtext " + " ".join(self.maxtext)
        else:
            what = f"workload {self.workload}" if self.workload else f"--fn {self.fn}"
        shape = f" {self.topology}" if self.topology else ""
        shape += f", {self.slices} slices" if self.slices != 1 else ""
        shape += ", per core" if self.per_core else ""
        return f"{what} ({self.target}{shape}, {self.devices} devices, scheduler {self.scheduler.value})"

    def to_record(self) -> dict[str, object]:
        """The request as JSON-able data (an artifact folder's manifest ``request``; :meth:`from_record`).
        ``cwd`` is left out: where the user's module was imported from does not change the compile."""
        return {"target": self.target, "devices": self.devices, "workload": self.workload,
                "sets": [list(kv) for kv in self.sets], "policy": self.policy.value if self.policy else None,
                "fn": self.fn, "args": self.args, "scheduler": self.scheduler.value, "pipelined": self.pipelined,
                "xla_flags": list(self.xla_flags), "memory_override_bytes": self.memory_override_bytes,
                "memory_fraction": self.memory_fraction,
                **({"maxtext": list(self.maxtext)} if self.maxtext is not None else {}),
                **({"topology": self.topology} if self.topology else {}),
                **({"slices": self.slices} if self.slices != 1 else {}),
                **({"per_core": True} if self.per_core else {})}

    @classmethod
    def from_record(cls, record: Mapping[str, object]) -> CompileRequest | None:
        """The request :meth:`to_record` wrote; None when ``record`` is not one (an older manifest)."""
        try:
            sets = record.get("sets") or []
            flags = record.get("xla_flags") or []
            devices = record["devices"]
            override = record.get("memory_override_bytes")
            fraction = record.get("memory_fraction")
            maxtext = record.get("maxtext")
            slices = record.get("slices", 1)
            if not isinstance(slices, int) or isinstance(slices, bool):
                return None
            if not isinstance(sets, list) or not isinstance(flags, list) or not isinstance(devices, int):
                return None
            if maxtext is not None and not isinstance(maxtext, list):
                return None
            return cls(str(record["target"]), devices, _text(record.get("workload")),
                       tuple((str(k), str(v)) for k, v in sets), _policy(record.get("policy")),
                       _text(record.get("fn")), _text(record.get("args")), None,
                       Scheduler(str(record.get("scheduler") or Scheduler.LHS.value)),
                       _flag(record.get("pipelined", True)), tuple(str(f) for f in flags),
                       override if isinstance(override, int) else None,
                       float(fraction) if isinstance(fraction, int | float) else None,
                       tuple(str(m) for m in maxtext) if maxtext is not None else None,
                       _text(record.get("topology")), slices, record.get("per_core") is True)
        except (KeyError, TypeError, ValueError):
            return None

    def same_compile(self, other: CompileRequest) -> bool:
        """Whether ``other`` asks for the same compile (all but the folder the user's module is imported from)."""
        return self.to_record() == other.to_record()


#: The mesh axis across a TPU target's slices: data parallel over the data-center network (MaxText's
#: default ``dcn_data_parallelism: -1``), the axes inside a slice over ICI.
DATA_AXIS = "data"


@dataclass(frozen=True)
class Layout:
    """Where a compile's devices are, beyond their count: for a TPU target, the slice's shape
    (``topology``; None: the one the device count makes), the ``slices`` joined over DCN, and whether
    each TensorCore is a device (``per_core``) where two make one megacore device. A GPU takes the
    default only."""

    topology: str | None = None
    slices: int = 1
    per_core: bool = False

    @property
    def is_default(self) -> bool:
        return self == Layout()


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _flag(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def _policy(value: object) -> Policy | None:
    return Policy(value) if isinstance(value, str) and value else None


def xla_flag_texts(flags: Mapping[str, object]) -> list[str]:
    """XLA options as ``--xla-flag`` and :attr:`CompileRequest.xla_flags` write them (``NAME=VALUE``,
    booleans as true/false)."""
    return [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in flags.items()]


def callable_name(fn: object) -> str:
    """``module:qualified.name`` of a Python function: how a request names a step given as a function."""
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", "step"))
    return f"{getattr(fn, '__module__', '?')}:{name}"
