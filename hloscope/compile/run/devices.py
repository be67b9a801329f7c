"""Whether a request's device count can be compiled, checked before JAX starts.

:func:`check_devices` reads the request's target (a GPU's hosts and NVLink domains,
``hloscope.compile.cuda.topology``; a TPU's slices, ``hloscope.compile.tpu``) and its built-in
workload (the device counts that split its arguments), and says what is wrong in one line.
"""

from __future__ import annotations

from hloscope.compile import workloads
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.request import CompileRequest
from hloscope.targets import get_target


def check_devices(request: CompileRequest, argument: str = "--devices") -> None:
    """One line (exit 2), before JAX starts, when ``request.devices`` cannot be a mesh of its target
    (:func:`~hloscope.compile.cuda.topology.topology_for`, a TPU slice, or several over DCN) or does not
    split its built-in workload's arguments (the device counts the workload takes are named:
    ``workloads.devices_problem``; over several slices, those of one slice). ``argument``: how the
    message names the device count (``--devices``, or the API's ``devices``)."""
    # `hloscope tui` checks a request before its first screen and must not load the analysis there
    # lazy: the rooms load the analysis (their ScheduleRun); tests/tui/test_app.py
    from hloscope.compile.step.rooms import room_for

    devices, fits = room_for(get_target(request.target), request.layout).check_request(request, argument)
    if request.workload is None:
        return
    _, cfg = workloads.resolve(request.workload, request.workload_settings)
    problem = workloads.devices_problem(request.workload, cfg, devices, fits,
                                        argument if request.slices == 1 else f"{argument} per slice")
    if problem:
        raise HloscopeError(problem, EXIT_BAD_INPUT)
