"""What one deviceless compile produced: :class:`CompileResult` (plain data, no JAX).

Made once, never patched: the compile (``hloscope.compile.step.deviceless``) builds it
from XLA's output, a cache hit and a request-memo hit build it from a stored record.
Its one record form, :meth:`CompileResult.to_record` / :meth:`CompileResult.from_record`,
is what the compile cache stores, what the request memo points at, what the child
process sends back to the parent and what the artifact manifest is written from.

Its own module so that the compile cache (``hloscope.compile.step.cache``) can build one
without importing the compiler (``hloscope.compile.step.deviceless``, which imports the
cache): no import cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, TypedDict, cast

from hloscope.analysis.inputs import ScheduleRun
from hloscope.analysis.intent.manifest import intent_from_dict, intent_to_dict
from hloscope.analysis.intent.model import Intent
from hloscope.analysis.memory import CompileFigures, derive_figures
from hloscope.analysis.structure.name_records import NameRecord
from hloscope.hlo.xla_dumps import XlaDumpTexts

#: The value of an XLA compiler option as hloscope passes it.
XlaOptionValue = bool | int | float | str


class CompileMemory(TypedDict, total=False):
    """XLA's byte figures of one compile (``compiled.memory_analysis()``, docs/compile.md), all bytes.

    device_memory_size: the HBM XLA compiled for (the target's, or the what-if's override).
    allocator_bytes: what JAX's allocator takes of it, with ``--memory-fraction`` only.
    """

    argument_size_in_bytes: int
    output_size_in_bytes: int
    alias_size_in_bytes: int
    temp_size_in_bytes: int
    generated_code_size_in_bytes: int
    peak_memory_in_bytes: int
    host_argument_size_in_bytes: int
    host_output_size_in_bytes: int
    host_alias_size_in_bytes: int
    host_temp_size_in_bytes: int
    device_memory_size: int
    allocator_bytes: int


def memory_figures(memory: CompileMemory) -> dict[str, int]:
    """The figures of ``memory`` as the analysis reads them (name -> bytes)."""
    return cast(dict[str, int], dict(memory))


#: The figures of :class:`CompileMemory` that ``compiled.memory_analysis()`` reports.
XLA_MEMORY_FIELDS = ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes", "temp_size_in_bytes",
                     "generated_code_size_in_bytes", "peak_memory_in_bytes", "host_argument_size_in_bytes",
                     "host_output_size_in_bytes", "host_alias_size_in_bytes", "host_temp_size_in_bytes")


class CacheInfo(TypedDict, total=False):
    """The compile cache's word on one result (``hloscope.compile.step.cache``).

    hit: whether the result came from the cache. key: the entry's key (absent: the cache was
    off). compiled_seconds: what XLA's compile took when the entry was made. stored: whether a
    fresh compile was written to the cache. via: ``request`` when the request memo found the
    entry without tracing (a sweep's rerun).
    """

    hit: bool
    key: str
    compiled_seconds: float
    stored: bool
    via: Literal["request"]


@dataclass(frozen=True)
class CompileResult:
    """What one deviceless compile produced.

    optimized_hlo / unoptimized_hlo: HLO text after / before XLA's passes.
    memory: XLA's byte figures (:class:`CompileMemory`).
    options: the XLA compiler options passed, name -> value.
    versions: package versions; target: target name; devices: device count;
    mesh_shape: mesh axis -> size.
    compile_seconds: wall time of this call's lower + compile (a cache hit: trace, lower, read).
    device_memory_size: the HBM size, bytes, XLA compiled for (the target's, or
    ``memory_override_bytes`` when one was given).
    extra_files: artifact file name -> text: XLA's memory-usage report, the live-at-peak
    section of its live-range dump, the buffer-assignment lines of those values, XLA's
    scheduler log lines (names in ``hloscope.hlo.xla_dumps``).
    tensor_names: the step's ``checkpoint_name`` call sites read from its jaxpr
    (``hloscope.compile.seam.names``), one :class:`NameRecord` each, written in its JSON form
    (:meth:`NameRecord.to_json`); the analysis matches transfers to them.
    cache: the compile cache's word on this result (:class:`CacheInfo`).
    intent: what the traced step asked to offload (``hloscope.analysis.intent.model.Intent``), None if unread.
    scheduler: which scheduler ran and which latency estimator drove it
    (:class:`~hloscope.analysis.inputs.ScheduleRun`, the one record of it: the analysis reads this
    same object), None when not read; written as the manifest's ``scheduler`` key.
    topology: the compile-only topology the devices came from (``2x16x4``) and how it
    is wired (``hloscope.compile.cuda.topology``).
    compiled: the ``jax.stages.Compiled`` (in the process that compiled it, on a fresh compile only).

    Two results are equal when the compile produced the same thing: ``compile_seconds``,
    ``cache`` and ``compiled`` say how this call got it and are left out of the comparison
    (a cache hit equals the fresh compile it was stored from).
    """

    optimized_hlo: str
    unoptimized_hlo: str
    memory: CompileMemory
    options: dict[str, XlaOptionValue]
    versions: dict[str, str]
    target: str
    devices: int
    mesh_shape: dict[str, int]
    compile_seconds: float = field(default=0.0, compare=False)
    device_memory_size: int = 0
    extra_files: dict[str, str] = field(default_factory=dict)
    tensor_names: tuple[NameRecord, ...] = ()
    cache: CacheInfo = field(default_factory=lambda: CacheInfo(), compare=False)
    intent: Intent | None = None
    scheduler: ScheduleRun | None = None
    topology: str = ""
    compiled: object = field(default=None, repr=False, compare=False)

    @cached_property
    def figures(self) -> CompileFigures:
        """The memory figures derived once from :attr:`memory` and XLA's memory-usage report in
        :attr:`extra_files` (device allocation, host total, report totals): what the manifest, the
        report's ``compile.memory``, the memory facts and a sweep row read."""
        return derive_figures(memory_figures(self.memory), XlaDumpTexts.from_files(self.extra_files))

    def to_record(self) -> dict[str, object]:
        """Every field but ``compiled`` as JSON-able data; :meth:`from_record` reads it back equal."""
        return {
            "optimized_hlo": self.optimized_hlo, "unoptimized_hlo": self.unoptimized_hlo,
            "memory": dict(self.memory), "options": dict(self.options), "versions": dict(self.versions),
            "target": self.target, "devices": self.devices, "mesh_shape": dict(self.mesh_shape),
            "compile_seconds": self.compile_seconds, "device_memory_size": self.device_memory_size,
            "extra_files": dict(self.extra_files),
            "tensor_names": [t.to_json() for t in self.tensor_names], "cache": dict(self.cache),
            "intent": intent_to_dict(self.intent) if self.intent is not None else None,
            "scheduler": self.scheduler.to_record() if self.scheduler is not None else None,
            "topology": self.topology,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, object], compiled: object = None) -> CompileResult:
        """The result :meth:`to_record` wrote (the cache's entry, the child process's answer).
        ``compiled``: the ``jax.stages.Compiled``, in the process that made it."""
        return cls(
            optimized_hlo=str(record["optimized_hlo"]), unoptimized_hlo=str(record.get("unoptimized_hlo") or ""),
            memory=cast(CompileMemory, _ints(record.get("memory"))),
            options=cast(dict[str, XlaOptionValue], dict(_mapping(record.get("options")))),
            versions={str(k): str(v) for k, v in _mapping(record.get("versions")).items()},
            target=str(record["target"]), devices=int(cast(int, record["devices"])),
            mesh_shape=_ints(record.get("mesh_shape")),
            compile_seconds=float(cast(float, record.get("compile_seconds") or 0.0)),
            device_memory_size=int(cast(int, record.get("device_memory_size") or 0)),
            extra_files={str(k): str(v) for k, v in _mapping(record.get("extra_files")).items()},
            tensor_names=tuple(NameRecord.from_json(t) for t in cast(list[Mapping[str, object]],
                                                                     record.get("tensor_names") or [])),
            cache=cast(CacheInfo, dict(_mapping(record.get("cache")))),
            intent=intent_from_dict(record.get("intent")),
            scheduler=ScheduleRun.from_record(record.get("scheduler")),
            topology=str(record.get("topology") or ""),
            compiled=compiled,
        )


def _mapping(value: object) -> Mapping[str, object]:
    return cast(Mapping[str, object], value) if isinstance(value, Mapping) else {}


def _ints(value: object) -> dict[str, int]:
    return {str(k): int(cast(int, v)) for k, v in _mapping(value).items()}
