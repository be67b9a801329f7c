"""The general parse path against the fast path and against its own recorded errors.

parse_general reads printer-shaped lines whole with a few regular expressions and falls back to
its token reader for anything else (hlo/general.py). Its contract: the same model the
printer-shaped fast path builds for the same module, in any layout XLA's parser reads; and
for malformed text one HloParseError (message, line, column) that does not depend on which of
its two readers met the text.

Models: every module of the project's corpora that the fast path reads (the HLO dumps under
fixtures/ and the XLA-test corpus of fixtures/xla-tests/, listed by its manifest) is read by
parse_general as printed and in four layouts the fast path does not read (indentation
changed, comments everywhere, lines split, each computation joined onto one line), and each
model is compared with the fast path's on the printed text, field by field, positions mapped.

Errors: tests/data/general_errors.json records, for the corpus modules XLA's parser
rejects and for single-character edits of every corpus module, the error the general path
gave before its line reader existed (recorded at db85855 with
``python -m tests.hlo.test_parser_general --record``); the path must still give exactly it.
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hloscope.errors import HloParseError
from hloscope.hlo.general import normalize, parse_general
from hloscope.hlo.model import Instruction, Module
from hloscope.hlo.parser import parse_printer_shaped
from tests.conftest import DATA
from tests.xla_corpus import CORPUS, load_manifest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
ERRORS = DATA / "general_errors.json"


def corpus_files() -> list[str]:
    """Repo-relative paths of every HLO module of the corpora: fixtures/ dumps and xla-tests."""
    dumps = sorted(p for p in FIXTURES.rglob("*.txt") if CORPUS not in p.parents
                   and p.read_text(errors="replace").lstrip().startswith("HloModule"))
    tests = [CORPUS / e["file"] for e in load_manifest()["modules"]]
    return [p.relative_to(ROOT).as_posix() for p in dumps + tests]


FILES = corpus_files()


def instruction_fields(i: Instruction) -> tuple[Any, ...]:
    """Every field of an instruction but its position in the text (line, attribute column);
    attribute and literal text with the printer's spacing (the general path normalizes both)."""
    return (i.name, i.opcode, i.text_opcode, i.wrapped_opcode, i.shape, i.operands, normalize(i.literal),
            normalize(i.attr_text), i.is_root, i.position, i.computation, i.path)


def model_fields(m: Module) -> list[Any]:
    out: list[Any] = [m.name, m.entry_name, {k: normalize(v) for k, v in m.attrs.items()}, m.file_names,
                      m.function_names, m.file_locations, m.stack_frames,
                      [(i.computation, i.name) for i in m.calling], list(m.computations)]
    for c in m.computations.values():
        out.append((c.name, c.is_entry, c.execution_thread, list(c.by_name)))
        out.extend(instruction_fields(i) for i in c.instructions)
    return out


def positions(m: Module) -> list[tuple[str, str, int]]:
    """(computation, instruction, line) of every instruction; ("", computation, line) of every
    computation."""
    out = [("", c.name, c.line) for c in m.computations.values()]
    out.extend((c.name, i.name, i.line) for c in m.computations.values() for i in c.instructions)
    return out


def comma_column(lines: list[str], i: Instruction) -> int:
    """Of an instruction the fast path read, the column of the ',' before its attributes: where
    the general path's ``attr_column`` points (the fast path's points past ', ')."""
    return lines[i.line - 1].rfind(",", 0, i.attr_column - 1) + 1


# -- layouts the fast path does not read --------------------------------------------------------------
# Each takes the printed text and its fast-path model and returns the new text and, per original
# 1-based line, the new line it starts on, and the general path's attribute column for an instruction
# with attributes (None: not checked).
Layout = Callable[[list[str], Module], tuple[str, dict[int, int], Callable[[Instruction], int | None]]]


def closing_lines(lines: list[str], m: Module) -> dict[str, int]:
    """1-based line of each computation's closing '}' (the line after its last instruction)."""
    out = {}
    for c in m.computations.values():
        last = c.instructions[-1].line if c.instructions else c.line
        n = last + 1
        while not lines[n - 1].lstrip().startswith("}"):
            n += 1
        out[c.name] = n
    return out


