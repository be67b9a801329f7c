"""The backend a module was compiled for, in words (``analyze``'s note on a non-GPU module)."""

from __future__ import annotations

from hloscope.analysis.report import Report
from hloscope.analysis.structure.backend import Backend, BackendEvidence, CompiledFor
from hloscope.render.platforms import platform_text
from hloscope.targets import target_for_tpu

_EVIDENCE = {
    BackendEvidence.DUMP_FILE_NAME: "XLA named the dump file {where}",
    BackendEvidence.TARGET_ARGUMENTS: "the dump's target_arguments.txt names {where}",
    BackendEvidence.LAYOUT: "TPU memory spaces (VMEM S(1), SMEM S(2)) in its layouts, first at {where}",
    BackendEvidence.BACKEND_CONFIG: "XLA's CPU backend config on {where}",
    BackendEvidence.CUSTOM_CALL: "custom call {where}",
    BackendEvidence.NONE: "nothing in it names a backend",
}
_BACKEND_CONFIG = {Backend.GPU: "XLA:GPU's backend config on {where}",
                   Backend.TPU: "XLA:TPU's backend config on {where}",
                   Backend.CPU: "XLA's CPU backend config on {where}", Backend.UNKNOWN: "{where}"}


def chip_words(found: CompiledFor) -> str:
    """The TPU chip a dump names, as Cloud TPU names it (``TPU v5e``), never by XLA's code name; a chip
    no built-in target knows: ``a TPU not known here (XLA's TPU_VERSION_...)``."""
    chip = target_for_tpu(found.tpu_version, found.tpu_variant)
    if chip is not None:
        return f"TPU {chip.generation}"
    return f"a TPU not known here (XLA's {found.where})"


def evidence_words(found: CompiledFor) -> str:
    """What showed the backend, in words."""
    if found.evidence is BackendEvidence.BACKEND_CONFIG:
        return _BACKEND_CONFIG[found.backend].format(where=found.where)
    if found.evidence is BackendEvidence.TARGET_ARGUMENTS:
        return _EVIDENCE[found.evidence].format(where=chip_words(found))
    return _EVIDENCE[found.evidence].format(where=found.where)


def platform_line(report: Report) -> str:
    """The header line that says which family the module was compiled for and what it is judged as,
    when that needs saying: a TPU step (and what showed it), or a module of the other family than
    its target's ("" for a GPU module judged as a GPU)."""
    found = report.compiled_for
    platform = found.backend.platform
    if platform is None:
        return ""
    if report.family_mismatch:
        return (f"note: this module was compiled for a {platform.upper()} ({evidence_words(found)}) but is judged as "
                f"{report.target.name}, a {report.platform.upper()} target: its schedule is the "
                f"{platform.upper()}'s; give a {platform.upper()} --target to judge it as it ran")
    return platform_text(platform).compiled_line(report, evidence_words(found))


def backend_note(found: CompiledFor, target: str) -> str:
    """One sentence when ``found`` is not a GPU module, else "" (nothing to say)."""
    if found.backend is not Backend.CPU:
        return ""
    why = evidence_words(found)
    return (f"this module was compiled for the CPU, not a GPU ({why}): its schedule says nothing about a GPU; "
            f"the figures below model it on {target} anyway, and --fail-on exits 8 on it (nothing to judge)")
