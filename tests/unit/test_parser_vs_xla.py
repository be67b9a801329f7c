"""Cross-check hloscope's parser against XLA's own C++ parser shipped in jaxlib.

For every HLO fixture: same computations (XLA adds ``async_wrapped*``
computations when it desugars ``fusion-start`` etc.), and in each computation
the same instruction names in the same order, the same opcodes and the same
operands.
"""

from __future__ import annotations

import re

import pytest

from hloscope.hlo.parser import parse_hlo
from tests.conftest import FIXTURES

HLO_FILES = sorted(
    [p for p in FIXTURES.glob("*.hlo.txt")] + [p for p in (FIXTURES / "dump_mlp_offload").glob("*optimizations.txt")],
    key=lambda p: p.name,
)
_SPECIAL = {
    "kOptimizationBarrier": "opt-barrier", "kTopK": "topk", "kExp": "exponential",
    "kExpm1": "exponential-minus-one", "kLog1p": "log-plus-one",
}


def xla_opcode(enum_name: str) -> str:
    if enum_name in _SPECIAL:
        return _SPECIAL[enum_name]
    return re.sub(r"(?<!^)(?=[A-Z])", "-", enum_name[1:]).lower()


@pytest.mark.xla
@pytest.mark.parametrize("path", HLO_FILES, ids=[p.name for p in HLO_FILES])
def test_parser_agrees_with_xla(path) -> None:  # type: ignore[no-untyped-def]
    from jax._src.lib import hlo as xla_hlo

    text = path.read_text()
    ours = parse_hlo(text, str(path))
    ours.self_check()
    theirs = xla_hlo.hlo_module_from_text(text)
    their_comps = {c.name: c for c in theirs.computations()}
    extra = set(their_comps) - set(ours.computations)
    assert all(name.startswith("async_wrapped") for name in extra), extra
    assert set(ours.computations) <= set(their_comps)
    checked = 0
    for name, comp in ours.computations.items():
        xc = their_comps[name]
        their_ins = list(xc.instructions())
        assert [i.name for i in comp.instructions] == [i.name for i in their_ins], name
        for a, b in zip(comp.instructions, their_ins, strict=True):
            assert a.opcode == xla_opcode(b.opcode.name), (name, a.name)
            assert list(a.operands) == [o.name for o in b.operands()], (name, a.name)
            checked += 1
    assert checked == ours.instruction_count() > 100
