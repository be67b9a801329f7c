"""Fuzzing the parser: damaged real modules and small modules from a grammar.

Property: ``parse_hlo`` returns a module that passes ``self_check()`` (and whose
attributes split), or raises one :class:`HloParseError` with a position inside
the text; nothing else, within a deadline, in memory proportional to the input.

    python -m pytest tests/hlo/test_fuzz_parser.py                       # quick profile (CI)
    HLOSCOPE_FUZZ=long python -m pytest tests/hlo/test_fuzz_parser.py -q  # 10,000 examples per test
"""

from __future__ import annotations

import os
import time
import tracemalloc
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hloscope.errors import HloParseError  # noqa: E402
from hloscope.hlo.general import parse_general  # noqa: E402
from hloscope.hlo.parser import parse_hlo, parse_printer_shaped  # noqa: E402
from tests.hlo.test_parser import SMALL  # noqa: E402
from tests.xla_corpus import CORPUS  # noqa: E402

LONG = os.environ.get("HLOSCOPE_FUZZ") == "long"
FUZZ = settings(
    max_examples=10_000 if LONG else 40,
    deadline=2000 if LONG else 1000,  # ms per example: a hang or a quadratic path fails
    derandomize=not LONG,  # CI runs the same examples every time
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

SEEDS = [SMALL] + [(CORPUS / name).read_text() for name in (
    "host_offloader/BasicDusDs.hlo", "latency_hiding_scheduler/AllGatherAsyncSimple.hlo",
    "hlo_parser/Comments.hlo", "collective_pipeliner/CollectiveWithMultipleDUS.hlo",
    "memory_space_assignment/AddDependency.hlo", "gpu_hlo_schedule/LHSSendRecvPipelined1.hlo",
)]
_INJECT = ["é", "\u200b", "\U0001f600", "\x00", "\t", "\r", "9" * 400, "-1e400", "{" * 300, ")" * 300,
           "(" * 5000, '"', "'", "/*", "*/", "//", "}", "{", "%", "=", ",", "ROOT ", "ENTRY ", "HloModule x,",
           "f32[99999999999999999999]", "s32[" + ",".join(["7"] * 200) + "]", "$0", "\\"]


def tokens(text: str) -> list[str]:
    out: list[str] = []
    word = ""
    for c in text:
        if c.isalnum() or c in "_.%":
            word += c
            continue
        if word:
            out.append(word)
            word = ""
        out.append(c)
    if word:
        out.append(word)
    return out


@st.composite
def damaged(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["del-tok", "dup-tok", "swap-tok", "del-line", "dup-line", "swap-line",
                                     "truncate", "inject"]))
        parts = tokens(text) if kind.endswith("tok") else text.split("\n")
        if not parts:
            break
        i = draw(st.integers(0, len(parts) - 1))
        j = draw(st.integers(0, len(parts) - 1))
        if kind.startswith("del"):
            del parts[i]
        elif kind.startswith("dup"):
            parts.insert(i, parts[i])
        elif kind.startswith("swap"):
            parts[i], parts[j] = parts[j], parts[i]
        elif kind == "truncate":
            text = text[: draw(st.integers(0, len(text)))]
            continue
        else:
            at = draw(st.integers(0, len(text)))
            text = text[:at] + draw(st.sampled_from(_INJECT)) + text[at:]
            continue
        text = ("" if kind.endswith("tok") else "\n").join(parts)
    return text


def check(text: str) -> None:
    """The property: a self-checking module or one positioned HloParseError."""
    try:
        module = parse_hlo(text, "f.hlo")
        module.self_check()
        for comp in module.computations.values():
            for ins in comp.instructions:
                _ = ins.attrs
    except HloParseError as e:
        assert e.line >= 1 and e.column >= 1 and e.line <= text.count("\n") + 1, str(e)
        assert str(e).startswith(f"f.hlo:{e.line}:{e.column}: ") and "\n" not in str(e)


@FUZZ
@given(damaged())
@example("\n  HloModule A\n\n  ENTRY %A (p: f32[3]) ->")  # found by the long profile: IndexError at the end
def test_damaged_modules_parse_or_fail_with_a_position(text: str) -> None:
    check(text)


