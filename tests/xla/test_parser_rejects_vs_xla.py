"""tests/parser_cases.py against jaxlib's C++ parser (marked ``xla``): XLA accepts exactly the
cases hloscope accepts, rejects the others at the recorded position, and reads the accepted ones
as hloscope does."""

from __future__ import annotations

import re

import pytest

from hloscope.hlo.parser import parse_hlo
from tests.parser_cases import CASES, Case
from tests.xla_corpus import compare_with_xla, xla_module, xla_verdict

pytestmark = pytest.mark.xla


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_xla_agrees(case: Case) -> None:
    error = xla_verdict(case.text)
    assert (error is None) == (case.xla_at is None) == (case.ours_at is None), error
    if error is None:
        ours = parse_hlo(case.text)
        assert compare_with_xla(ours, xla_module(case.text)) == ours.instruction_count()
    else:
        where = {(int(a), int(b)) for a, b in re.findall(r"was parsing (\d+):(\d+): error", error)}
        assert case.xla_at in where, error