def reindented(lines: list[str], m: Module) -> tuple[str, dict[int, int], Callable[[Instruction], int | None]]:
    """Each instruction line indented with a tab and a blank instead of the printer's blanks, and
    each computation header by a blank (the fast path reads no indented header)."""
    shift: dict[int, int] = {}
    out = list(lines)
    for c in m.computations.values():
        out[c.line - 1] = " " + lines[c.line - 1]
        for i in c.instructions:
            line = lines[i.line - 1]
            body = line.lstrip(" ")
            out[i.line - 1] = "\t " + body
            shift[i.line] = 2 - (len(line) - len(body))
    return "\n".join(out), {n: n for n in range(1, len(lines) + 1)}, lambda i: comma_column(lines, i) + shift[i.line]


def commented(lines: list[str], m: Module) -> tuple[str, dict[int, int], Callable[[Instruction], int | None]]:
    """A comment line after each computation header and a block and a line comment ending every
    instruction line and every header."""
    heads = {c.line for c in m.computations.values()}
    firsts = {c.instructions[0].line for c in m.computations.values() if c.instructions}
    commented = heads | {i.line for c in m.computations.values() for i in c.instructions}
    out: list[str] = []
    line_map: dict[int, int] = {}
    for n, line in enumerate(lines, 1):
        if n in firsts and n - 1 in heads:
            out.append("  // the computation's instructions follow, /* not a block */")
        line_map[n] = len(out) + 1
        out.append(line + " /* block, } ) ] */ // line comment, \"quote" if n in commented else line)
    return "\n".join(out), line_map, lambda i: comma_column(lines, i)


def split(lines: list[str], m: Module) -> tuple[str, dict[int, int], Callable[[Instruction], int | None]]:
    """Each instruction's attribute list on the next line ("\\n      , name=..."), and its operand
    list broken after its first comma."""
    by_line = {i.line: i for c in m.computations.values() for i in c.instructions}
    out: list[str] = []
    line_map: dict[int, int] = {}
    for n, line in enumerate(lines, 1):
        line_map[n] = len(out) + 1
        i = by_line.get(n)
        if i is None:
            out.append(line)
            continue
        cut = comma_column(lines, i) - 1 if i.attr_text else len(line)
        head, attrs = line[:cut], line[cut:]
        ops = head.find(f" {i.text_opcode}(", head.find(" = ") + 1)
        comma = head.find(", ", ops) if ops >= 0 and len(i.operands) > 1 else -1
        if comma >= 0:
            out.extend([head[:comma + 1], "          " + head[comma + 2:]])
        else:
            out.append(head)
        if attrs:
            out.append("      " + attrs)
    return "\n".join(out), line_map, lambda i: 7


def joined(lines: list[str], m: Module) -> tuple[str, dict[int, int], Callable[[Instruction], int | None]]:
    """Each computation, header to closing brace, on one line."""
    closing = closing_lines(lines, m)
    spans = {c.line: closing[c.name] for c in m.computations.values()}
    out: list[str] = []
    line_map: dict[int, int] = {}
    n = 1
    while n <= len(lines):
        end = spans.get(n, n)
        for k in range(n, end + 1):
            line_map[k] = len(out) + 1
        out.append(" ".join(lines[k - 1].strip() for k in range(n, end + 1)))
        n = end + 1
    return "\n".join(out), line_map, lambda i: None


LAYOUTS: dict[str, Layout] = {"reindented": reindented, "commented": commented, "split": split, "joined": joined}


def fast_model(path: str) -> tuple[str, Module | None]:
    text = (ROOT / path).read_text()
    try:
        return text, parse_printer_shaped(text, path)
    except HloParseError:
        return text, None  # not printer-shaped (or malformed): no fast-path model to compare with


@pytest.mark.parametrize("path", FILES)
def test_general_path_builds_the_fast_paths_model(path: str) -> None:
    text, fast = fast_model(path)
    if fast is None:
        return
    general = parse_general(text, path)
    assert model_fields(general) == model_fields(fast)
    assert positions(general) == positions(fast)
    lines = text.split("\n")
    columns = {(i.computation, i.name): i.attr_column for c in general.computations.values() for i in c.instructions}
    for c in fast.computations.values():
        for i in c.instructions:
            if i.attr_text and "#" not in i.name:  # name#i: a compact tuple element, no text of its own
                assert columns[i.computation, i.name] == comma_column(lines, i), i.name
    for name, layout in LAYOUTS.items():
        if name == "joined" and any(line.lstrip().startswith("//") for line in lines):
            continue  # a line comment would swallow the rest of the joined computation
        new_text, line_map, attr_column = layout(lines, fast)
        if new_text == text:
            continue  # nothing to split: no attributes, at most one operand
        with pytest.raises(HloParseError):
            parse_printer_shaped(new_text)  # a layout the fast path does not read
        other = parse_general(new_text, path)
        assert model_fields(other) == model_fields(fast), name
        assert positions(other) == [(c, i, line_map[line]) for c, i, line in positions(fast)], name
        columns = {(i.computation, i.name): i.attr_column for c in other.computations.values() for i in c.instructions}
        for c in fast.computations.values():
            for i in c.instructions:
                if i.attr_text and "#" not in i.name and (want := attr_column(i)) is not None:
                    assert columns[i.computation, i.name] == want, (name, i.name)


