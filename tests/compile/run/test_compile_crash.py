"""A crashed compile child is XLA's failure in XLA's words, not "out of memory" (issue 30 item 3).

The fatal lines are XLA's own, quoted from public reports: marin-community/marin#1921 (absl format,
shape_tree.cc CHECK during DynamicSliceFusion emission), openxla/xla#47376 (absl, F0000 with a
Unix-time stamp) and jax-ml/jax#17730 (TensorFlow's older format, nvptx_compiler.cc).
"""

from __future__ import annotations

import os
import sys

import pytest

from hloscope.compile.run.jobs import run_isolated, xla_fatal
from hloscope.errors import EXIT_COMPILE_FAILED, HloscopeError

MARIN = ("F0912 11:59:01.941641  741969 shape_tree.cc:54] Check failed: result->children_start_id >= 0 (-1 vs. 0)\n"
         "*** Check failure stack trace: ***\n"
         "    @     0x7f0e2365c1d4  absl::lts_20230802::log_internal::LogMessage::SendToLog()\n")
XLA = "F0000 00:00:1786848211.450142 3821845 shape.h:852] Check failed: buffer != nullptr ((null) vs. (null))\n"
JAX = ("2024-02-27 16:32:33.075782: F external/xla/xla/service/gpu/nvptx_compiler.cc:614] Check failed: "
       "options.is_autotuning_compilation \nAborted (core dumped)\n")


def test_xlas_fatal_line_is_read_in_both_log_formats() -> None:
    assert xla_fatal(MARIN) == "Check failed: result->children_start_id >= 0 (-1 vs. 0) [shape_tree.cc:54]"
    assert xla_fatal(XLA) == "Check failed: buffer != nullptr ((null) vs. (null)) [shape.h:852]"
    assert xla_fatal(JAX) == "Check failed: options.is_autotuning_compilation [nvptx_compiler.cc:614]"
    assert xla_fatal("I0000 plugin loaded\nW0000 something\n") == ""


def _abort_like_xla() -> None:
    """What a failed CHECK does: the fatal line on fd 2, then abort()."""
    os.write(2, MARIN.encode())
    os.abort()


@pytest.mark.skipif(sys.platform != "linux", reason="the child's peak memory is read from Linux's rusage")
def test_an_aborted_compile_child_is_a_compiler_failure_with_xlas_message() -> None:
    with pytest.raises(HloscopeError) as e:
        run_isolated(_abort_like_xla)
    text = str(e.value)
    assert e.value.exit_code == EXIT_COMPILE_FAILED
    assert text.startswith("XLA crashed while compiling (SIGABRT): Check failed: result->children_start_id >= 0")
    assert "[shape_tree.cc:54]" in text and "not out of memory" in text and "ran out of memory" not in text
