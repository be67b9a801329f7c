from __future__ import annotations

import pytest

from hloscope.errors import HloParseError
from hloscope.hlo.parser import parse_hlo
from tests.conftest import fixture_text

SMALL = """HloModule m, is_scheduled=true, entry_computation_layout={(f32[4]{0})->f32[4]{0}}, frontend_attributes={fingerprint_before_lhs="abc"}

FileNames
1 "/src/model.py"

FunctionNames
1 "layer"

FileLocations
1 {file_name_id=1 function_name_id=1 line=42 end_line=42 column=7 end_column=9}

StackFrames
1 {file_location_id=1 parent_frame_id=1}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%body (p: (s32[], f32[4])) -> (s32[], f32[4]) {
  %p = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %x = f32[4]{0} get-tuple-element(%p), index=1
  %ar = f32[4]{0} all-reduce(%x), replica_groups={{0,1}}, to_apply=%add, metadata={op_name="f(x)/a,b" stack_frame_id=1}
  ROOT %t = (s32[], f32[4]{0}) tuple(%i, %ar), control-predecessors={%ar}
}

%cond (p.1: (s32[], f32[4])) -> pred[] {
  %p.1 = (s32[], f32[4]{0}) parameter(0)
  %i.1 = s32[] get-tuple-element(%p.1), index=0
  %c = s32[] constant(3)
  ROOT %lt = pred[] compare(%i.1, %c), direction=LT
}

ENTRY %main (x.1: f32[4]) -> f32[4] {
  %x.1 = f32[4]{0} parameter(0), sharding={replicated}
  %zero = s32[] constant(0)
  %tup = (s32[], f32[4]{0}) tuple(%zero, %x.1)
  %w = (s32[], f32[4]{0}) while(%tup), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"3"}}
  %y = f32[4]{0} get-tuple-element(%w), index=1
  %cs = (f32[4]{0:S(5)}, f32[4]{0}, u32[]) copy-start(%y)
  ROOT %cd = f32[4]{0:S(5)} copy-done(%cs), some_future_attribute={1,2}
}
"""


def test_small_module_structure() -> None:
    m = parse_hlo(SMALL)
    assert m.name == "m" and m.is_scheduled and m.entry_name == "main"
    # The order XLA's printer gives the module (hlo/async_sugar.py order_computations): the while's body, whose
    # all-reduce calls add, before its condition.
    assert list(m.computations) == ["add", "body", "cond", "main"]
    assert m.frontend_attributes == {"fingerprint_before_lhs": "abc"}
    main = m.entry
    assert [i.name for i in main.instructions] == ["x.1", "zero", "tup", "w", "y", "cs", "cd"]
    assert [i.position for i in main.instructions] == list(range(7))
    w = main.by_name["w"]
    assert w.opcode == "while" and w.known_trip_count == 3
    assert w.called_computations == ("cond", "body")
    assert main.by_name["cd"].attrs["some_future_attribute"] == "{1,2}"
    assert main.root is main.by_name["cd"]
    assert main.by_name["cs"].shape.tuple_shapes[0].memory_space == 5
    assert main.by_name["zero"].literal == "0" and main.by_name["zero"].operands == ()


def test_metadata_and_source_locations() -> None:
    m = parse_hlo(SMALL)
    ar = m.computations["body"].by_name["ar"]
    assert ar.metadata["op_name"] == "f(x)/a,b"
    loc = m.source_location(ar)
    assert loc is not None and (loc.file, loc.function, loc.line, loc.column) == ("/src/model.py", "layer", 42, 7)
    assert m.computations["body"].by_name["t"].control_predecessors == ("ar",)
    assert ar.called_computations == ("add",)


def test_sugared_async_opcodes_are_canonical() -> None:
    m = parse_hlo(fixture_text("mlp_offload.hlo.txt"))
    starts = [i for c in m.computations.values() for i in c.instructions if i.text_opcode == "fusion-start"]
    assert starts and all(i.opcode == "async-start" and i.wrapped_opcode == "fusion" for i in starts)
    rs = [i for c in m.computations.values() for i in c.instructions if i.text_opcode == "reduce-scatter-start"]
    assert rs and rs[0].opcode == "async-start" and rs[0].wrapped_opcode == "reduce-scatter"
    ag = [i for c in m.computations.values() for i in c.instructions if i.text_opcode == "all-gather-start"]
    assert ag and ag[0].opcode == "all-gather-start" and ag[0].wrapped_opcode == ""


def test_dump_file_uses_generic_async_start(fixtures_dir) -> None:  # type: ignore[no-untyped-def]
    path = next((fixtures_dir / "dump_mlp_offload").glob("*after_optimizations.txt"))
    m = parse_hlo(path.read_text())
    starts = [i for c in m.computations.values() for i in c.instructions if i.text_opcode == "async-start"]
    assert starts and all(i.called_computations for i in starts)