# -- small modules from a grammar, in random layouts ----------------------------------
_TYPES = ["f32", "bf16", "s32", "pred"]
_UNARY = ["negate", "copy", "abs", "tanh"]
_BINARY = ["add", "multiply", "maximum"]


@st.composite
def gaps(draw: st.DrawFn) -> str:
    """Whatever XLA allows between two tokens."""
    return draw(st.sampled_from([" ", "  ", "\n", "\n    ", " /* c */ ", " // c\n", "\t", "\r\n"]))


@st.composite
def modules(draw: st.DrawFn) -> tuple[str, str]:
    """(printer-shaped text, the same module with random blanks, comments and % signs)."""
    ty = draw(st.sampled_from(_TYPES))
    dims = draw(st.lists(st.integers(1, 9), max_size=3))
    shape = f"{ty}[{','.join(map(str, dims))}]"
    names = ["p0"]
    lines = [("p0", shape, "parameter", ["0"], "")]
    for k in range(draw(st.integers(0, 6))):
        name = f"v{k}"
        if draw(st.booleans()):
            op, args = draw(st.sampled_from(_UNARY)), [draw(st.sampled_from(names))]
        else:
            op, args = draw(st.sampled_from(_BINARY)), [draw(st.sampled_from(names)) for _ in range(2)]
        attr = draw(st.sampled_from(["", 'metadata={op_name="a,b" source_line=3}', "sharding={replicated}"]))
        lines.append((name, shape, op, args, attr))
        names.append(name)

    def render(g: st.DrawFn | None) -> str:
        def sp() -> str:
            return draw(gaps()) if g else " "

        def pct() -> str:
            return "%" if (not g or draw(st.booleans())) else ""

        out = ["HloModule", sp(), "g", "\n\n", "ENTRY", sp(), pct(), "main", sp(), "{", "\n"]
        for i, (name, shp, op, args, attr) in enumerate(lines):
            root = "ROOT " if i == len(lines) - 1 else ""
            ops = ("," + sp()).join(a if op == "parameter" else pct() + a for a in args)
            out += ["  ", root, pct(), name, sp(), "=", sp(), shp, sp(), op, "(", ops, ")"]
            if attr:
                out += [",", sp(), attr]
            out.append("\n")
        out.append("}\n")
        return "".join(out)

    return render(None), render(draw)


@FUZZ
@given(modules())
def test_generated_modules_read_alike_in_any_layout(pair: tuple[str, str]) -> None:
    printed, laid_out = pair
    a, b = parse_printer_shaped(printed), parse_hlo(laid_out)
    b.self_check()
    assert [(i.name, i.opcode, i.operands, i.shape, i.attrs) for i in a.entry.instructions] == \
           [(i.name, i.opcode, i.operands, i.shape, i.attrs) for i in b.entry.instructions]
    assert [i.name for i in parse_general(printed).entry.instructions] == [i.name for i in a.entry.instructions]


# -- hostile inputs: time and memory stay in proportion --------------------------------
HOSTILE = {
    "deep parentheses": "HloModule m\nENTRY e {\n  ROOT p = " + "(" * 100_000 + " parameter(0)\n}\n",
    "deep braces in an attribute": "HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0), a=" + "{" * 100_000,
    "unclosed comment": "HloModule m\n/*" + "x" * 200_000,
    "unclosed string": 'HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0), b="' + "x" * 200_000,
    "huge dimension": "HloModule m\nENTRY e {\n  ROOT p = f32[" + "9" * 100_000 + "] parameter(0)\n}\n",
    "many commas": "HloModule m\nENTRY e {\n  ROOT t = () tuple(" + "," * 100_000 + ")\n}\n",
    "many instructions on one line": "HloModule m ENTRY e { " + "".join(
        f"p{i} = f32[] parameter({i}) " for i in range(5_000)) + "}",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_input_is_bounded(name: str) -> None:
    text = HOSTILE[name]
    tracemalloc.start()
    started = time.perf_counter()
    try:
        check(text)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert time.perf_counter() - started < 5.0
    assert peak < 50 * len(text) + (1 << 20), (peak, len(text))


def test_fuzz_seeds_are_real_modules() -> None:
    for text in SEEDS:
        parse_hlo(text).self_check()
    assert Path(CORPUS / "manifest.json").is_file()
