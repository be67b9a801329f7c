"""Cross-check hloscope's parser against XLA's own C++ parser shipped in jaxlib (0.10.2 or 0.12).

For every HLO fixture: same computations (XLA adds ``async_wrapped*``
computations when it desugars ``fusion-start`` etc.), and in each computation
the same instruction names in the same order, the same opcodes and the same
operands. The jax 0.12 dump folders (fixtures/jax012/) are checked too: the one written
with XLA 0.12's compact tuple-element operands (``%param.2#4``) against jaxlib 0.12's parser,
which reads each as a get-tuple-element placed before its first user as hloscope does
(named ``param.2_4`` there, ``param.2#4`` here); jaxlib 0.10.2's parser does not read that
form and stops at the first one.
"""

from __future__ import annotations

import re

import pytest

from hloscope.hlo.parser import parse_hlo
from tests.conftest import FIXTURES
from tests.xla_corpus import compare_with_xla, jaxlib_version, xla_module, xla_verdict

HLO_FILES = sorted(
    [p for p in FIXTURES.glob("*.hlo.txt")] + [p for p in (FIXTURES / "dump_mlp_offload").glob("*optimizations.txt")]
    + [p for p in (FIXTURES / "jax012").glob("*/*optimizations.txt")],
    key=lambda p: (p.parent.name, p.name),
)
COMPACT_READERS = ("0.12.",)  # jaxlibs whose parser reads XLA 0.12's compact tuple elements


@pytest.mark.parametrize("path", HLO_FILES, ids=[f"{p.parent.name}/{p.name}" for p in HLO_FILES])
def test_parser_agrees_with_xla(path) -> None:  # type: ignore[no-untyped-def]
    text = path.read_text()
    ours = parse_hlo(text, str(path))
    ours.self_check()
    compact = re.search(r"%[\w.\-]+#\d+", text)
    if compact is not None and not jaxlib_version().startswith(COMPACT_READERS):
        error = xla_verdict(text)
        assert error is not None and compact.group() in error.split("\n")[2], error
        return
    assert compare_with_xla(ours, xla_module(text)) == ours.instruction_count() > 100
