"""The CUDA plugin's log, on in every test process before its first compile test.

XLA's GPU plugin reads its log settings once, when its logging starts (its first topology, or jax's
backends starting), and keeps them for the life of the process. hloscope turns the log on for its
own first topology (``compile.cuda.topology._plugin_logging``) and reads the scheduler and estimator
from it (``compile.cuda.scheduler.read_run``). A test that starts jax's backends itself first (the
jaxpr readers in ``tests/compile/intent/`` trace and run steps) leaves the plugin's log off for the
rest of its worker, and the compile tests after it read "XLA's log was not available". Which test
runs first in a worker depends on the collection order (``tests/compile/intent/`` sorts before
``tests/compile/test_*.py``), so each worker makes hloscope's first topology before its first
xla-tier test here, as ``hloscope compile`` does in its own process.
"""

from __future__ import annotations

import importlib.util

import pytest

_STARTED: list[bool] = []


@pytest.fixture(autouse=True)
def _the_plugin_log_on_first(request: pytest.FixtureRequest) -> None:
    if _STARTED or request.node.get_closest_marker("xla") is None or importlib.util.find_spec("jaxlib") is None:
        return
    _STARTED.append(True)
    import sys

    if "jax" in sys.modules:
        from hloscope.compile.seam.jaxcompat import backends_started

        if backends_started():
            return  # too late for this worker: a test outside tests/compile/ started jax first
    from hloscope.compile.cuda.topology import compile_only_devices
    from hloscope.targets import get_target

    compile_only_devices(get_target("h100-sxm"), 8)
