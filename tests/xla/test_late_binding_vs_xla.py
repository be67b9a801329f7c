"""The late-binding modules of tests/analysis/structure/test_late_binding.py against jaxlib's parser (marked ``xla``).

jaxlib 0.12's parser reads each as hloscope does (same instructions, opcodes and operands, the
late-bound inputs after the chain operand); jaxlib 0.10.2's refuses each: its async-update and
async-done took exactly one operand, and an update its operand's shape.
"""

from __future__ import annotations

import pytest

from hloscope.hlo.parser import parse_hlo
from tests.analysis.structure.test_late_binding import MODULES
from tests.xla_corpus import compare_with_xla, jaxlib_version, xla_module, xla_verdict

pytestmark = pytest.mark.xla


@pytest.mark.parametrize("name", list(MODULES))
def test_xla_reads_late_binding_as_hloscope_does(name: str) -> None:
    text = MODULES[name]
    ours = parse_hlo(text)
    if jaxlib_version().startswith("0.12."):
        assert compare_with_xla(ours, xla_module(text)) == ours.instruction_count()
    else:
        error = xla_verdict(text)
        assert error is not None and "AsyncUpdate" in error, error
