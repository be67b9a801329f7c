"""tests/parser_cases.py against the installed jaxlib's C++ parser (0.10.2 or 0.12; marked ``xla``):
it accepts exactly the cases recorded for its version, rejects the others at the recorded position,
and reads the accepted ones as hloscope does (hloscope reads a case one of them reads, unless the
case says why not)."""

from __future__ import annotations

import re

import pytest

from hloscope.hlo.parser import parse_hlo
from tests.parser_cases import CASES, Case
from tests.xla_corpus import compare_with_xla, jaxlib_version, xla_module, xla_verdict

pytestmark = pytest.mark.xla
JAXLIB = jaxlib_version()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_xla_agrees(case: Case) -> None:
    error = xla_verdict(case.text)
    at = case.xla_at_for(JAXLIB)
    assert (error is None) == (at is None), error
    if error is None and case.on_purpose:
        assert case.ours_at is not None  # refused on purpose (tests/hlo/test_parser_rejects.py: why)
    elif error is None:
        ours = parse_hlo(case.text)
        assert compare_with_xla(ours, xla_module(case.text)) == ours.instruction_count()
    else:
        where = {(int(a), int(b)) for a, b in re.findall(r"was parsing (\d+):(\d+): error", error)}
        assert at in where, error
