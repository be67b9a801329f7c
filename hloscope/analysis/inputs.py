"""What the analysis of one step reads: the one typed input every loader builds.

Loaders (``hloscope.artifact.load_report`` for files, dump and artifact folders and
stdin; ``hloscope.compile.run.jobs.analyze_result`` for a compile; the API) read what
they have into a frozen :class:`StepInputs`; ``hloscope.analysis.report.analyze_step``
turns it into a complete, frozen report. Nothing is added to a report afterwards:
what a report shows comes from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from hloscope.analysis.intent.model import Intent
from hloscope.analysis.memory import CompileFigures
from hloscope.analysis.structure.backend import CompiledFor, find_backend
from hloscope.analysis.structure.name_records import NameRecord
from hloscope.hlo.model import Module
from hloscope.hlo.xla_dumps import XlaDumpTexts


@dataclass(frozen=True)
class ScheduleRun:
    """Which scheduler XLA ran for a compile and what drove it, as the compile recorded it
    (``hloscope.compile.cuda.scheduler``; the manifest's ``scheduler`` key, docs/compile.md).

    name: ``lhs`` (the latency hiding scheduler ran) or ``none``. estimator: ``sol``,
    ``approximate``, ``analytical``, ``pgle``, or None (LHS did not run, or XLA's log was not
    read: ``source`` says how it was found). requested: the scheduler asked for (``lhs``,
    ``lhs-approx``, ``none``; None: left to XLA). sol_table: the device table of the
    speed-of-light estimator (``default`` when XLA had none for the GPU). reason: XLA's
    words when it fell back from the speed-of-light estimator.
    """

    name: str
    estimator: str | None = None
    requested: str | None = None
    source: str = ""
    sol_table: str | None = None
    reason: str | None = None

    def to_record(self) -> dict[str, str | None]:
        """The compile's record of this run (the manifest's ``scheduler`` object); :meth:`from_record` reads it."""
        return {"name": self.name, "estimator": self.estimator, "requested": self.requested,
                "source": self.source, "sol_table": self.sol_table, "reason": self.reason}

    @classmethod
    def from_record(cls, record: object) -> ScheduleRun | None:
        """From the compile's record (a manifest's ``scheduler`` object); None when there is none."""
        if not isinstance(record, Mapping) or not isinstance(record.get("name"), str) or not record["name"]:
            return None

        def text(key: str) -> str | None:
            value = record.get(key)
            return value if isinstance(value, str) and value else None

        return cls(record["name"], text("estimator"), text("requested"), text("source") or "",
                   text("sol_table"), text("reason"))


@dataclass(frozen=True)
class StepInputs:
    """One step to analyze, with everything its source carries.

    module: the parsed (optimized) module. label: how to name the step to the user (a
    path, ``<compiled>``). text: the HLO text the module was parsed from, when the caller
    keeps it (the TUI's line lookups), else None.
    names: the step's ``checkpoint_name`` records (:class:`NameRecord`, read once from the JSON
    form of ``hloscope.compile.seam.names``), when it was traced here or its artifact folder lists them.
    memory_figures: the compile's memory figures, raw ints as the compile layer records
    them (docs/compile.md), None when the step was not compiled here (a plain HLO file).
    dumps: XLA's memory texts of the compile (``hloscope.hlo.xla_dumps``).
    manifest: an artifact folder's manifest, read once by the loader (None otherwise).
    notes: facts about how the input was read (which file of a folder), for the views.
    vocab_size: the model's vocabulary size, when known (lets a ``[..., vocab]`` buffer be
    called logits). compile: the compile's settings and figures for the report's
    ``compile`` section (docs/json-schema.md): ``memory``, ``xla_options``,
    ``compile_seconds`` and what was compiled (``workload``/``config`` or ``fn``/``args``);
    None when the step was not compiled in this run.
    intent: what the step asked to offload, read from its trace
    (``hloscope.analysis.intent.model.Intent``; None: unknown). unoptimized: the module before
    optimizations, when the source has it (an artifact or dump folder, a compile): the
    intent accounting tells a placement JAX dropped from one XLA removed with it.
    scheduler: which scheduler and estimator XLA ran for this compile (:class:`ScheduleRun`;
    None when unknown: a plain HLO file, an older artifact folder).
    versions: the package versions of the compile (``jaxlib`` -> ``0.12.0.1``: a compile here,
    an artifact folder's manifest); empty when unknown (a plain HLO file, an XLA dump folder).
    figures: the compile's memory figures derived once (device allocation, host total, XLA's
    report totals: :class:`~hloscope.analysis.memory.CompileFigures`), when the loader has them
    (a compile's ``CompileResult.figures``); None: the memory pass derives them from ``memory_figures``.
    compiled_for: the backend the loader found the module compiled for, when it had more to go on
    than the module (a TPU dump's ``target_arguments.txt``); None: :attr:`backend` reads the module.
    """

    module: Module
    label: str = ""
    text: str | None = None
    names: tuple[NameRecord, ...] = ()
    memory_figures: Mapping[str, int] | None = None
    dumps: XlaDumpTexts = field(default_factory=XlaDumpTexts)
    manifest: Mapping[str, Any] | None = None
    notes: tuple[str, ...] = ()
    vocab_size: int | None = None
    compile: Mapping[str, Any] | None = None
    intent: Intent | None = None
    unoptimized: Module | None = None
    scheduler: ScheduleRun | None = None
    versions: Mapping[str, str] = field(default_factory=dict)
    figures: CompileFigures | None = None
    compiled_for: CompiledFor | None = None

    @cached_property
    def backend(self) -> CompiledFor:
        """The backend the step was compiled for (:func:`~hloscope.analysis.structure.backend.find_backend`),
        decided once: the loader's finding, else the module's own evidence."""
        return self.compiled_for or find_backend(self.module, self.label)

    @property
    def has_memory(self) -> bool:
        """Whether the compile's memory figures are known (memory facts can be built)."""
        return self.memory_figures is not None and "temp_size_in_bytes" in self.memory_figures


def int_figures(figures: Mapping[str, Any]) -> dict[str, int]:
    """The integer figures of a memory mapping (a manifest's JSON may hold others)."""
    return {k: v for k, v in figures.items() if isinstance(v, int) and not isinstance(v, bool)}
