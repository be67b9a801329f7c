from __future__ import annotations

import pytest

from hloscope.hlo.attributes import AttributeError_, parse_attribute_list, parse_braced_map


def test_commas_inside_strings_and_brackets_do_not_split() -> None:
    text = ('channel_id=1, replica_groups=mesh[\'axis_0\'=8,\'axis_1\'=1] {\'axis_0\'}, dimensions={0}, '
            'metadata={op_name="jit(f)/a,b" source_line=3}, backend_config={"a":{"n":"4"},"b":[1,2]}')
    attrs = parse_attribute_list(text)
    assert list(attrs) == ["channel_id", "replica_groups", "dimensions", "metadata", "backend_config"]
    assert attrs["replica_groups"] == "mesh['axis_0'=8,'axis_1'=1] {'axis_0'}"
    assert attrs["backend_config"] == '{"a":{"n":"4"},"b":[1,2]}'


def test_replica_group_forms() -> None:
    assert parse_attribute_list("replica_groups={{0,1},{2,3}}")["replica_groups"] == "{{0,1},{2,3}}"
    assert parse_attribute_list("replica_groups=[2,4]<=[8]")["replica_groups"] == "[2,4]<=[8]"


def test_unknown_attributes_are_kept() -> None:
    attrs = parse_attribute_list("some_future_attr={x=1}, flag")
    assert attrs == {"some_future_attr": "{x=1}", "flag": ""}


def test_braced_map() -> None:
    m = parse_braced_map('{op_name="jit(step)/dot \\"q\\"" stack_frame_id=9 scheduling_name="x"}')
    assert m == {"op_name": 'jit(step)/dot "q"', "stack_frame_id": "9", "scheduling_name": "x"}
    assert parse_braced_map('{_xla_buffer_placement="pinned_host"}') == {"_xla_buffer_placement": "pinned_host"}


@pytest.mark.parametrize("bad", ["a={1", "a=(1]", "a=1}"])
def test_unbalanced(bad: str) -> None:
    with pytest.raises(AttributeError_):
        parse_attribute_list(bad)
