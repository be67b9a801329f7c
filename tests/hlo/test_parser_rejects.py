"""hloscope accepts what XLA's parser accepts and rejects, in one positioned line, what it rejects.

The cases (tests/parser_cases.py) are the ones issue 28's held-out set found read the
other way; XLA's verdicts are checked against jaxlib in tests/xla/test_parser_rejects_vs_xla.py.
"""

from __future__ import annotations

import pytest

from hloscope.cli import main
from hloscope.errors import HloParseError
from hloscope.hlo.general import parse_general
from hloscope.hlo.loader import parse_text
from hloscope.hlo.parser import parse_hlo, parse_printer_shaped
from tests.conftest import FIXTURES
from tests.parser_cases import CASES, Case
from tests.xla_corpus import rejected_on_purpose


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_reads_as_xla_does(case: Case) -> None:
    # hloscope reads what one supported XLA reads, unless the case says why it refuses it.
    assert (case.ours_at is None) == (case.some_xla_reads and not case.on_purpose)
    if case.on_purpose:
        assert rejected_on_purpose(case.words) == case.on_purpose
    if case.ours_at is None:
        parse_hlo(case.text, "case.hlo").self_check()
        return
    with pytest.raises(HloParseError) as exc:
        parse_hlo(case.text, "case.hlo")
    err = exc.value
    assert (err.line, err.column) == case.ours_at, str(err)
    assert case.words in err.reason and "\n" not in str(err)


def test_inline_computations_are_named_as_xla_names_them() -> None:
    # XLA prints the two in-place computations of this module as %_ and %_.1 (jaxlib 0.10.2).
    text = ("HloModule m\n\nENTRY main {\n  p = s32[] parameter(0)\n"
            "  start = ((s32[]), s32[], s32[]) call-start(p), to_apply={ a = s32[] parameter(0) ROOT b = s32[] abs(a) }\n"
            "  d = s32[] call-done(start)\n  ROOT c = s32[] call(d), to_apply={\n    x = s32[] parameter(0)\n"
            "    ROOT n = s32[] negate(x)\n  }\n}\n")
    m = parse_hlo(text)
    # The sugared call-start gets the computation XLA's parser builds for it, named as XLA names it
    # (async_wrapped, of async_param and the op, jaxlib 0.10.2), in the order XLA's printer gives the module
    # (hlo/async_sugar.py).
    assert list(m.computations) == ["_", "async_wrapped", "_.1", "main"]
    assert m.computations["main"].by_name["start"].called_computations == ("async_wrapped",)
    assert [i.name for i in m.computations["async_wrapped"].instructions] == ["async_param", "call"]
    assert m.computations["async_wrapped"].by_name["call"].called_computations == ("_",)
    assert m.computations["main"].by_name["c"].called_computations == ("_.1",)
    assert [i.opcode for i in m.computations["_.1"].instructions] == ["parameter", "negate"]
    assert m.computations["_.1"].line == 7


def test_a_real_module_cut_in_half_is_named_truncated() -> None:
    # Given the 32-layer-style llama offload step cut at half its characters: the cut lands in
    # line 1858, the parameter of region_0.5_spmd.clone (its '{' is column 842 of line 1857), inside
    # the '(' of the parameter's tuple shape at column 22 (read by hand).
    text = (FIXTURES / "llama_offload.hlo.txt").read_text()
    half = text[: len(text) // 2]
    with pytest.raises(HloParseError) as exc:
        parse_text(half, "half.hlo")
    err = exc.value
    assert err.truncated and (err.line, err.column) == (1858, 557)
    assert err.reason == ("computation 'region_0.5_spmd.clone' opened at 1857:842 is not closed: the text ends "
                          "inside it (inside the '(' at 1858:22); is the file truncated?")


def test_cli_exit_2_one_line(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    case = next(c for c in CASES if c.id == "no-break space indentation")
    path = tmp_path / "pasted.hlo"
    path.write_text(case.text, encoding="utf-8")
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"hloscope: error: {path}:4:1: character U+00A0 (no-break space) is not whitespace XLA "
                   "reads: replace it with a plain space")


def test_non_ascii_inside_strings_keeps_the_fast_path() -> None:
    # op_name with a non-ASCII character (a user's function name): read printer-shaped, the same
    # model as the general path builds; a no-break space outside strings is still refused.
    case = next(c for c in CASES if c.id == "no-break space inside a string")
    fast = parse_printer_shaped(case.text)
    general = parse_general(case.text)
    assert [i.attr_text for i in fast.computations["main"].instructions] == [
        i.attr_text for i in general.computations["main"].instructions]
    assert fast.computations["main"].by_name["n"].metadata == {"op_name": "a\u00a0b"}


def test_the_loop_crossing_async_update_is_read_and_its_transfer_judged(capsys) -> None:  # type: ignore[no-untyped-def]
    # issue 46 item 7: jaxlib 0.12 reads it, hloscope exited 2 ("an async-update's first operand must be an
    # async-start or async-update"). Read by hand in the case: one dynamic-update-slice-start of f32[1,8] (32 B)
    # into host memory (S(5)) in main, its context carried through the loop's state, the done after the loop.
    from hloscope.analysis.structure.index import ModuleIndex
    from hloscope.analysis.structure.pairs import pair_async_ops
    from tests.parser_cases import LOOP_CROSSING_DUS

    module = parse_hlo(LOOP_CROSSING_DUS, "loop.hlo")
    module.self_check()
    pairs = pair_async_ops(ModuleIndex(module))
    assert [(p.start.name, p.done.name, p.crosses_iteration) for p in pairs] == [("start", "done", True)]


def test_analyze_judges_the_loop_crossing_transfer(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from tests.parser_cases import LOOP_CROSSING_DUS

    path = tmp_path / "loop.hlo"
    path.write_text(LOOP_CROSSING_DUS)
    assert main(["analyze", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    [t] = report["transfers"]
    assert (t["name"], t["direction"], t["bytes"], t["executions"]) == ("start", "to_host", 32, 1)
