"""Parser gaps found on held-out XLA modules, each with the module that showed it.

- A ``while`` written without its result shape: XLA infers it from the loop's
  operand (the state the loop carries); hloscope must too.
- A module split over two adjacent C++ raw strings in XLA's tests
  (``BalanceChainedCollectivePermutesLoopedEinsum{,2,3}``): the compiler joins
  them into one string; the corpus extractor must too, or it writes two non-modules.
  And the expected text of a parser-test table entry (``{"Name", R"(input)",
  R"(expected)"}``) belongs to that entry, not to "file_scope".
"""

from __future__ import annotations

import importlib.util
import re

import pytest

from hloscope.hlo.parser import parse_hlo
from hloscope.hlo.shape import parse_shape
from tests.conftest import FIXTURES
from tests.xla_corpus import CORPUS, load_manifest, xla_module

WHILE_WITHOUT_SHAPE = """HloModule while_without_shape

cond {
  p = (s32[], f32[4]) parameter(0)
  i = get-tuple-element(p), index=0
  n = s32[] constant(8)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  p = (s32[], f32[4]) parameter(0)
  i = get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = add(i, one)
  x = get-tuple-element(p), index=1
  y = add(x, x)
  ROOT t = tuple(next, y)
}

ENTRY main {
  zero = s32[] constant(0)
  x0 = f32[4] parameter(0)
  init = tuple(zero, x0)
  loop = while(init), condition=cond, body=body
  ROOT out = get-tuple-element(loop), index=1
}
"""


def _extractor():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("extract_xla_tests", FIXTURES / "extract_xla_tests.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_while_without_its_shape_has_its_operands_shape() -> None:
    m = parse_hlo(WHILE_WITHOUT_SHAPE, "while.hlo")
    m.self_check()
    loop, init = m.entry.by_name["loop"], m.entry.by_name["init"]
    assert str(loop.shape) == "(s32[], f32[4])" and loop.shape == init.shape
    assert loop.shape == m.computations["body"].root.shape  # what the body hands the next iteration
    assert str(m.entry.by_name["out"].shape) == "f32[4]"


@pytest.mark.xla
def test_xla_infers_the_same_while_shape() -> None:
    theirs = xla_module(WHILE_WITHOUT_SHAPE)
    loop = next(i for c in theirs.computations() if c.name == "main" for i in c.instructions() if i.name == "loop")
    printed = re.match(r"%loop = (.*) while\(", loop.to_string())
    assert printed is not None
    ours = parse_hlo(WHILE_WITHOUT_SHAPE).entry.by_name["loop"].shape
    theirs_shape = parse_shape(printed.group(1))
    assert [(s.element_type, s.dims) for s in ours.leaves()] == [(s.element_type, s.dims) for s in theirs_shape.leaves()]


def test_adjacent_raw_strings_are_one_module() -> None:
    # Given a test source with one module over two raw strings (a comment between them), then two strings
    # that are separate arguments
    source = ('TEST_F(LatencyHidingSchedulerTest, Split) {\n'
              '  absl::string_view hlo_string = R"(\nHloModule m\n%c { ROOT p = f32[] parameter(0) }\n)"  // joined\n'
              '      R"(\nENTRY e { ROOT x = f32[] constant(0) }\n)";\n'
              '  Run(R"(HloModule n\nENTRY e { ROOT y = f32[] constant(1) })", R"(ENTRY f {})");\n'
              '}\n')
    # When the extractor reads it, Then the first two are one module at the first literal's line
    found = _extractor().extract(source)
    assert [(name, line) for name, line, _ in found] == [("Split", 2), ("Split", 9), ("Split", 10)]
    assert found[0][2] == "\nHloModule m\n%c { ROOT p = f32[] parameter(0) }\n\nENTRY e { ROOT x = f32[] constant(0) }\n"


@pytest.mark.parametrize("test", ["BalanceChainedCollectivePermutesLoopedEinsum",
                                  "BalanceChainedCollectivePermutesLoopedEinsum2",
                                  "BalanceChainedCollectivePermutesLoopedEinsum3"])
def test_the_split_corpus_modules_are_whole(test: str) -> None:
    entries = [e for e in load_manifest()["modules"] if e["test"] == test]
    assert [e["file"] for e in entries] == [f"latency_hiding_scheduler/{test}.hlo"]
    assert entries[0]["xla_accepts"]
    m = parse_hlo((CORPUS / entries[0]["file"]).read_text(), entries[0]["file"])
    m.self_check()
    # the entry (second raw string) calls the fusions (first raw string)
    called = {c for i in m.entry.instructions for c in i.called_computations}
    assert m.entry_name == "entry" and called and called <= set(m.computations) - {"entry"}


def test_the_second_string_of_a_table_entry_is_named_by_the_entry() -> None:
    source = ('std::vector<NonRoundtripTestData> CreateNonRoundtripTestCases() {\n'
              'return std::vector<NonRoundtripTestData>({\n'
              '{\n"SimpleNesting",\nR"(HloModule test\nENTRY test { ROOT r = f32[] parameter(0) })",\n'
              'R"(HloModule test, entry_computation_layout={()->f32[]}\nENTRY test { ROOT r = f32[] parameter(0) })"\n'
              '},\n});\n}\n')
    assert [(name, line) for name, line, _ in _extractor().extract(source)] == [("SimpleNesting", 5),
                                                                               ("SimpleNesting", 7)]
    # and the corpus holds no module without its test's name
    assert not [e["file"] for e in load_manifest()["modules"] if e["test"] == "file_scope"]
