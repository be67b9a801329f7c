"""hloscope: did my host offloading actually get hidden, and if not, why not?

``hloscope.analyze(x)`` reads scheduled GPU HLO and judges every host transfer;
``hloscope.compile_step(fn, *args, target=..., out=DIR)`` compiles a JAX step for
a GPU target on a machine with no GPU, then analyzes it (and, with ``out``, writes
an artifact folder that ``analyze`` and every command read back). Both return a
``StepReport``: ``print(report)``, ``report.to_dict()``, ``report.dot()``.
``hloscope.assert_offloads_hidden(step, ...)`` asserts that no transfer is
synchronous or exposed (and further rules; docs/ci.md).
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from hloscope import compiled
from hloscope.errors import HloParseError, HloscopeError
from hloscope.native_stderr import quiet_first_jax_import

__version__ = "0.1.0"
__all__ = ["HloParseError", "HloscopeError", "OffloadCheckFailed", "__version__", "analyze", "assert_offloads_hidden",
           "check_offloads", "compile_maxtext", "compile_step", "make_mesh"]

# A script that imports hloscope before jax gets no CUDA-plugin lines on stderr from jax's import
# (hloscope.native_stderr.quiet_first_jax_import; standard library only, nothing of JAX).
quiet_first_jax_import()


# The compiled modules an install built run unless HLOSCOPE_PURE=1 or a source was edited since
# (then their sources run; hloscope.compiled). Before anything imports one of them.
compiled.choose(os.path.dirname(os.path.abspath(__file__)))

# The API is imported on first use, so `hloscope tui` and the CLI start without loading the analysis.
_LAZY = {"analyze": "hloscope.api", "compile_step": "hloscope.api", "compile_maxtext": "hloscope.api",
         "make_mesh": "hloscope.compile.step.deviceless",
         "OffloadCheckFailed": "hloscope.pytest_plugin.helpers",
         "assert_offloads_hidden": "hloscope.pytest_plugin.helpers",
         "check_offloads": "hloscope.pytest_plugin.helpers"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hloscope' has no attribute {name!r}")
