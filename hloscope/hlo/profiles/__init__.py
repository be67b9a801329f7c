"""Measured profiles, one module per format: every profile hloscope reads is read here, without JAX.

- :mod:`~hloscope.hlo.profiles.xspace`: ``jax.profiler``'s XSpace protobuf, on the project's wire
  reader; :mod:`~hloscope.hlo.profiles.xplane` reads its executions.
- :mod:`~hloscope.hlo.profiles.chrome`: ``jax.profiler``'s Chrome trace JSON.
- :mod:`~hloscope.hlo.profiles.nsys`: an nsys-jax archive's projected GPU trace.
- :mod:`~hloscope.hlo.profiles.tpu`: how a TPU names and times its ops, shared by the first two.
- :mod:`~hloscope.hlo.profiles.events`: what they all return.

The file is opened once by ``hloscope.hlo.profile_files.read_measured_file``, which tells its
form; :func:`read_events` hands it to its reader. (A PGLE profile holds no events: one figure per
op, parsed by ``hloscope.analysis.cost.calibration``.)
"""

from __future__ import annotations

from hloscope.hlo.profile_files import ProfileFile, ProfileForm
from hloscope.hlo.profiles.chrome import read_chrome_events
from hloscope.hlo.profiles.events import AsyncEvent, Execution, OpEvent, ProfileEvents
from hloscope.hlo.profiles.nsys import read_nsys_events
from hloscope.hlo.profiles.xplane import read_xplane_events

__all__ = ["AsyncEvent", "Execution", "OpEvent", "ProfileEvents", "read_events"]


def read_events(file: ProfileFile) -> ProfileEvents:
    """The executions in a measured profile of form ``NSYS``, ``TRACE`` or ``XPLANE``."""
    if file.form is ProfileForm.NSYS:
        assert file.archive is not None  # read_measured_file gives an archive with this form
        return read_nsys_events(file.archive, str(file.form))
    if file.form is ProfileForm.TRACE:
        return read_chrome_events(file)
    if file.form is ProfileForm.XPLANE:
        return read_xplane_events(file)
    raise ValueError(f"{file.source}: a {file.form} profile holds no events")
