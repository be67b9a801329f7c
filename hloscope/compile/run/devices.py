"""Whether a request's device count can be compiled, checked before JAX starts.

:func:`check_devices` reads the request's target (a GPU's hosts and NVLink domains,
``hloscope.compile.cuda.topology``; a TPU's slices, ``hloscope.compile.tpu``) and its built-in
workload (the device counts that split its arguments), and says what is wrong in one line.
"""

from __future__ import annotations

from collections.abc import Callable

from hloscope.compile import workloads
from hloscope.compile.cuda.topology import topology_for
from hloscope.compile.tpu.slices import devices_per_chip, prefix_of, shape_for
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.request import CompileRequest
from hloscope.targets import GpuTarget, TpuTarget, get_target


def check_devices(request: CompileRequest, argument: str = "--devices") -> None:
    """One line (exit 2), before JAX starts, when ``request.devices`` cannot be a mesh of its target
    (:func:`~hloscope.compile.cuda.topology.topology_for`, a TPU slice, or several over DCN) or does not
    split its built-in workload's arguments (the device counts the workload takes are named:
    ``workloads.devices_problem``; over several slices, those of one slice). ``argument``: how the
    message names the device count (``--devices``, or the API's ``devices``)."""
    target = get_target(request.target)
    fits: Callable[[int], bool]
    devices = request.devices
    if isinstance(target, TpuTarget):  # a TPU slice (hloscope.compile.tpu.slices)
        # `hloscope tui` checks a request before its first screen and must not load the analysis there
        # lazy: the TPU room loads the analysis (its ScheduleRun); tests/tui/test_app.py
        from hloscope.compile.tpu.room import TpuRoom

        TpuRoom(target, request.layout).slice(request.devices, argument)
        per_chip, prefix = devices_per_chip(target, request.per_core), prefix_of(target)
        # over several slices a workload's own axes are inside one slice (data parallel across them)
        devices = request.devices // request.slices
        fits = lambda n: n % per_chip == 0 and shape_for(prefix, n // per_chip) is not None  # noqa: E731
    else:
        assert isinstance(target, GpuTarget)
        if request.topology is not None:
            raise HloscopeError(f"--topology names a TPU slice; {target.name} is a GPU (give --devices)",
                                EXIT_BAD_INPUT)
        if request.slices != 1 or request.per_core:
            raise HloscopeError(f"{'--slices' if request.slices != 1 else '--per-core'} is for a TPU target; "
                                f"{target.name} is a GPU (its hosts come from --devices)", EXIT_BAD_INPUT)
        topology_for(target, request.devices, argument)
        per_host = target.gpus_per_host
        fits = lambda n: n <= per_host or n % per_host == 0  # noqa: E731
    if request.workload is None:
        return
    _, cfg = workloads.resolve(request.workload, request.workload_settings)
    problem = workloads.devices_problem(request.workload, cfg, devices, fits,
                                        argument if request.slices == 1 else f"{argument} per slice")
    if problem:
        raise HloscopeError(problem, EXIT_BAD_INPUT)
