"""Layout-free parsing: the same module written the ways people paste it.

Each variant below is read by XLA's C++ parser (checked in
test_layouts_are_valid_for_xla) and must give hloscope the same facts as the
printer-shaped original.
"""

from __future__ import annotations

import pytest

from hloscope.errors import HloParseError, HloscopeError
from hloscope.hlo.loader import load_module_or_text, looks_like_hlo_text
from hloscope.hlo.parser import parse_hlo, parse_printer_shaped
from tests.conftest import FIXTURES

PRINTED = """HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %t = (f32[4]{0}, f32[4]{0}) tuple(%x, %x)
  %g = f32[4]{0} get-tuple-element(%t), index=1
  %cp = f32[4]{0} collective-permute(%g), channel_id=1, source_target_pairs={{0,1},{1,0}}
  ROOT %ar = f32[4]{0} all-reduce(%cp), replica_groups={{0,1}}, to_apply=%add
}
"""

LAYOUTS = {
    "blank lines and indentation before the header": "\n\n    " + PRINTED.replace("\n", "\n    "),
    "comments on their own lines and inside instructions": PRINTED.replace(
        "HloModule m", "// a repro\n/* from a bug report */\nHloModule m").replace(
        "  %x = f32[4]{0} parameter(0)", "  // the input\n  %x = f32[4]{0} /* rank 1 */ parameter(0) // x"),
    "operand list split across lines": PRINTED.replace("tuple(%x, %x)", "tuple(\n      %x,\n      %x\n  )"),
    "attribute values split across lines": PRINTED.replace(
        "source_target_pairs={{0,1},{1,0}}", "source_target_pairs={\n    {0,1},\n    {1,0}\n  }").replace(
        "replica_groups={{0,1}}, to_apply=%add", "\n    replica_groups={{0,1}},\n    to_apply=%add"),
    "header attributes on the next line": PRINTED.replace(
        "HloModule m, entry", "HloModule m,\n  entry"),
    "attributes after a computation's closing brace": PRINTED.replace(
        "ROOT %s = f32[] add(%a, %b)\n}", 'ROOT %s = f32[] add(%a, %b)\n}, execution_thread="main"'),
    "names without %": PRINTED.replace("%", ""),
    "result shapes left out where XLA infers them": PRINTED.replace(
        "%g = f32[4]{0} get-tuple-element", "%g = get-tuple-element").replace(
        "%t = (f32[4]{0}, f32[4]{0}) tuple", "%t = tuple"),
    "one line": " ".join(PRINTED.split()),
    "CRLF line ends": PRINTED.replace("\n", "\r\n"),
}


def facts(text: str) -> list[tuple[str, str, str, tuple[str, ...], str, bool]]:
    m = parse_hlo(text, "t.hlo")
    m.self_check()
    return [(c.name, i.name, i.opcode, i.operands, str(i.shape.dims), i.is_root)
            for c in m.computations.values() for i in c.instructions]


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_layout_reads_like_the_printed_module(name: str) -> None:
    assert facts(LAYOUTS[name]) == facts(PRINTED)


@pytest.mark.xla
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_layouts_are_valid_for_xla(name: str) -> None:
    from tests.xla_corpus import xla_verdict

    assert xla_verdict(LAYOUTS[name]) is None


def test_only_the_printed_layout_takes_the_fast_path() -> None:
    parse_printer_shaped(PRINTED)
    with pytest.raises(HloParseError):
        parse_printer_shaped(LAYOUTS["operand list split across lines"])


def test_split_attribute_values_are_normalised() -> None:
    m = parse_hlo(LAYOUTS["attribute values split across lines"])
    cp = m.entry.by_name["cp"]
    assert cp.attrs["source_target_pairs"] == "{{0,1}, {1,0}}"
    assert m.entry.by_name["ar"].called_computations == ("add",)
    assert m.attrs == parse_hlo(PRINTED).attrs


