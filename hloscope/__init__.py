"""hloscope: did my host offloading actually get hidden, and if not, why not?

``hloscope.analyze(x)`` reads scheduled GPU HLO and judges every host transfer;
``hloscope.compile_step(fn, *args, target=...)`` compiles a JAX step for a GPU
target on a machine with no GPU, then analyzes it.
``hloscope.assert_offloads_hidden(step, ...)`` asserts that no transfer is
synchronous or exposed (and further rules; docs/ci.md).
"""

from hloscope.api import analyze, compile_step
from hloscope.errors import HloParseError, HloscopeError
from hloscope.pytest_plugin.helpers import OffloadCheckFailed, assert_offloads_hidden, check_offloads

__version__ = "0.1.0"
__all__ = ["HloParseError", "HloscopeError", "OffloadCheckFailed", "__version__", "analyze", "assert_offloads_hidden",
           "check_offloads", "compile_step"]
