"""The general path of the HLO parser: any layout XLA's own parser reads.

Whitespace and line breaks are insignificant between tokens; ``// ...`` and
``/* ... */`` comments may stand wherever whitespace may; names are written
with or without ``%``; an instruction, its operand list, an attribute value or
the module header may span lines; a computation may carry attributes after its
closing brace (``}, execution_thread="host"``, kept nowhere); the module header
may be left out (XLA names such a module ``module_<entry>``); a result shape
may be left out where it can be inferred (:mod:`hloscope.hlo.infer`).

Contract: the same :class:`Module` the printer-shaped fast path in
:mod:`hloscope.hlo.parser` builds for the same text, with attribute and literal
text normalised to the printer's spacing (comments dropped, line breaks and
runs of blanks made one space, none inside brackets), or one
:class:`HloParseError` with the 1-based line and column of the problem. No
recursion: bracket nesting is tracked with a stack and capped at
:data:`~hloscope.hlo.building.MAX_NESTING`. Cost is linear in the input.

Two readers: the line reader (:mod:`hloscope.hlo.lines`, the fast path's too) takes an
instruction or a computation header laid out as XLA's printer writes it whole
(:meth:`GeneralParser.read_printed_instruction` adds what it reads to the computation), and
accepts only text the token reader would read to the same result; everything else goes to the
token reader (this module), which jumps from bracket to bracket with compiled regular
expressions and reports every error.
"""

from __future__ import annotations

import re
import unicodedata
from itertools import chain

from hloscope.errors import HloParseError
from hloscope.hlo.building import (
    COMPACT_OPERAND_RE,
    LITERAL_OPCODES,
    MAX_NESTING,
    SECTIONS,
    TupleElementError,
    canonical_opcode,
    store_section_item,
    tuple_element,
)
from hloscope.hlo.gcpause import paused_gc
from hloscope.hlo.infer import resolve_shapes
from hloscope.hlo.lines import (
    PRINTED_RE,
    SKIP_RE,
    normalize,
    operand_offsets,
    printed_attributes,
    printed_header,
    printed_operands,
    printed_shape,
)
from hloscope.hlo.model import Computation, Instruction, Module, _name_list
from hloscope.hlo.shape import Shape, ShapeError, parse_shape

#: Characters XLA's lexer reads outside strings and comments (">" only in "->").
LEXICAL = "A-Za-z0-9_\\-?=<>,%:*#+~@\\[\\]{}()/.\"' \t\n\r"
_FOREIGN_RE = re.compile(f"[^{LEXICAL}]")
_NAME_RE = re.compile(r"%?([A-Za-z0-9_][A-Za-z0-9_.\-]*)")
_MODULE_NAME_RE = re.compile(r"[A-Za-z0-9_.\-]+")
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_OPCODE_RE = re.compile(r"[a-z][a-z0-9\-_]*")
_KEYWORD_END = r"(?![A-Za-z0-9_.\-%])"
_ROOT_RE = re.compile(r"ROOT" + _KEYWORD_END)
_ENTRY_RE = re.compile(r"ENTRY" + _KEYWORD_END)
_HLOMODULE_RE = re.compile(r"HloModule" + _KEYWORD_END)
_SECTION_RE = re.compile(r"(" + "|".join(SECTIONS) + r")" + _KEYWORD_END)
_ARRAY_HEAD_RE = re.compile(r"[a-z][a-z0-9]*\s*\[")
_DIGITS_RE = re.compile(r"\d+")
# Inside brackets: strings, comments, brackets and commas are all that matter.
# Strings are matched as unrolled loops: a repeated alternation would keep
# backtracking state per character (120 bytes a character on an unclosed string).
_SCAN_RE = re.compile(
    r'"[^"\\]*(?:\\.[^"\\]*)*"|\'[^\'\n]*\'|/\*.*?\*/|//[^\n]*|[(){}\[\],"]|/\*|' + f"[^{LEXICAL}]", re.S)
