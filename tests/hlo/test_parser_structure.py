"""The parser's per-line check of an attribute list (a string left open, unbalanced brackets)
reads a cached skeleton of the structural bytes; it must agree with counting them in the text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hloscope.hlo.parser import _Parser


def _counted(rest: str) -> tuple[bool, bool]:
    return ((rest.count('"') - rest.count('\\"')) % 2 == 1,
            rest.count("{") != rest.count("}") or rest.count("(") != rest.count(")")
            or rest.count("[") != rest.count("]"))


_PIECES = st.sampled_from(['"', "\\", '\\"', "{", "}", "(", ")", "[", "]", "a", " ", "=", ",", "é", "\\\\"])


@given(st.lists(st.lists(_PIECES, max_size=12).map("".join), min_size=1, max_size=20))
def test_structure_agrees_with_counting(rests: list[str]) -> None:
    parser = _Parser("", None)  # one parser: later lines hit skeletons cached by earlier ones
    for rest in rests:
        assert parser.structure(rest) == _counted(rest), rest


def test_structure_of_printed_attributes() -> None:
    parser = _Parser("", None)
    assert parser.structure(', metadata={op_name="jit(f)/dot" source_line=3}') == (False, False)
    assert parser.structure(', metadata={op_name="jit(f)/dot source_line=3}') == (True, False)
    assert parser.structure(", dimensions={0,1") == (False, True)
    assert parser.structure(', custom_call_target="a\\"b"') == (False, False)  # \\" is not a quote that closes
    assert parser.structure(', op_name="(é"') == (False, True)  # not ASCII: counted in the text