def test_inferred_shapes() -> None:
    m = parse_hlo(LAYOUTS["result shapes left out where XLA infers them"])
    t, g = m.entry.by_name["t"], m.entry.by_name["g"]
    assert t.shape.is_tuple and [s.dims for s in t.shape.tuple_shapes] == [(4,), (4,)]
    assert g.shape == t.shape.tuple_shapes[1]


def test_nested_instructions_get_xla_names() -> None:
    text = "HloModule m\nENTRY e {\n  ROOT r = f32[2] add(f32[2] parameter(0), negate(f32[2] parameter(1)))\n}\n"
    m = parse_hlo(text)
    assert [(i.name, i.operands) for i in m.entry.instructions] == [
        ("parameter.anon", ()), ("parameter.anon.1", ()), ("negate.anon", ("parameter.anon.1",)),
        ("r", ("parameter.anon", "negate.anon"))]


def test_headerless_module_is_named_like_xla_names_it() -> None:
    m = parse_hlo("ENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n")
    assert (m.name, m.entry_name) == ("module_e", "e")


BAD = [
    ("/* never closed\nHloModule m\n", 1, 1, "unterminated comment"),
    ("HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0), a=$0\n}\n", 3, 34, "'$' is not valid HLO"),
    ("HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0), backend_config=\"x\n}\n", 3, 47, "unterminated string"),
    ("HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0)\n  ROOT q = f32[] parameter(1)\n}\n", 4, 8,
     "a second ROOT"),
    ("HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\nENTRY f {\n  ROOT p = f32[] parameter(0)\n}\n", 5, 1,
     "a second ENTRY"),
    ("HloModule m\nENTRY e {\n  ROOT n = negate(q)\n  q = f32[] parameter(0), a={{{\n}\n", 6, 1, "inside the '{' at 4:29); is the file truncated?"),
    ("HloModule m\nENTRY e {\n  ROOT n = bitcast(p)\n  p = f32[] parameter(0)\n}\n", 3, 12, "cannot infer"),
    ("HloModule m\nENTRY e {\n  ROOT t = " + "(" * 100 + "f32[]" + ")" * 100 + " tuple()\n}\n", 3, 76,
     "nested deeper than 64"),
]


@pytest.mark.parametrize("text, line, col, msg", BAD, ids=[b[3] for b in BAD])
def test_general_path_errors_have_positions(text: str, line: int, col: int, msg: str) -> None:
    with pytest.raises(HloParseError) as exc:
        parse_hlo(text, "bad.hlo")
    assert (exc.value.line, exc.value.column) == (line, col), str(exc.value)
    assert msg in str(exc.value) and str(exc.value).startswith(f"bad.hlo:{line}:{col}: ")


PASTES = {
    "indented": "   HloModule m\n  ENTRY e {\n ROOT p = f32[] parameter(0)\n}\n",
    "comment first": "// from the bug\nHloModule m\nENTRY e {\n ROOT p = f32[] parameter(0)\n}\n",
    "block comment first": "/* x */ ENTRY e { ROOT p = f32[] parameter(0) }",
    "headerless computation": "\n\nmain {\n ROOT p = f32[] parameter(0)\n}\n",
}


@pytest.mark.parametrize("name", list(PASTES))
def test_text_is_told_from_a_path_by_content(name: str) -> None:
    assert looks_like_hlo_text(PASTES[name])
    assert load_module_or_text(PASTES[name]).entry.instructions[0].name == "p"


def test_paths_are_read_as_paths() -> None:
    path = str(FIXTURES / "mlp_offload.hlo.txt")
    assert not looks_like_hlo_text(path) and not looks_like_hlo_text(str(FIXTURES / "dump_mlp_offload"))
    assert load_module_or_text(path).source_path == path


@pytest.mark.parametrize("bad, msg", [("", "empty input"), ("  \n", "empty input"),
                                      ("x" * 5000, "File name too long"), ("/no/such.hlo", "no such file")])
def test_bad_text_or_path_is_one_line_error(bad: str, msg: str) -> None:
    with pytest.raises(HloscopeError) as exc:
        load_module_or_text(bad)
    assert msg in str(exc.value) and "\n" not in str(exc.value) and len(str(exc.value)) < 200
