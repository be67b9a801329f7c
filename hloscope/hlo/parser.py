"""HLO text to :class:`~hloscope.hlo.model.Module`.

Reads any module text XLA's own parser reads: ``compiled.as_text()``,
``--xla_dump_to`` files, the HLO strings of XLA's tests, bug reports and
hand-written repros. Unknown opcodes and attributes are kept. Malformed text
raises one :class:`HloParseError` with the 1-based line and column, and nothing
else.

Two paths build the same model. The fast path reads the layout XLA's printer
writes (one instruction per line), each line's head with the line reader both paths
share (:mod:`hloscope.hlo.lines`: one compiled regular expression, the shape, the
operands as printed); real modules reach 100 MB and nearly all of them are printer-shaped.
Anything else (indentation before the header, comments, instructions or
attribute values split across lines, attributes after a computation, omitted
shapes, no header) makes the fast path give up, and the general path in
:mod:`hloscope.hlo.general` reads the text as a token stream; its error is the
one reported. Attributes are kept as raw text and split only on demand; shapes
are interned by text.
"""

from __future__ import annotations

import re

from hloscope.errors import HloParseError
from hloscope.hlo.async_sugar import expand_async_sugar, order_computations
from hloscope.hlo.attributes import AttributeError_, parse_attribute_list, split_top_level
from hloscope.hlo.bounds import check_bounds
from hloscope.hlo.building import (
    COMPACT_OPERAND_RE,
    LITERAL_OPCODES,
    MAX_NESTING,
    NATIVE_ASYNC,
    SECTIONS,
    TupleElementError,
    canonical_opcode,
    nesting_depth,
    store_section_item,
    tuple_element,
)
from hloscope.hlo.gcpause import paused_gc
from hloscope.hlo.general import parse_general
from hloscope.hlo.lines import PRINTED_RE, printed_operands, printed_shape
from hloscope.hlo.model import Computation, Instruction, Module
from hloscope.hlo.semantics import check_parser_semantics
from hloscope.hlo.shape import Shape, ShapeError, parse_shape, shape_span

__all__ = ["NATIVE_ASYNC", "canonical_opcode", "parse_hlo", "parse_printer_shaped"]

# Operand lists without nesting or strings (nearly all of them): "%a, %b)".
_SIMPLE_OPERANDS_RE = re.compile(r"[^(){}\[\]\"']*\)")
_COMMENT_RE = re.compile(r"/\*.*?\*/")
_SEPARATOR_RE = re.compile(r"\s*,\s*")
_INSTR_RE = re.compile(r"\s*(ROOT\s+)?%?([^\s=]+)\s*=\s*")
_OPCODE_RE = re.compile(r"\s*([a-z][a-z0-9\-_]*)\(")
_COMP_RE = re.compile(r"(ENTRY\s+)?%?([^\s(]+)\s*(?:\(.*)?\{\s*$")
_SECTION_ITEM_RE = re.compile(r"(\d+)\s+(.*)$")
_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
_STRING_RE = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"')
_THREAD_RE = re.compile(r'\}, execution_thread="([A-Za-z0-9_.\-]+)"')
_BLANK_BY_HASH_RE = re.compile(r"\s#|#\s")


def parse_hlo(text: str, path: str | None = None) -> Module:
    """Parse a whole HLO module. Raises :class:`HloParseError`, and nothing else."""
    # The model is acyclic; pausing the cyclic GC while building tens of thousands
    # of objects avoids repeated full collections (cost stays linear in size), and on
    # leaving the model goes straight to the oldest generation (hlo/gcpause.py).
    with paused_gc():
        # "$" (a test template's placeholder) is read by XLA only inside strings;
        # the general path tells the two apart.
        # Python's \s and str.strip() take Unicode blanks (U+00A0) that XLA's lexer does not: text
        # with a non-ASCII character outside a one-line string (op_name and source paths may hold
        # them) is read on the general path, which reads only XLA's blanks and names the character.
        module: Module | None = None
        if "$" not in text and (text.isascii() or _STRING_RE.sub("", text).isascii()):
            try:
                module = _Parser(text, path).parse()
            except HloParseError:
                pass  # not printer-shaped, or malformed: the general path decides and locates
        if module is None:
            module = parse_general(text, path)
        check_parser_semantics(module, text)
        check_bounds(module, text, path)
        expand_async_sugar(module)  # one shape for both of XLA's printings of an async op,
        order_computations(module)  # and one order of their computations
        return module