def test_operands_with_shapes_older_syntax() -> None:
    text = "HloModule m\n\nENTRY e {\n  p = f32[4]{0} parameter(0)\n  ROOT n = f32[4]{0} negate(f32[4]{0} %p)\n}\n"
    m = parse_hlo(text)
    assert m.entry.by_name["n"].operands == ("p",)


def test_unknown_opcode_is_kept() -> None:
    text = "HloModule m\n\nENTRY e {\n  p = f32[4]{0} parameter(0)\n  ROOT n = f32[4]{0} brand-new-op(p), k=v\n}\n"
    ins = parse_hlo(text).entry.by_name["n"]
    assert ins.opcode == "brand-new-op" and ins.attrs == {"k": "v"}


BAD = [
    ("", 1, 1, "no 'HloModule' header"),
    ("garbage\n", 1, 1, "expected 'HloModule"),
    # The text ends inside a computation: named at the end of the text, with where it opened.
    ("HloModule m\n\nENTRY e {\n  p = f32[4]{0} parameter(0)\n", 5, 1,
     "computation 'e' opened at 3:9 is not closed: the text ends inside it; is the file truncated?"),
    ("HloModule m\n\nENTRY e {\n  p = f33[4]{0} parameter(0)\n}\n", 4, 7, "unknown element type 'f33'"),
    ("HloModule m\n\nENTRY e {\n  p = f32[4]{0} parameter(0)\n  ROOT n = f32[4]{0} negate(q)\n}\n", 5, 29,
     "operand 'q'"),
    # The error points at the bracket left open and names the closer that exposed it.
    ("HloModule m\n\nENTRY e {\n  p = f32[4]{0} parameter(0\n}\n", 4, 26,
     "'(' is not closed: expected ')' before the '}' at 5:1"),
    ("HloModule m\n\nENTRY e {\n  p = f32[4]{0} parameter(0\n", 5, 1, "inside the '(' at 4:26); is the file"),
    ("HloModule m\n\nENTRY e {\n  p = f32[4]{0} parameter(0), a={\n}\n", 6, 1, "opened at 3:9 is not closed"),
    ("HloModule m\n\nENTRY e {\n  p = f32[4]{0}\n}\n", 5, 1, "expected an opcode"),
    ("HloModule m\n\nENTRY e {\n  ROOT c = f32[4]{0} call(), to_apply=%nowhere\n}\n", 4, 40, "unknown computation"),
    ("HloModule m\n  p = f32[] parameter(0)\n", 2, 3, "outside a computation"),
]


@pytest.mark.parametrize("text, line, col, msg", BAD, ids=[b[3] for b in BAD])
def test_malformed_text_reports_line_and_column(text: str, line: int, col: int, msg: str) -> None:
    with pytest.raises(HloParseError) as exc:
        parse_hlo(text, "bad.hlo")
    err = exc.value
    assert (err.line, err.column) == (line, col), str(err)
    assert msg in str(err)
    assert str(err).startswith(f"bad.hlo:{line}:{col}: ")
    assert "\n" not in str(err)


def test_misnested_attributes_found_lazily_still_report_position() -> None:
    # Equal bracket counts pass the parse-time check; the lazy split finds the misnesting.
    text = "HloModule m\n\nENTRY e {\n  ROOT p = f32[4]{0} parameter(0), a={1], b=[2}\n}\n"
    m = parse_hlo(text, "m.hlo")
    with pytest.raises(HloParseError) as exc:
        _ = m.entry.by_name["p"].attrs
    assert str(exc.value).startswith("m.hlo:4:") and exc.value.line == 4 and exc.value.column == 40


def test_mutated_fixture_lines_never_crash() -> None:
    # Given real HLO with random single-character damage,
    # when it is parsed and analyzed,
    # then the only failure is a positioned HloParseError.
    import random

    from hloscope.analysis.report import analyze_module
    from hloscope.render.json_report import report_to_dict
    from hloscope.targets import get_target

    lines = fixture_text("mlp_offload.hlo.txt").split("\n")
    rng = random.Random(1234)
    errors = 0
    for _ in range(300):
        damaged = list(lines)
        i = rng.randrange(len(damaged))
        if damaged[i]:
            j = rng.randrange(len(damaged[i]))
            damaged[i] = damaged[i][:j] + rng.choice("(){}[],=%\" ") + damaged[i][j + 1 :]
        try:
            report_to_dict(analyze_module(parse_hlo("\n".join(damaged), "d.hlo"), get_target("h100-sxm")))
        except HloParseError as e:
            errors += 1
            assert e.line >= 1 and e.column >= 1 and str(e).startswith("d.hlo:")
    assert errors > 50