# -- errors ------------------------------------------------------------------------------------------
_EDIT_CHARS = ['{', '}', '(', ')', '[', ']', ',', '"', '=', '%', ' ', '\n', '\u00a0', '/*', '//', '*/', "'",
               'ROOT ', 'ENTRY ', '$', ', x=', '\\', '\x01', '\t', '\r', ' = ']


def edits(path: str, text: str, count: int) -> list[dict[str, Any]]:
    """``count`` single edits of ``text`` (insert one of _EDIT_CHARS, or delete a character), seeded
    by the path: where text goes wrong the general path's token reader must take over."""
    rng = random.Random(path)
    lines = text.split("\n")
    out = []
    for _ in range(count):
        n = rng.randrange(len(lines))
        col = rng.randrange(len(lines[n]) + 1)
        if rng.random() < 0.3 and col < len(lines[n]):
            out.append({"line": n + 1, "column": col + 1, "delete": 1, "insert": ""})
        else:
            out.append({"line": n + 1, "column": col + 1, "delete": 0, "insert": rng.choice(_EDIT_CHARS)})
    return out


def apply_edit(text: str, edit: dict[str, Any] | None) -> str:
    if edit is None:
        return text
    lines = text.split("\n")
    line = lines[edit["line"] - 1]
    col = edit["column"] - 1
    lines[edit["line"] - 1] = line[:col] + edit["insert"] + line[col + edit["delete"]:]
    return "\n".join(lines)


def outcome(text: str, path: str) -> list[Any] | None:
    """[reason, line, column, truncated] of the general path's error; None if it reads the text."""
    try:
        parse_general(text, path)
    except HloParseError as e:
        assert str(e) == f"{path}:{e.line}:{e.column}: {e.reason}"
        return [e.reason, e.line, e.column, e.truncated]
    return None


def record() -> None:
    """Write tests/data/general_errors.json from the general path as it now is: per corpus file,
    ``[edit line, edit column, characters deleted, text inserted, reason, line, column, truncated]``
    for each edit (and for the file as it is: edit line 0) the general path rejects, and
    ``[..., text inserted, null]`` for each edit it reads."""
    files: dict[str, list[list[Any]]] = {}
    for path in FILES:
        text = (ROOT / path).read_text()
        cases: list[dict[str, Any] | None] = [None, *edits(path, text, 4 if len(text) < 200_000 else 2)]
        for edit in cases:
            got = outcome(apply_edit(text, edit), path)
            if edit is not None or got is not None:
                head = [0, 0, 0, ""] if edit is None else [edit["line"], edit["column"], edit["delete"], edit["insert"]]
                files.setdefault(path, []).append(head + (got or [None]))
    body = ",\n".join(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=True)}" for k, v in files.items())
    recorded_at = sys.argv[2] if len(sys.argv) > 2 else ""
    ERRORS.write_text(f'{{"recorded_at": {json.dumps(recorded_at)}, "files": {{\n{body}\n}}}}\n')
    print(f"{sum(map(len, files.values()))} cases of {len(files)} files recorded in {ERRORS}")


def recorded() -> list[tuple[str, dict[str, Any] | None, list[Any]]]:
    if not ERRORS.exists():
        return []
    out = []
    for path, cases in json.loads(ERRORS.read_text())["files"].items():
        for line, column, delete, insert, *error in cases:
            edit = None if line == 0 else {"line": line, "column": column, "delete": delete, "insert": insert}
            out.append((path, edit, None if error == [None] else error))
    return out


RECORDED = recorded()


def test_recorded_errors_cover_the_corpus() -> None:
    errors = [error for _, _, error in RECORDED if error is not None]
    assert len({path for path, _, _ in RECORDED}) > 1000 and len(errors) > 3000
    assert len(RECORDED) - len(errors) > 500  # edits that leave a module XLA's parser reads: still read
    kinds = {re.sub(r"'[^']*'|\d+", "_", error[0]) for error in errors}
    assert len(kinds) > 40  # many kinds of error, not one repeated
    assert any(error[3] for error in errors)  # a text ending inside a computation among them


