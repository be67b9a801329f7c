"""What of XLA's native log reaches the terminal (hloscope.native_stderr.terminal_lines).

``fixtures/jax012/xla-logs/mlp_offload.stderr-head.log`` is the first 400 lines of the native
stderr of a jax 0.12.0.1 compile of the mlp offload step with the worker's log settings
(``fixtures/generate_jax012_logs.py``), unedited. Read by hand: every line is a glog line (INFO)
except 12: four absl status blocks, each three lines after the glog line
``sol_latency_estimator.cc:523] Failed to compute collective time: INVALID_ARGUMENT: Unsupported
collective instruction: %fusion-start = ...``: ``=== Source Location Trace: ===``,
``external/xla+/xla/service/gpu/model/sol_latency_estimator.cc:424`` and `` for fusion-start``.
Before, those continuation lines went to the terminal (150 blocks, 450 lines, for llama with 2 layers).
"""

from __future__ import annotations

import pytest

from hloscope.native_stderr import NATIVE_NOISE, terminal_lines
from tests.conftest import FIXTURES

pytestmark = pytest.mark.jax_version  # what each libtpu/XLA version writes to stderr

HEAD = FIXTURES / "jax012" / "xla-logs" / "mlp_offload.stderr-head.log"


def test_the_status_blocks_of_xla_012_stay_off_the_terminal() -> None:
    text = HEAD.read_text()
    lines = text.splitlines()
    assert len(lines) == 400
    continuation = [ln for ln in lines if not NATIVE_NOISE.search(ln)]
    assert len(continuation) == 12 and sum("=== Source Location Trace: ===" in ln for ln in continuation) == 4
    assert sum(ln.endswith("sol_latency_estimator.cc:424") for ln in continuation) == 4
    assert terminal_lines(text) == []


def test_what_is_not_noise_still_reaches_the_terminal() -> None:
    block = "\n".join(HEAD.read_text().splitlines()[270:275])  # a status block and the glog line after it
    assert "=== Source Location Trace: ===" in block
    error = "E1202 14:46:03.564700    7458 gpu_compiler.cc:10] something failed"
    warning = "/x/y.py:3: UserWarning: a Python warning"
    kept = terminal_lines("\n".join([block, error, "    with its own indented detail", block, warning,
                                     "  warnings.warn(", block]))
    # An error and its continuation, a Python warning and its source line; the INFO blocks dropped.
    assert kept == [error, "    with its own indented detail", warning, "  warnings.warn("]
