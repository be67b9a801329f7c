"""Read a ``jax.profiler`` XSpace (``*.xplane.pb``) into a measured profile, through jaxlib.

Contract: :func:`read_xplane` parses the file's bytes (read once by
``hloscope.hlo.profile_files.read_measured_file``) with
``jax.profiler.ProfileData.from_serialized_xspace`` (the compile layer is where JAX may be
imported) and hands the events to
``hloscope.analysis.measured.compare.profile_from_events``: every event whose stats carry ``hlo_op``
is an op of the execution its ``hlo_module`` and ``run_id`` stats name; an event with
``hlo_module`` and no ``hlo_op`` times that execution, else the span of its ops does (XLA:CPU
traces have no module events). Without jaxlib, one line names the ``compile`` extra (exit 7);
a file jaxlib cannot read is bad input (exit 2). :func:`load_measured` reads any measured
profile (the CLI and the TUI call it): the file once, then the parser of its form.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from hloscope.analysis.measured.compare import MeasuredProfile, profile_from_events, runs_from_spans
from hloscope.analysis.measured.read import parse_measured
from hloscope.errors import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, HloscopeError
from hloscope.hlo.profile_files import ProfileFile, ProfileForm, read_measured_file

__all__ = ["load_measured", "read_xplane"]


def load_measured(path: str | Path) -> MeasuredProfile:
    """A measured profile by content, for every face that takes one: an ``.xplane.pb`` here,
    through jaxlib; anything else through ``hloscope.analysis.measured.read``."""
    file = read_measured_file(path)
    if file.form is ProfileForm.XPLANE:
        return read_xplane(file)
    return parse_measured(file)


def read_xplane(file: ProfileFile, module_name: str = "") -> MeasuredProfile:
    """The measured profile in an XSpace's bytes (``file.form`` is ``XPLANE``)."""
    path = file.source
    try:
        from jax.profiler import ProfileData
    except ImportError:
        raise HloscopeError(f"{path}: reading an .xplane.pb needs jaxlib: pip install 'hloscope[compile]'",
                            EXIT_ENVIRONMENT) from None
    try:
        data = ProfileData.from_serialized_xspace(file.data)
        planes = list(data.planes)
    except Exception as e:  # jaxlib's parse errors carry no type of their own
        raise HloscopeError(f"{path}: not a readable .xplane.pb ({type(e).__name__}: {str(e)[:120]})",
                            EXIT_BAD_INPUT) from None
    ops: dict[object, list[tuple[str, int, int]]] = defaultdict(list)
    modules: dict[object, str] = {}
    runs: dict[object, tuple[str, int, int]] = {}
    for plane in planes:
        for line in plane.lines:
            for ev in line.events:
                stats: dict[str, Any] = dict(ev.stats)
                module = stats.get("hlo_module")
                if module is None:
                    continue
                key = (str(module), str(stats.get("run_id", "")))
                start, dur = round(float(ev.start_ns)), round(float(ev.duration_ns))
                if "hlo_op" in stats:
                    ops[key].append((str(stats["hlo_op"]), start, dur))
                    modules[key] = str(module)
                else:
                    runs[key] = (str(module), start, dur)
    if not ops:
        raise HloscopeError(f"{path}: not a usable measured profile: no events with an 'hlo_op' stat (a trace of "
                            "XLA ops)", EXIT_BAD_INPUT)
    return profile_from_events(path, "xplane", {**runs_from_spans(ops, modules), **runs}, ops, module_name)