@pytest.mark.parametrize(("path", "edit", "error"), RECORDED,
                         ids=[f"{p}:{e and e['line']}" for p, e, _ in RECORDED])
def test_general_path_gives_the_recorded_error(path: str, edit: dict[str, Any] | None, error: list[Any] | None) -> None:
    text = apply_edit((ROOT / path).read_text(), edit)
    assert outcome(text, path) == error


# -- where the two readers meet ---------------------------------------------------------------------
# Hand-written texts at the line reader's edges; what db85855's general path (before the line reader)
# gave for each: the error (reason, line, column), or the entry's instructions (name, operands,
# attribute text, line, attribute column).
_H = "HloModule m\nENTRY e {\n  %x = f32[] parameter(0)\n"
EDGES: list[tuple[str, Any]] = [
    (_H + "  ROOT %a = f32[] add(%x,,%x) /* open\n}\n",
     ('expected an operand', 4, 26)),
    (_H + "  ROOT %a = f32[] add(%x, %y) /* open\n}\n",
     ("unterminated comment '/*'", 4, 31)),
    (_H + "  ROOT %a = f32[] add(%x, %x), b=\x01\n}\n",
     ("character '\\x01' is not valid HLO outside a string", 4, 34)),
    (_H + "  ROOT %a = f32[] add(%x, %x), b=1 /* c */, d=2\n}\n",
     [('x', (), '', 3, 3), ('a', ('x', 'x'), 'b=1, d=2', 4, 30)]),
    (_H + "  ROOT %a = f32[] add(%x, %x), b=1 // c\n  , d={2}\n}\n",
     [('x', (), '', 3, 3), ('a', ('x', 'x'), 'b=1, d={2}', 4, 30)]),
    (_H + "  ROOT %a = f32[] add(%x, %x), b=1\n  {2}\n}\n",
     [('x', (), '', 3, 3), ('a', ('x', 'x'), 'b=1 {2}', 4, 30)]),
    (_H + "  %a = f32[] add(%x, %x), b={1}, c=\"s\" %b = f32[] add(%a, %a)\n  ROOT %c = f32[] add(%b, %b), d=\"x\\\"y\" // e\n}\n",
     [('x', (), '', 3, 3), ('a', ('x', 'x'), 'b={1}, c="s"', 4, 25), ('b', ('a', 'a'), '', 4, 3), ('c', ('b', 'b'), 'd="x\\"y"', 5, 30)]),
    (_H + "  ROOT ROOT = f32[] add(%x, %x)\n}\n",
     [('x', (), '', 3, 3), ('ROOT', ('x', 'x'), '', 4, 1)]),
    (_H + "  ROOT = f32[] add(%x, %x)\n}\n",
     ("expected an instruction 'name = shape opcode(operands)'", 4, 8)),
    ("HloModule m\nENTRY (p: f32[]) -> f32[] {\n  ROOT %x = f32[] parameter(0)\n}\n",
     ("expected a computation '[ENTRY] name [(params) -> shape] {'", 2, 7)),
    (_H + "  ROOT %a = f32[] add(%x,\n    %x), b={1,\n 2}\n}\n",
     [('x', (), '', 3, 3), ('a', ('x', 'x'), 'b={1, 2}', 4, 8)]),
    (_H + "  ROOT %a = f32[] add(%x, %x), to_apply={ROOT y = f32[] parameter(0)}\n}\n",
     [('x', (), '', 3, 3), ('a', ('x', 'x'), 'to_apply=_', 4, 30)]),
    (_H + "  ROOT %a = f32[] add(%x, %x), literal=f32[] 1\n}\n",
     [('x', (), '', 3, 3), ('a', ('x', 'x'), 'literal=f32[] 1', 4, 30)]),
    (_H + "  ROOT %a = f32[] add(%x, %x), b={{1}, {2}}, c=[a]{b} , d=1\n}\n",
     [('x', (), '', 3, 3), ('a', ('x', 'x'), 'b={{1}, {2}}, c=[a]{b}, d=1', 4, 30)]),
]


@pytest.mark.parametrize(("text", "want"), EDGES, ids=[str(n) for n in range(len(EDGES))])
def test_edges_of_the_line_reader_read_as_before(text: str, want: Any) -> None:
    try:
        m = parse_general(text, "t.hlo")
    except HloParseError as e:
        assert (e.reason, e.line, e.column) == want
        return
    got = [(i.name, i.operands, i.attr_text, i.line, i.attr_column) for i in m.entry.instructions]
    assert got == want


if __name__ == "__main__" and sys.argv[1:2] == ["--record"]:
    record()