def parse_printer_shaped(text: str, path: str | None = None) -> Module:
    """The fast path alone: text laid out as XLA's printer writes it (for tests and benchmarks).

    Raises :class:`HloParseError` for anything else, including valid text in
    another layout."""
    return _Parser(text, path).parse()


#: Every byte but the ones :meth:`_Parser.structure` counts (ASCII attribute text, as bytes).
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'{}()[]"\\')


class _Parser:
    def __init__(self, text: str, path: str | None) -> None:
        self.text = text
        self.path = path
        self._structures: dict[bytes, tuple[bool, bool]] = {}

    def structure(self, rest: str) -> tuple[bool, bool]:
        """Of an attribute list: whether its unescaped quotes are odd in number (a string left
        open), and whether some kind of bracket opens a different number of times than it closes.

        Both depend only on how many of each of ``{}()[]"`` it holds when it has no backslash;
        its skeleton of those bytes takes one C call, and a module has few distinct skeletons
        (53 over the 32,000 lines of the 32-layer benchmark), so eight counts per line become one
        translate and one lookup."""
        if rest.isascii():
            skeleton = rest.encode().translate(None, _NOT_STRUCTURE)
            got = self._structures.get(skeleton)
            if got is not None:
                return got
            if b"\\" not in skeleton:
                got = self._structures[skeleton] = (
                    skeleton.count(b'"') % 2 == 1,
                    skeleton.count(b"{") != skeleton.count(b"}") or skeleton.count(b"(") != skeleton.count(b")")
                    or skeleton.count(b"[") != skeleton.count(b"]"))
                return got
        return ('"' in rest and (rest.count('"') - rest.count('\\"')) % 2 == 1,
                rest.count("{") != rest.count("}") or rest.count("(") != rest.count(")")
                or rest.count("[") != rest.count("]"))

    def error(self, message: str, line: int, column: int) -> HloParseError:
        return HloParseError(message, line, column, self.path)

    def parse(self) -> Module:
        lines = self.text.split("\n")
        module: Module | None = None
        comp: Computation | None = None
        section = ""
        computations: dict[str, Computation] = {}
        entry = ""
        root_seen = False
        for idx, raw in enumerate(lines):
            lineno = idx + 1
            line = raw.rstrip(" \t\r")
            if not line or line.lstrip().startswith("//"):
                if not line:
                    section = ""
                continue
            if comp is not None:
                thread = _THREAD_RE.fullmatch(line) if line.startswith("}, ") else None
                if thread is not None or line.strip() == "}":
                    if thread is not None:
                        comp.execution_thread = thread.group(1)
                    self.check_computation(comp, lines)
                    comp = None
                    continue
                if self.parse_instruction(line, lineno, comp):
                    if root_seen:
                        raise self.error(f"a second ROOT in '{comp.name}'", lineno, 1)
                    root_seen = True
                continue
            if module is None:
                if not line.startswith("HloModule"):
                    raise self.error("expected 'HloModule <name>' at the start of the module", lineno, 1)
                module = self.parse_header(line, lineno)
                continue
            if line in SECTIONS:
                section = line
                continue
            if section:
                self.parse_section_item(module, section, line, lineno)
                continue
            if line.startswith((" ", "\t")):
                raise self.error("instruction outside a computation", lineno, len(line) - len(line.lstrip()) + 1)
            m = _COMP_RE.match(line)
            if m is None:
                raise self.error("expected a computation header '%name (...) -> shape {'", lineno, 1)
            name = m.group(2)
            if name in computations:
                raise self.error(f"duplicate computation '{name}'", lineno, m.start(2) + 1)
            comp = Computation(name=name, is_entry=bool(m.group(1)), line=lineno)
            computations[name] = comp
            root_seen = False
            if comp.is_entry:
                if entry:
                    raise self.error(f"a second ENTRY computation '{name}'", lineno, 1)
                entry = name
        if module is None:
            raise self.error("empty input: no 'HloModule' header", 1, 1)
        if comp is not None:
            raise self.error(f"computation '{comp.name}' opened here is not closed with '}}'", comp.line, 1)
        if not computations:
            raise self.error("module has no computations", len(lines), 1)
        if not entry:
            entry = next(reversed(computations))
            computations[entry].is_entry = True
        module.computations = computations
        module.entry_name = entry
        self.check_calls(module, lines)
        return module

    def parse_header(self, line: str, lineno: int) -> Module:
        rest = line[len("HloModule"):].strip()
        name, _, attr_text = rest.partition(",")
        name = name.strip()
        if not line.startswith("HloModule ") or _NAME_RE.fullmatch(name) is None:
            raise self.error("module has no name", lineno, len("HloModule") + 2)
        try:
            attrs = parse_attribute_list(attr_text) if attr_text.strip() else {}
        except AttributeError_ as e:
            raise self.error(str(e), lineno, line.index(attr_text) + e.offset + 1) from None
        return Module(name=name, attrs=attrs, computations={}, entry_name="")

    def parse_section_item(self, module: Module, section: str, line: str, lineno: int) -> None:
        m = _SECTION_ITEM_RE.match(line.strip())
        if m is None:
            raise self.error(f"bad {section} entry", lineno, 1)
        val = m.group(2).strip()
        if not ((val.startswith('"') and val.endswith('"') and len(val) > 1 and val.count('"') == 2)
                or (val.startswith("{") and val.endswith("}") and "{" not in val[1:] and '"' not in val)):
            raise self.error(f"bad {section} entry", lineno, 1)
        store_section_item(module, section, int(m.group(1)), val)

    def parse_head(self, line: str, lineno: int) -> tuple[re.Match[str], str, Shape, str, int, int,
                                                            list[tuple[int, int]] | None]:
        """The general path: tuple shapes, nested or quoted operand text."""
        m = _INSTR_RE.match(line)
        if m is None or not line[m.end():]:
            col = len(line) - len(line.lstrip()) + 1
            raise self.error("expected an instruction 'name = shape opcode(operands)'", lineno, col)
        name = m.group(2)
        pos = m.end()
        try:
            send = shape_span(line, pos)
            if line.count("(", pos, send) > MAX_NESTING and nesting_depth(line[pos:send]) > MAX_NESTING:
                raise ShapeError(f"shape nested deeper than {MAX_NESTING} levels", 0)
            shape = parse_shape("".join(line[pos:send].split()))
        except ShapeError as e:
            raise self.error(str(e), lineno, pos + e.offset + 1) from None
        om = _OPCODE_RE.match(line, send)
        if om is None:
            raise self.error("expected an opcode followed by '('", lineno, min(send + 2, len(line) + 1))
        text_opcode = om.group(1)
        start = om.end()
        simple = _SIMPLE_OPERANDS_RE.match(line, start)
        spans: list[tuple[int, int]] | None
        if simple is not None:
            close = simple.end() - 1
            spans = None
        else:
            try:
                spans, close = split_top_level(line, start, stop_at_close=True)
            except AttributeError_ as bad:  # not "e": one name, one type (mypyc types it once per function)
                raise self.error(str(bad), lineno, bad.offset + 1) from None
        return m, name, shape, text_opcode, start, close, spans

    def parse_instruction(self, line: str, lineno: int, comp: Computation) -> bool:
        """Read one instruction line into ``comp``; True if it is the ROOT."""
        printed = PRINTED_RE.match(line)
        if printed is not None:
            # The line reader's head (hlo/lines.py) covers most lines: shape, opcode, the operands as printed.
            m = printed
            name = printed.group(2)
            try:
                shape = printed_shape(printed.group(3))
            except ShapeError as e:
                raise self.error(str(e), lineno, printed.start(3) + e.offset + 1) from None
            text_opcode = printed.group(4)
            start, close = printed.start(5), printed.end(5)
            spans = None
        else:
            m, name, shape, text_opcode, start, close, spans = self.parse_head(line, lineno)
        opcode, wrapped = canonical_opcode(text_opcode)
        literal = ""
        operands: tuple[str, ...] = ()
        if opcode in LITERAL_OPCODES:
            literal = line[start:close]
        elif spans is None:
            names = printed_operands(line[start:close])
            operands = names if names is not None else self.written_operands(line[start:close], lineno, start)
        else:
            ops = []
            for lo, hi in spans:
                piece = line[lo:hi].strip()
                if piece.startswith("/*"):
                    piece = piece[piece.find("*/") + 2 :].strip()
                if piece:
                    ops.append(piece.rsplit(None, 1)[-1].lstrip("%"))
            operands = tuple(ops)
        if operands and line.find("#", start, close) >= 0:
            operands = self.tuple_elements(comp, operands, line, lineno, start, close)
        sep = _SEPARATOR_RE.match(line, close + 1)
        if sep is not None:
            rest = line[sep.end():]
        else:
            rest = line[close + 1 :].strip()
            if rest:
                raise self.error(f"expected ',' before '{rest[:20]}'", lineno, close + 2)
        if ("/" in rest and ("//" in rest or "/*" in rest)) or rest.endswith(","):
            # A comment or a continued attribute list: not printer-shaped.
            raise self.error("comment or line break inside an instruction", lineno, len(line) - len(rest) + 1)
        open_string, unbalanced = self.structure(rest) if rest else (False, False)
        if open_string:
            raise self.error("a string continues on the next line", lineno, len(line) - len(rest) + 1)
        if unbalanced:
            # Attributes are split lazily; a cheap count finds likely imbalance, the
            # full scan then confirms it and finds the column.
            try:
                split_top_level(rest)
            except AttributeError_ as bad:  # not "e": one name, one type (mypyc types it once per function)
                raise self.error(str(bad), lineno, len(line) - len(rest) + bad.offset + 1) from None
        if name in comp.by_name:
            raise self.error(f"duplicate instruction '{name}' in '{comp.name}'", lineno, m.start(2) + 1)
        ins = Instruction(
            name, opcode, text_opcode, wrapped, shape, operands, literal, rest,
            bool(m.group(1)), lineno, len(comp.instructions), comp.name,
        )
        ins.attr_column = len(line) - len(rest) + 1
        ins.path = self.path
        comp.instructions.append(ins)
        comp.by_name[name] = ins
        return ins.is_root

    def written_operands(self, body: str, lineno: int, start: int) -> tuple[str, ...]:
        """Operand names of an un-nested list the line reader does not read (typed operands,
        ``f32[] %x``, other comments): the last word of each piece; an empty piece is an error."""
        if "/*" in body:
            body = _COMMENT_RE.sub("", body)
        if " " in body.replace(", ", ","):  # typed operands: "f32[] %x" style
            return tuple(p.rsplit(None, 1)[-1].lstrip("%") for p in body.split(",") if p.strip())
        if not body:
            return ()
        names = body.replace(" ", "").replace("%", "")
        if ",," in names or names[0] == "," or names[-1] == ",":
            raise self.error("empty operand", lineno, start + 1)
        return tuple(names.split(","))

    def tuple_elements(self, comp: Computation, operands: tuple[str, ...], line: str, lineno: int, start: int,
                       close: int) -> tuple[str, ...]:
        """``operands`` with each compact tuple element (``name#i``, XLA 0.12's dumps) replaced by the
        get-tuple-element it stands for, added to ``comp`` before the instruction being read
        (building.tuple_element). Blanks around a '#' are left to the general path."""
        if _BLANK_BY_HASH_RE.search(line, start, close) is not None:
            raise self.error("blank beside '#' in an operand", lineno, start + 1)
        out: list[str] = []
        for op in operands:
            if "#" not in op:
                out.append(op)
                continue
            col = line.find(op, start) + 1
            if COMPACT_OPERAND_RE.fullmatch(op) is None:
                raise self.error(f"expected an operand name, found '{op[:20]}'", lineno, max(col, 1))
            try:
                name = tuple_element(comp, op, lineno, self.path)[0]
            except TupleElementError as bad:  # not "e": one name, one type (mypyc types it once per function)
                raise self.error(str(bad), lineno, max(col, 1)) from None
            out.append(name)
        return tuple(out)

    def check_computation(self, comp: Computation, lines: list[str]) -> None:
        known = comp.by_name
        for ins in comp.instructions:
            for op in ins.operands:
                if op not in known:
                    text = lines[ins.line - 1]
                    col = text.find(op, text.find("(")) + 1
                    raise self.error(f"operand '{op}' of '{ins.name}' is not defined in '{comp.name}'",
                                     ins.line, max(col, 1))
            if "control-predecessors" in ins.attr_text:
                for op in ins.control_predecessors:
                    if op not in known or "#" in op:  # name#i (a tuple element) is an operand, never a name
                        raise self.error(f"control predecessor '{op}' of '{ins.name}' is not defined", ins.line, 1)

    def check_calls(self, module: Module, lines: list[str]) -> None:
        """Every called computation exists; lists the calling instructions (``module.calling``)."""
        calling = module.calling
        for comp in module.computations.values():
            for ins in comp.instructions:
                calls = ins.called_computations
                if not calls:
                    continue
                calling.append(ins)
                for called in calls:
                    if called not in module.computations:
                        text = lines[ins.line - 1]
                        col = text.find(called) + 1
                        raise self.error(f"'{ins.name}' calls unknown computation '{called}'", ins.line, max(col, 1))
