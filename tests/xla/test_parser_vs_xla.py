"""Cross-check hloscope's parser against XLA's own C++ parser shipped in jaxlib.

For every HLO fixture: same computations (XLA adds ``async_wrapped*``
computations when it desugars ``fusion-start`` etc.), and in each computation
the same instruction names in the same order, the same opcodes and the same
operands.
"""

from __future__ import annotations

import pytest

from hloscope.hlo.parser import parse_hlo
from tests.conftest import FIXTURES
from tests.xla_corpus import compare_with_xla, xla_module

HLO_FILES = sorted(
    [p for p in FIXTURES.glob("*.hlo.txt")] + [p for p in (FIXTURES / "dump_mlp_offload").glob("*optimizations.txt")],
    key=lambda p: p.name,
)


@pytest.mark.parametrize("path", HLO_FILES, ids=[p.name for p in HLO_FILES])
def test_parser_agrees_with_xla(path) -> None:  # type: ignore[no-untyped-def]
    text = path.read_text()
    ours = parse_hlo(text, str(path))
    ours.self_check()
    assert compare_with_xla(ours, xla_module(text)) == ours.instruction_count() > 100
