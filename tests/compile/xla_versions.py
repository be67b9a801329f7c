"""Facts only the newest tested XLA produces, marked so the oldest-JAX CI run (jax 0.9.2, .ci/run)
skips them with what was measured there instead (docs/jax-versions.md); and ``JAX012``, which tells the
jax 0.12 CI run (jaxlib 0.12.0.1) from the jax 0.10 one where XLA 0.12 compiles or names a thing
otherwise, each test asserting what it read by hand on each."""

from __future__ import annotations

import pytest

from hloscope.compile.seam.jaxcompat import jaxlib_at_least

NEWEST = jaxlib_at_least(0, 10)
#: jaxlib 0.12 or newer (the Python 3.12 CI run, .ci/run): figures read on 0.12.0.1 apply; else those
#: read on 0.10.2.
JAX012 = jaxlib_at_least(0, 12)


def read_on_jaxlib_0_10(measured_on_0_9: str) -> pytest.MarkDecorator:
    """Skip on jaxlib < 0.10, saying what jaxlib 0.9.2 did instead."""
    return pytest.mark.skipif(not NEWEST, reason=f"read on jaxlib 0.10's XLA; on 0.9.2: {measured_on_0_9}")


#: jax 0.9's lowering for compile-only devices: memory kinds on arguments and results do not reach XLA.
MEMORY_KINDS = read_on_jaxlib_0_10(
    "a memory kind on an argument or result does not reach XLA (the entry layout has no S(5)/S(6); a host "
    "result fails with E1200 CompileTimeHostOffloadOutputLocationMismatch)")
#: XLA 0.9's peak memory figure does not count host buffers.
XLA_PEAK_HOST = read_on_jaxlib_0_10("XLA's peak figure does not count the host heap (121412412 B, below the "
                                    "226076908 B device allocation)")
