"""hloscope: did my host offloading actually get hidden, and if not, why not?

``hloscope.analyze(x)`` reads scheduled GPU HLO and judges every host transfer;
``hloscope.compile_step(fn, *args, target=...)`` compiles a JAX step for a GPU
target on a machine with no GPU, then analyzes it.
"""

from hloscope.api import analyze, compile_step
from hloscope.errors import HloParseError, HloscopeError

__version__ = "0.1.0"
__all__ = ["HloParseError", "HloscopeError", "analyze", "compile_step", "__version__"]