_STRING_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_QUOTED_RE = re.compile(r"'[^'\n]*'")
# A bare value: a number, an enum, a name, dim labels (b01f_01io->b01f), padding (0_0x1_1).
_BARE_RE = re.compile(r"(?:[A-Za-z0-9_\-?=<>%:*#+~@.]|/(?![/*]))+")
# What can start the value of a ``literal=<shape> <value>`` attribute.
_LITERAL_START_RE = re.compile(r"[-+0-9({]|true\b|false\b|nan\b|inf\b")
_OPERAND_NAME_RE = re.compile(r"%?([A-Za-z0-9_][A-Za-z0-9_.\-]*)")
#: Blanks (comments already made blanks) on either side of the '#' of a compact tuple element.
_HASH_GAP_RE = re.compile(r"\s*#\s*")
# An operand that is itself an instruction: "[shape] opcode(".
_NESTED_RE = re.compile(r"(?:^|[\]}) ])[a-z][a-z0-9\-_]*\s*\(")
_GAP_START = frozenset(" \t\n\r/")
# An array shape with no blanks or comments inside, and its layout if any.
_LAYOUT_START_RE = re.compile(r"\{[ \t]*[0-9:}]")
_PLAIN_SHAPE_RE = re.compile(r"[a-z][a-z0-9]*\[[^\]\s/()\[{}]*\](?:\{[^{}\s/()]*(?:\([^()\s/]*\)[^{}\s/()]*)*\})?")
_CLOSER = {"(": ")", "[": "]", "{": "}"}
_PLACEHOLDER = Shape("unknown")
#: Attributes that name called computations (and may hold one written in place).
_CALL_KEYS = frozenset({"calls", "to_apply", "condition", "body", "true_computation", "false_computation"})
#: '{' opening an inline computation: its first instruction "[ROOT] name =".
#: Where a line starts an instruction: "[ROOT] name = " then a shape or an opcode.
_INSTRUCTION_LINE_RE = re.compile(r"\n[ \t]*((?:ROOT[ \t]+)?%?[A-Za-z0-9_][A-Za-z0-9_.\-]*[ \t]*=[ \t]*[a-z(])")
_INLINE_RE = re.compile(r"\{(?:[ \t\n\r]+|//[^\n]*|/\*.*?\*/)*(?:ROOT\s+)?%?[A-Za-z0-9_][A-Za-z0-9_.\-]*\s*=", re.S)

def foreign_character(c: str) -> str:
    """The message for a character XLA's lexer does not read outside strings and comments."""
    name = unicodedata.name(c, "")
    code = f"U+{ord(c):04X}" + (f" ({name.lower()})" if name else "")
    if c.isspace() or unicodedata.category(c) in ("Zs", "Cf"):
        # Text pasted from a web page or a document: U+00A0 for indentation, U+200B between words.
        return f"character {code} is not whitespace XLA reads: replace it with a plain space"
    return f"character {c!r} is not valid HLO outside a string" + ("" if c.isascii() else f" ({code})")


