from __future__ import annotations

import pytest

from hloscope.hlo.shape import ShapeError, parse_shape


@pytest.mark.parametrize(
    "text, etype, dims, nbytes, space",
    [
        ("f32[]", "f32", (), 4, 0),
        ("bf16[4,8,1024]{2,1,0}", "bf16", (4, 8, 1024), 65536, 0),
        ("bf16[4,8,1024]{2,1,0:S(5)}", "bf16", (4, 8, 1024), 65536, 5),
        ("f32[8,128]{1,0:T(8,128)}", "f32", (8, 128), 4096, 0),
        ("bf16[16,128]{1,0:T(8,128)(2,1)S(5)}", "bf16", (16, 128), 4096, 5),
        ("s4[3]{0}", "s4", (3,), 2, 0),
        ("f32[<=4,8]{1,0}", "f32", (4, 8), 128, 0),
        ("pred[7]", "pred", (7,), 7, 0),
        ("token[]", "token", (), 0, 0),
        ("f8e4m3fn[10]{0}", "f8e4m3fn", (10,), 10, 0),
    ],
)
def test_array_shapes(text: str, etype: str, dims: tuple[int, ...], nbytes: int, space: int) -> None:
    s = parse_shape(text)
    assert (s.element_type, s.dims, s.byte_size, s.memory_space) == (etype, dims, nbytes, space)


def test_dynamic_dimension_is_flagged() -> None:
    s = parse_shape("f32[<=4,8]{1,0}")
    assert s.dynamic == (True, False)


def test_nested_tuple_with_index_comments() -> None:
    s = parse_shape("((bf16[4,8]{1,0:S(5)}, s32[]), bf16[4,8]{1,0:S(5)}, /*index=2*/u32[])")
    assert s.is_tuple and len(s.tuple_shapes) == 3
    assert s.tuple_shapes[0].tuple_shapes[0].memory_space == 5
    assert s.byte_size == 64 + 4 + 64 + 4
    assert s.in_memory_space(5)
    assert [leaf.element_type for leaf in s.leaves()] == ["bf16", "s32", "bf16", "u32"]


@pytest.mark.parametrize("bad", ["f32[4", "q77[4]", "f32[a,b]", "(f32[], ", "f32[4]{1,0"])
def test_malformed_shapes_raise(bad: str) -> None:
    with pytest.raises(ShapeError):
        parse_shape(bad)
