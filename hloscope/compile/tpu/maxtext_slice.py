"""MaxText's TPU slices, as the TPU compile room checks them (``hloscope compile --maxtext``): the slice of
a request, and whether MaxText's own ``accelerator_to_spec_map`` names the same slice."""

from __future__ import annotations

from typing import Any

from hloscope.compile.tpu.slices import TpuSlice, slice_of
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.request import Layout
from hloscope.targets import TpuTarget


def maxtext_slice(target: TpuTarget, devices: int, layout: Layout | None = None) -> TpuSlice:
    """The TPU slices of ``devices`` devices in all (or of the layout's ``topology``) of ``target``; one line
    (exit 2) for ``per_core``: MaxText's map has megacore slices only for v4 and v5p."""
    lay = layout or Layout()
    if lay.per_core:
        raise HloscopeError("--maxtext --per-core: MaxText's accelerator_to_spec_map.py compiles v4 and v5p "
                            "slices as megacore only (one device per chip)", EXIT_BAD_INPUT)
    return slice_of(target, devices, lay.topology, lay.slices, lay.per_core)


def check_maxtext_slice(found: TpuSlice, spec: Any) -> None:
    """One line (exit 2) when MaxText's ``accelerator_to_spec_map`` names no slice ``found.maxtext_name``
    (``spec`` None) or gives that name another slice than hloscope's (shape, chip config, chips per host,
    wrap-around): the report would then name a slice MaxText did not compile for."""
    name = found.maxtext_name
    if spec is None:
        raise HloscopeError(f"--maxtext: MaxText names no TPU slice {name} ({found.name}); take a slice its "
                            "accelerator_to_spec_map.py lists (--devices N, or --topology with its name)",
                            EXIT_BAD_INPUT)
    want = found.topology_kwargs()
    got = {"topology_name": spec.topology_name, "chip_config_name": spec.chip_config_name,
           "chips_per_host_bounds": tuple(spec.chips_per_host_bounds), "wrap": tuple(spec.wrap)}
    differ = [k for k, v in got.items() if v != want[k]]
    if differ:
        raise HloscopeError(f"--maxtext: MaxText's {name} is not hloscope's {found.name} ({', '.join(differ)} "
                            f"differ: {', '.join(f'{k}={got[k]}' for k in differ)})", EXIT_BAD_INPUT)