class GeneralParser:
    """One parse of one text; use :func:`parse_general`."""

    def __init__(self, text: str, path: str | None) -> None:
        self.text = text
        self.path = path
        self.n = len(text)
        self._line_off = 0
        self._line_no = 1
        self._line_start = 0
        # Instructions left without a shape, resolved once every computation is read.
        self.pending: list[tuple[Instruction, int]] = []
        # Operand and control-predecessor references, checked when a computation closes.
        self.refs: list[tuple[str, int, str]] = []
        self.called: list[tuple[Instruction, int]] = []
        self.ins_start = 0  # offset of the instruction being read (nested ones share its line)
        self.module: Module | None = None
        self.comp: Computation | None = None  # the computation being read
        self.inline_end = 0  # offset past the last inline computation read
        self.comp_open = 0  # offset of the '{' that opened ``comp``

    # -- positions --------------------------------------------------------
    def line_of(self, off: int) -> int:
        """1-based line of ``off``; cheap for increasing offsets (the common case)."""
        if off < self._line_off:
            self._line_off, self._line_no, self._line_start = 0, 1, 0
        crossed = self.text.count("\n", self._line_off, off)
        if crossed:
            self._line_no += crossed
            self._line_start = self.text.rfind("\n", self._line_off, off) + 1
        self._line_off = off
        return self._line_no

    def column_of(self, off: int) -> int:
        """1-based column of ``off`` (without scanning back over a long line)."""
        self.line_of(off)
        return off - self._line_start + 1

    def error(self, message: str, off: int, at_end: bool = False) -> HloParseError:
        """``message`` at ``off``; at the end of the text inside a computation, the unclosed one."""
        if off >= self.n and self.comp is not None and not at_end:
            return self.unclosed(self.comp, self.comp_open)
        off = max(0, min(off, self.n))
        if off < self.n and _FOREIGN_RE.match(self.text, off):
            message = foreign_character(self.text[off])
        line = self.text.count("\n", 0, off) + 1
        column = off - (self.text.rfind("\n", 0, off) + 1) + 1
        return HloParseError(message, line, column, self.path)

    def ended_inside(self, message: str, off: int) -> HloParseError:
        """The text ends inside a string, comment or bracket opened at ``off``: if no instruction
        follows, inside the computation being read (a truncated file); else at ``off``."""
        comp = self.comp
        if comp is None or _INSTRUCTION_LINE_RE.search(self.text, off) is not None:
            return self.error(message, off)
        return self.unclosed(comp, self.comp_open, inside=off)

    def unclosed(self, comp: Computation, open_pos: int, inside: int = -1) -> HloParseError:
        """The text ends inside ``comp``: a bracket that ran over the next instruction's line (XLA
        points there too), else the end of the text, named as a likely truncation."""
        swallowed = self.swallowing_bracket(open_pos)
        if swallowed is not None:
            at, line_off = swallowed
            line, column = self.position(line_off)
            return self.error(f"'{self.text[at]}' is not closed before the next instruction at {line}:{column}", at,
                              at_end=True)
        line, column = self.position(open_pos)
        where = ""
        if inside >= 0:
            what = {'"': "string", "/": "comment"}.get(self.text[inside], f"'{self.text[inside]}'")
            where = " (inside the {} at {}:{})".format(what, *self.position(inside))
        err = self.error(f"computation '{comp.name}' opened at {line}:{column} is not closed: the text ends "
                         f"inside it{where}; is the file truncated?", self.n, at_end=True)
        err.truncated = True
        return err

    def swallowing_bracket(self, open_pos: int) -> tuple[int, int] | None:
        """(offset of the bracket, offset of the instruction line it runs over) for the first
        bracket after ``open_pos`` left open where a new instruction's line starts, None if none
        (brackets of computations written in place excepted)."""
        text = self.text
        starts = [m.start(1) for m in _INSTRUCTION_LINE_RE.finditer(text, open_pos)]
        stack: list[tuple[str, int, bool]] = []  # (closer, offset, opens an inline computation)
        k = 0
        for m in _SCAN_RE.finditer(text, open_pos + 1):
            t = m.start()
            while k < len(starts) and starts[k] < t:
                if stack and not stack[-1][2]:
                    return stack[-1][1], starts[k]
                k += 1
            c = m.group()[0]
            if c in "([{":
                stack.append((_CLOSER[c], t, c == "{" and _INLINE_RE.match(text, t) is not None))
            elif c in ")]}":
                if not stack:
                    return None  # the computation's own closer
                if stack[-1][0] == c:
                    stack.pop()
        return None

    def position(self, off: int) -> tuple[int, int]:
        """1-based (line, column) of ``off``."""
        return self.text.count("\n", 0, off) + 1, off - (self.text.rfind("\n", 0, off) + 1) + 1

    def skip(self, pos: int) -> int:
        if self.text[pos:pos + 1] not in _GAP_START:
            return pos
        end = SKIP_RE.match(self.text, pos)
        assert end is not None  # the pattern matches the empty string
        pos = end.end()
        if self.text.startswith("/*", pos):
            raise self.error("unterminated comment '/*'", pos)
        return pos

    def peek(self, pos: int) -> str:
        return self.text[pos:pos + 1]

    # -- brackets and values ---------------------------------------------------
    def scan_group(self, pos: int) -> tuple[int, list[int]]:
        """``pos`` at an opening bracket: (offset past its closer, offsets of its top-level commas)."""
        text = self.text
        stack = [_CLOSER[text[pos]]]
        opened = [pos]  # where each open bracket of ``stack`` stands
        commas: list[int] = []
        for m in _SCAN_RE.finditer(text, pos + 1):
            tok = m.group()
            c = tok[0]
            if c in "([{":
                if len(stack) >= MAX_NESTING:
                    raise self.error(f"brackets nested deeper than {MAX_NESTING} levels", m.start())
                stack.append(_CLOSER[c])
                opened.append(m.start())
            elif c in ")]}":
                if c != stack[-1]:
                    # Point at the bracket left open (where the text went wrong), not at the far
                    # closer that exposed it, which may be many lines later.
                    at = opened[-1]
                    raise self.error(f"'{text[at]}' is not closed: expected '{stack[-1]}' before the '{c}' at "
                                     f"{self.line_of(m.start())}:{self.column_of(m.start())}", at)
                stack.pop()
                opened.pop()
                if not stack:
                    return m.end(), commas
            elif c == ",":
                if len(stack) == 1:
                    commas.append(m.start())
            elif tok == '"':
                raise self.ended_inside("unterminated string", m.start())
            elif tok == "/*":
                raise self.ended_inside("unterminated comment '/*'", m.start())
            elif c not in "\"'/":
                raise self.error("unexpected character", m.start())
        raise self.ended_inside(f"'{text[pos]}' is not closed: missing '{stack[-1]}'", pos)

    def scan_value(self, pos: int) -> int:
        """End of the attribute value at ``pos``: adjacent strings, bracket groups and bare words."""
        start = pos
        text = self.text
        while pos < self.n:
            c = text[pos]
            if c in "([{":
                pos = self.scan_group(pos)[0]
            elif c == '"' or c == "'":
                m = (_STRING_RE if c == '"' else _QUOTED_RE).match(text, pos)
                if m is None:
                    raise self.error("unterminated string", pos)
                pos = m.end()
            else:
                b = _BARE_RE.match(text, pos)
                if b is None:
                    # replica_groups=mesh['x'=2] {'x'}: a brace group after blanks continues the value.
                    gap = SKIP_RE.match(text, pos)
                    if pos == start or gap is None or gap.end() == pos or self.peek(gap.end()) != "{":
                        break
                    pos = gap.end()
                    continue
                pos = b.end()
        if pos == start:
            raise self.error("expected an attribute value", pos)
        return pos

    def read_attributes(self, pos: int) -> tuple[list[str], int]:
        """``, name=value`` items from ``pos`` (at the comma); returns the items as ``name=value``."""
        items: list[str] = []
        while self.peek(pos) == ",":
            pos = self.skip(pos + 1)
            m = _WORD_RE.match(self.text, pos)
            if m is None:
                raise self.error("expected an attribute 'name=value' after ','", pos)
            pos = self.skip(m.end())
            if self.peek(pos) != "=":
                raise self.error(f"expected '=' after attribute name '{m.group()}'", pos)
            pos = self.skip(pos + 1)
            if self.comp is not None and m.group() in _CALL_KEYS and self.peek(pos) == "{" \
                    and _INLINE_RE.match(self.text, pos):
                # to_apply={ x = s32[] parameter(0) ROOT ... }: a computation written in place;
                # XLA names it "_" ("_.1", ... for the next ones) and so does hloscope.
                items.append(f"{m.group()}={self.parse_inline_computation(pos)}")
                pos = self.skip(self.inline_end)
                continue
            end = self.scan_value(pos)
            if m.group() == "literal" and self.peek(end) in (" ", "\t", "\n", "\r"):
                value = self.skip(end)  # literal=f32[] 0.1: a shape, then the value
                if _ARRAY_HEAD_RE.match(self.text, pos) and _LITERAL_START_RE.match(self.text, value):
                    end = self.scan_value(value)
            items.append(f"{m.group()}={normalize(self.text[pos:end])}")
            pos = self.skip(end)
        return items, pos

    def read_shape(self, pos: int, layout_after_blank: bool) -> tuple[Shape, int]:
        """The shape at ``pos``; a layout may follow blanks only where no '{' could open a body."""
        text = self.text
        plain = _PLAIN_SHAPE_RE.match(text, pos)
        if plain is not None and (plain.group().endswith("}") or self.peek(plain.end()) not in "{ \t\n\r/"):
            try:
                return parse_shape(plain.group()), plain.end()
            except ShapeError as e:
                raise self.error(str(e), pos + e.offset) from None
        if self.peek(pos) == "(":
            end = self.scan_group(pos)[0]
        else:
            head = _ARRAY_HEAD_RE.match(text, pos)
            if head is None:
                raise self.error("expected a shape like f32[4,8]{1,0}", pos)
            end = self.scan_group(head.end() - 1)[0]
            after = self.skip(end) if layout_after_blank else end
            # In a computation's signature a '{' right after the dimensions opens a layout only if a layout
            # follows ('{1,0}', '{:T(128)}', '{}'): XLA reads '-> f32[4]{' and a line break as the result
            # shape and the body (XLA's verifier test DynamicUpdateSliceWithMemorySpace).
            if self.peek(after) == "{" and (layout_after_blank or _LAYOUT_START_RE.match(text, after) is not None):
                end = self.scan_group(after)[0]
        raw = text[pos:end]
        shape_text = "".join(normalize(raw).split())
        try:
            return parse_shape(shape_text), end
        except ShapeError as e:
            exact = shape_text == raw
            raise self.error(str(e), pos + (e.offset if exact else 0)) from None

    # -- module -------------------------------------------------------------
    def parse(self) -> Module:
        text = self.text
        pos = self.skip(0)
        if pos >= self.n:
            raise self.error("empty input: no 'HloModule' header", pos)
        header = _HLOMODULE_RE.match(text, pos)
        if header is not None:
            pos = self.skip(header.end())
            name = _MODULE_NAME_RE.match(text, pos)
            if name is None:
                raise self.error("module has no name", pos)
            pos = self.skip(name.end() + (1 if self.peek(name.end()) == ":" else 0))
            items, pos = self.read_attributes(pos)
            attrs = dict(item.split("=", 1) for item in items)
            module = Module(name=name.group(), attrs=attrs, computations={}, entry_name="")
        elif _ENTRY_RE.match(text, pos) or self._looks_like_computation(pos):
            module = Module(name="", attrs={}, computations={}, entry_name="")
        else:
            raise self.error("expected 'HloModule <name>' at the start of the module", pos)
        self.module = module
        pos = self.read_sections(module, pos)
        computations = module.computations
        while pos < self.n:
            pos = self.parse_computation(module, pos)
        if not computations:
            raise self.error("module has no computations", pos)
        if not module.entry_name:
            module.entry_name = next(reversed(computations))
            computations[module.entry_name].is_entry = True
        if not module.name:
            module.name = f"module_{module.entry_name}"
        unresolved = resolve_shapes(module, self.pending, _PLACEHOLDER)
        if unresolved is not None:
            raise self.error(*unresolved)
        for ins, off in self.called:
            if ins.called_computations:
                module.calling.append(ins)
            for callee in ins.called_computations:
                if callee not in computations:
                    at = self.text.find(callee, off)
                    raise self.error(f"'{ins.name}' calls unknown computation '{callee}'", at if at >= 0 else off)
        return module

    def _looks_like_computation(self, pos: int) -> bool:
        name = _NAME_RE.match(self.text, pos)
        return name is not None and self.peek(self.skip(name.end())) in ("{", "(")

    def read_sections(self, module: Module, pos: int) -> int:
        while True:
            m = _SECTION_RE.match(self.text, pos)
            if m is None:
                return pos
            section = m.group(1)
            pos = self.skip(m.end())
            while True:
                key = _DIGITS_RE.match(self.text, pos)
                if key is None:
                    break
                pos = self.skip(key.end())
                if self.peek(pos) == "{":
                    end = self.scan_group(pos)[0]
                elif self.peek(pos) == '"':
                    s = _STRING_RE.match(self.text, pos)
                    if s is None:
                        raise self.error("unterminated string", pos)
                    end = s.end()
                else:
                    raise self.error(f"bad {section} entry: expected a string or '{{...}}'", pos)
                store_section_item(module, section, int(key.group()), self.text[pos:end])
                pos = self.skip(end)

    def parse_computation(self, module: Module, pos: int) -> int:
        text = self.text
        start = pos
        printed = printed_header(text, pos)
        if printed is not None:
            is_entry, name, name_pos, pos = printed
        else:
            entry = _ENTRY_RE.match(text, pos)
            is_entry = entry is not None
            if entry is not None:
                pos = self.skip(entry.end())
            m = _NAME_RE.match(text, pos)
            if m is None:
                raise self.error("expected a computation '[ENTRY] name [(params) -> shape] {'", pos)
            name = m.group(1)
            name_pos = pos
            pos = self.skip(m.end())
            if self.peek(pos) == "=":
                raise self.error("instruction outside a computation", start)
            if self.peek(pos) == "(":
                pos = self.skip(self.scan_group(pos)[0])
                if not text.startswith("->", pos):
                    raise self.error("expected '->' and the result shape after the parameters", pos)
                pos = self.skip(pos + 2)
                pos = self.skip(self.read_shape(pos, layout_after_blank=False)[1])
            if self.peek(pos) != "{":
                raise self.error(f"expected '{{' to open computation '{name}'", pos)
        if name in module.computations:
            raise self.error(f"duplicate computation '{name}'", name_pos)
        if is_entry and module.entry_name:
            raise self.error(f"a second ENTRY computation '{name}' (the entry is '{module.entry_name}')", start)
        comp = Computation(name=name, is_entry=is_entry, line=self.line_of(start))
        module.computations[name] = comp
        if comp.is_entry:
            module.entry_name = name
        pos = self.parse_computation_body(comp, pos)
        items, pos = self.read_attributes(pos)
        for item in items:
            if item.startswith("execution_thread="):
                comp.execution_thread = item.partition("=")[2].strip('"')
        return pos

    def parse_computation_body(self, comp: Computation, open_pos: int) -> int:
        """``open_pos`` at the computation's '{': its instructions; returns the offset past '}'."""
        outer_comp, outer_refs, outer_start = self.comp, self.refs, self.ins_start
        self.comp, self.refs = comp, []
        name = comp.name
        outer_open, self.comp_open = self.comp_open, open_pos
        pos = self.skip(open_pos + 1)
        root_seen = False
        text = self.text
        while not text.startswith("}", pos):
            if pos >= self.n:
                raise self.unclosed(comp, open_pos)
            ins, name_pos, pos = self.read_printed_instruction(comp, pos) or self.parse_instruction(comp, pos)
            if ins.is_root:
                if root_seen:
                    raise self.error(f"a second ROOT in '{name}'", name_pos)
                root_seen = True
        for ref, off, kind in self.refs:
            if ref not in comp.by_name or "#" in ref:  # name#i (a tuple element) is an operand, never a name
                raise self.error(f"{kind} '{ref}' is not defined in '{name}'", off)
        self.comp, self.refs, self.ins_start, self.comp_open = outer_comp, outer_refs, outer_start, outer_open
        return self.skip(pos + 1)

    def parse_inline_computation(self, pos: int) -> str:
        """``pos`` at the '{' of a computation written as an attribute value; returns its name."""
        module = self.module
        assert module is not None
        name, n = "_", 0
        while name in module.computations:
            n += 1
            name = f"_.{n}"
        comp = Computation(name=name, is_entry=False, line=self.line_of(pos))
        module.computations[name] = comp
        self.inline_end = self.parse_computation_body(comp, pos)
        return name

    # -- printer-shaped lines (hlo/lines.py reads them) ----------------------------------
    def read_printed_instruction(self, comp: Computation, pos: int) -> tuple[Instruction, int, int] | None:
        """An instruction laid out on one line as the printer writes it, read whole: what
        :meth:`parse_instruction` returns for it, or None where that must read it."""
        text = self.text
        m = PRINTED_RE.match(text, pos)
        if m is None:
            return None
        root, name, shape_text, text_opcode, body = m.groups()
        if name in comp.by_name or (root is None and name == "ROOT"):
            return None
        try:
            shape = printed_shape(shape_text)
        except ShapeError:
            return None
        attrs = printed_attributes(text, m.end())
        if attrs is None:
            return None
        attr_text, after, end = attrs
        opcode, wrapped = canonical_opcode(text_opcode)
        literal = ""
        operands: tuple[str, ...] = ()
        refs: list[tuple[str, int, str]] = []
        if opcode in LITERAL_OPCODES:
            literal = body if body.isalnum() else normalize(body).strip()
        else:
            names = printed_operands(body)
            if names is None:
                return None  # empty, typed ("f32[] %x") or not a name
            operands = names
            for op, at in zip(names, operand_offsets(body, names, m.start(5)), strict=True):
                refs.append((op, at, "operand"))
        self.ins_start = pos
        if pos >= self._line_off:  # line_of(pos), inline: offsets only grow here
            crossed = text.count("\n", self._line_off, pos)
            if crossed:
                self._line_no += crossed
                self._line_start = text.rfind("\n", self._line_off, pos) + 1
            self._line_off = pos
            line = self._line_no
        else:
            line = self.line_of(pos)
        if "#" in body and operands:
            # Compact tuple elements (name#i): their get-tuple-elements go before this instruction.
            resolved = list(operands)
            kept: list[tuple[str, int, str]] = []
            for k, (op, at, kind) in enumerate(refs):  # one per operand, in order
                if "#" in op:
                    resolved[k] = self.tuple_element(comp, op, line, at)
                else:
                    kept.append((op, at, kind))
            refs = kept
            operands = tuple(resolved)
        ins = Instruction(name, opcode, text_opcode, wrapped, shape, operands, literal, attr_text,
                          root is not None, line, len(comp.instructions), comp.name)
        # Past the operand list on the instruction's line, the attributes' column is found inline.
        ins.attr_column = after - self._line_start + 1 if after == m.end() and "\n" not in body \
            else self.column_of(after)
        self.refs.extend(refs)
        self.place(comp, ins, after)
        return ins, pos if root is None else m.end(1), end

    def place(self, comp: Computation, ins: Instruction, after: int) -> None:
        """Add ``ins`` to ``comp``; its calls and control predecessors to check, at ``after`` (its
        attributes' offset), once the module and the computation are read."""
        ins.path = self.path
        comp.instructions.append(ins)
        comp.by_name[ins.name] = ins
        if ins.attr_text:
            self.called.append((ins, after))
            if "control-predecessors" in ins.attr_text:
                for pred in _name_list(ins.attrs.get("control-predecessors", "")):
                    self.refs.append((pred, after, "control predecessor"))

    # -- instructions ---------------------------------------------------------
    def parse_instruction(self, comp: Computation, pos: int) -> tuple[Instruction, int, int]:
        """(instruction, offset of its name, offset after it)."""
        text = self.text
        start = pos
        root = _ROOT_RE.match(text, pos)
        if root is not None:
            pos = self.skip(root.end())
        m = _NAME_RE.match(text, pos)
        if m is None:
            raise self.error("expected an instruction 'name = shape opcode(operands)'", pos)
        name, name_pos = m.group(1), pos
        pos = self.skip(m.end())
        if self.peek(pos) != "=":
            raise self.error(f"expected '=' after instruction name '{name}'", pos)
        if name in comp.by_name:
            raise self.error(f"duplicate instruction '{name}' in '{comp.name}'", name_pos)
        self.ins_start = start
        ins, end = self.parse_body(comp, self.skip(pos + 1), name, root is not None, start)
        return ins, name_pos, end

    def parse_body(self, comp: Computation, pos: int, name: str, is_root: bool, start: int) -> tuple[Instruction, int]:
        """From the shape (or the opcode) on; ``name`` "" for a nested instruction (named like XLA's)."""
        text = self.text
        shape: Shape | None = None
        if self.peek(pos) == "(" or _ARRAY_HEAD_RE.match(text, pos):
            shape, pos = self.read_shape(pos, layout_after_blank=True)
            pos = self.skip(pos)
        om = _OPCODE_RE.match(text, pos)
        if om is None:
            raise self.error("expected an opcode followed by '('", pos)
        text_opcode = om.group()
        pos = self.skip(om.end())
        if self.peek(pos) != "(":
            raise self.error(f"expected '(' after opcode '{text_opcode}'", pos)
        opcode, wrapped = canonical_opcode(text_opcode)
        close, commas = self.scan_group(pos)
        literal = ""
        operands: tuple[str, ...] = ()
        if opcode in LITERAL_OPCODES:
            literal = normalize(text[pos + 1:close - 1]).strip()
        else:
            operands = self.read_operands(comp, pos + 1, close - 1, commas)
        after = self.skip(close)
        # A nested instruction's attributes would be read as its parent's operands; XLA
        # takes none either.
        items, end = self.read_attributes(after) if name else ([], after)
        attr_text = ", ".join(items)
        if not name:
            name = f"{text_opcode}.anon"
            n = 0
            while name in comp.by_name:
                n += 1
                name = f"{text_opcode}.anon.{n}"
        ins = Instruction(name, opcode, text_opcode, wrapped, shape or _PLACEHOLDER, operands, literal, attr_text,
                          is_root, self.line_of(start), len(comp.instructions), comp.name)
        ins.attr_column = self.column_of(after)
        self.place(comp, ins, after)
        if shape is None:
            self.pending.append((ins, om.start()))
        return ins, end

    def read_operands(self, comp: Computation, lo: int, hi: int, commas: list[int]) -> tuple[str, ...]:
        text = self.text
        if not commas and not normalize(text[lo:hi]).strip():
            return ()
        bounds = zip(chain((lo,), (c + 1 for c in commas)), chain(commas, (hi,)), strict=True)
        names: list[str] = []
        for a, b in bounds:
            piece = normalize(text[a:b]).strip()
            if not piece:
                raise self.error("expected an operand", self.skip(a))
            if piece.endswith(")") and _NESTED_RE.search(piece):
                # XLA's nested form: add(f32[] parameter(0), ...) defines an anonymous instruction.
                start = self.skip(a)
                # Its line is its parent's: the model orders instructions by line.
                ins, end = self.parse_body(comp, start, "", False, self.ins_start)
                if self.skip(end) != b:
                    raise self.error("expected ',' or ')' after a nested instruction", self.skip(end))
                names.append(ins.name)
                continue
            if "#" in piece:
                piece = _HASH_GAP_RE.sub("#", piece)
            prefix, _, last = piece.rpartition(" ")
            nm = _OPERAND_NAME_RE.fullmatch(last)
            compact = COMPACT_OPERAND_RE.fullmatch(last) if nm is None and "#" in last else None
            if nm is None and compact is None:
                raise self.error(f"expected an operand name, found '{last[:20]}'", self.skip(a))
            if prefix:
                try:
                    parse_shape("".join(prefix.split()))
                except ShapeError:
                    raise self.error(f"expected an operand '[shape] name', found '{piece[:30]}'",
                                     self.skip(a)) from None
            if compact is not None:
                # An error is at the operand's start, its shape included, as XLA's parser puts it.
                names.append(self.tuple_element(comp, compact.group(1) + compact.group(2), self.line_of(self.ins_start),
                                                self.skip(a)))
                continue
            assert nm is not None
            names.append(nm.group(1))
            self.refs.append((nm.group(1), a + text[a:b].rfind(nm.group(1)), "operand"))
        return tuple(names)

    def tuple_element(self, comp: Computation, ref: str, line: int, off: int) -> str:
        """The get-tuple-element a compact operand ``name#i`` (XLA 0.12) stands for, added to
        ``comp`` before the instruction being read (building.tuple_element); an error at ``off``."""
        try:
            name, made = tuple_element(comp, ref, line, self.path, _PLACEHOLDER)
        except TupleElementError as e:
            raise self.error(str(e), off) from None
        for ins in made:
            if ins.shape is _PLACEHOLDER:
                self.pending.append((ins, off))
        return name

def parse_general(text: str, path: str | None = None) -> Module:
    """Parse ``text`` on the general path. Raises :class:`HloParseError`.

    The cyclic collector is paused while the (acyclic) model is built, as ``parse_hlo`` does
    around both paths (hlo/gcpause.py); nested in ``parse_hlo``'s pause, this one does nothing."""
    with paused_gc():
        return GeneralParser(text, path).parse()
