"""The TPU slice a step was compiled for, as Cloud TPU names it (``v5p-128``: 64 chips, topology 4x4x4).

The facts come from the compile (its ``tpu_slice``, written by ``hloscope.compile.run.jobs.compile_job``
into the report's ``compile`` section and the artifact folder's manifest); a dump folder or an HLO
file does not say which slice it ran on, so nothing is shown for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hloscope.analysis.report import Report


def slice_facts(report: Report) -> Mapping[str, Any] | None:
    """The slice's facts (docs/json-schema.md, ``tpu_slice``), from the compile or the artifact's manifest."""
    for source in (report.compile, report.inputs.manifest):
        found = source.get("tpu_slice") if source is not None else None
        if isinstance(found, Mapping) and isinstance(found.get("name"), str):
            return found
    return None


def slice_line(report: Report) -> str:
    """``TPU slice: v5p-128 (64 chips, topology 4x4x4, 64 devices)``, or "" when the slice is not known."""
    f = slice_facts(report)
    if f is None:
        return ""
    slices = int(f.get("slices") or 1)
    name = f"{slices} x {f['name']} over DCN" if slices != 1 else str(f["name"])
    per_chip = int(f.get("devices_per_chip") or 1)
    devices = f"{f.get('devices')} devices" + (f", {per_chip} per chip" if per_chip != 1 else "")
    each = " each" if slices != 1 else ""
    return f"TPU slice: {name} ({f.get('chips')} chips, topology {f.get('topology')}{each}, {devices})"
