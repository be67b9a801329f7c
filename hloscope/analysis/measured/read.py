"""Measured profiles from their files: ``parse_measured(file)`` -> a :class:`MeasuredProfile`.

The file (``analyze --measured``, ``calibrate``, the TUI) is read once by
``hloscope.hlo.profile_files.read_measured_file``, which tells its form by content. An nsys-jax
archive, ``jax.profiler``'s Chrome trace JSON and its XSpace (``.xplane.pb``) are read by
``hloscope.hlo.profiles`` (no JAX; GPU, CPU and TPU profiles) and their executions become one
profile through :func:`~hloscope.analysis.measured.compare.profile_from_events`. An XLA PGLE
profile (``ProfiledInstructionsProto``, text or binary ``profile.pb``) holds one figure per op,
no executions and no intervals. Bad input is one :class:`~hloscope.errors.HloscopeError` (exit 2).
"""

from __future__ import annotations

from hloscope.analysis.cost.calibration import parse_profile_bytes
from hloscope.analysis.measured.compare import MeasuredProfile, OpStats, profile_from_events
from hloscope.hlo.profile_files import ProfileFile, ProfileForm
from hloscope.hlo.profiles import read_events

__all__ = ["parse_measured"]


def parse_measured(file: ProfileFile, module_name: str = "") -> MeasuredProfile:
    """The measured profile in ``file``. ``module_name``: which module's executions to keep when
    the file has several (default: the one with the most op rows)."""
    if file.form is ProfileForm.PGLE:
        return _read_pgle(file.data, file.source)
    return profile_from_events(read_events(file), module_name)


def _read_pgle(data: bytes, source: str) -> MeasuredProfile:
    times = parse_profile_bytes(data, source)
    ops = {n: OpStats(n, us, 0.0, 1) for n, us in times.items()}
    return MeasuredProfile(source, "pgle", "", (), ops)
