"""The backend a module was compiled for, in words (``analyze``'s note on a non-GPU module)."""

from __future__ import annotations

from hloscope.analysis.structure.backend import Backend, BackendEvidence, CompiledFor

_EVIDENCE = {
    BackendEvidence.DUMP_FILE_NAME: "XLA named the dump file {where}",
    BackendEvidence.BACKEND_CONFIG: "XLA's CPU backend config on {where}",
    BackendEvidence.CUSTOM_CALL: "custom call {where}",
}


def backend_note(found: CompiledFor, target: str) -> str:
    """One sentence when ``found`` is not a GPU module, else "" (nothing to say)."""
    if found.backend is not Backend.CPU:
        return ""
    why = _EVIDENCE[found.evidence].format(where=found.where)
    return (f"this module was compiled for the CPU, not a GPU ({why}): its schedule says nothing about a GPU; "
            f"the figures below model it on {target} anyway, and --fail-on exits 8 on it (nothing to judge)")
