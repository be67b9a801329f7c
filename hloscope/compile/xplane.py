"""Read a ``jax.profiler`` XSpace (``*.xplane.pb``) into a measured profile, through jaxlib.

Contract: :func:`read_xplane` opens the file with ``jax.profiler.ProfileData.from_file`` (the
compile layer is where JAX may be imported) and hands the events to
``hloscope.analysis.measured.profile_from_events``: every event whose stats carry ``hlo_op``
is an op of the execution its ``hlo_module`` and ``run_id`` stats name; an event with
``hlo_module`` and no ``hlo_op`` times that execution, else the span of its ops does (XLA:CPU
traces have no module events). Without jaxlib, one line names the ``compile`` extra (exit 7);
a file jaxlib cannot read is bad input (exit 2). :func:`load_measured` picks the reader of any
measured profile by content (the CLI and the TUI call it).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from hloscope.analysis.measured import MeasuredProfile, profile_from_events, runs_from_spans
from hloscope.analysis.measured_read import looks_like_xplane, read_measured
from hloscope.errors import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, HloscopeError
from hloscope.hlo.archive import known_archive

__all__ = ["load_measured", "read_xplane"]


def load_measured(path: str | Path) -> MeasuredProfile:
    """A measured profile by content, for every face that takes one: an ``.xplane.pb`` here,
    through jaxlib; anything else through ``hloscope.analysis.measured_read``."""
    if known_archive(path) is not None:  # an nsys-jax archive read already: nothing to sniff
        return read_measured(path)
    try:
        with open(path, "rb") as f:
            head = f.read(65536)
    except OSError as e:
        raise HloscopeError(f"{path}: cannot read profile: {e.strerror or e}", EXIT_BAD_INPUT) from None
    if head and looks_like_xplane(path, head):
        return read_xplane(path)
    return read_measured(path)


def read_xplane(path: str | Path, module_name: str = "") -> MeasuredProfile:
    try:
        from jax.profiler import ProfileData
    except ImportError:
        raise HloscopeError(f"{path}: reading an .xplane.pb needs jaxlib: pip install 'hloscope[compile]'",
                            EXIT_ENVIRONMENT) from None
    try:
        data = ProfileData.from_file(str(path))
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
    return profile_from_events(str(path), "xplane", {**runs_from_spans(ops, modules), **runs}, ops, module_name)
