"""HLO text to :class:`~hloscope.hlo.model.Module`.

Reads what XLA prints: ``compiled.as_text()``, ``--xla_dump_to`` files
(``*before_optimizations.txt``, ``*after_optimizations.txt``) and older or newer
variants. One instruction per line, as XLA always prints them. Unknown opcodes
and attributes are kept. Malformed text raises :class:`HloParseError` with the
1-based line and column.

Speed matters (real modules reach 100 MB): each line is matched with compiled
regular expressions; attributes are kept as raw text and split only on demand;
shapes are interned by text.
"""

from __future__ import annotations

import gc
import re
from functools import lru_cache

from hloscope.errors import HloParseError
from hloscope.hlo.attributes import AttributeError_, parse_attribute_list, split_top_level
from hloscope.hlo.model import Computation, Instruction, Module
from hloscope.hlo.shape import Shape, ShapeError, parse_shape, shape_span

#: Opcodes XLA has as real start/done instructions (not async-start sugar).
NATIVE_ASYNC = frozenset({
    "all-gather-start", "all-gather-done", "all-reduce-start", "all-reduce-done",
    "collective-permute-start", "collective-permute-done", "copy-start", "copy-done",
    "async-start", "async-update", "async-done", "send", "send-done", "recv", "recv-done",
})
# Opcodes whose parenthesised text is a literal, not operands.
_LITERAL_OPCODES = frozenset({"parameter", "constant"})

# Operand lists without nesting or strings (nearly all of them): "%a, %b)".
_SIMPLE_OPERANDS_RE = re.compile(r"[^(){}\[\]\"']*\)")
_COMMENT_RE = re.compile(r"/\*.*?\*/")
_SEPARATOR_RE = re.compile(r"\s*,\s*")
_FAST_RE = re.compile(
    r"\s*(ROOT\s+)?%?([^\s=]+) = ([a-z][a-z0-9]*\[[^\]]*\](?:\{[^{}]*\})?) ([a-z][a-z0-9\-_]*)\(([^(){}\[\]\"']*)\)")
_INSTR_RE = re.compile(r"\s*(ROOT\s+)?%?([^\s=]+)\s*=\s*")
_OPCODE_RE = re.compile(r"\s*([a-z][a-z0-9\-_]*)\(")
_COMP_RE = re.compile(r"(ENTRY\s+)?%?([^\s(]+)\s*(?:\(.*)?\{\s*$")
_SECTION_ITEM_RE = re.compile(r"(\d+)\s+(.*)$")
_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_LOC_RE = re.compile(r"(\w+)=(\d+)")


@lru_cache(maxsize=4096)
def canonical_opcode(text_opcode: str) -> tuple[str, str]:
    """(canonical opcode, wrapped opcode) for an opcode as written."""
    if text_opcode in NATIVE_ASYNC:
        return text_opcode, ""
    for suffix in ("-start", "-update", "-done"):
        if text_opcode.endswith(suffix) and len(text_opcode) > len(suffix):
            return "async" + suffix, text_opcode[: -len(suffix)]
    return text_opcode, ""


def parse_hlo(text: str, path: str | None = None) -> Module:
    """Parse a whole HLO module. Raises :class:`HloParseError`."""
    # The model is acyclic; pausing the cyclic GC while building tens of thousands
    # of objects avoids repeated full collections (cost stays linear in size).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _Parser(text, path).parse()
    finally:
        if enabled:
            gc.enable()


class _Parser:
    def __init__(self, text: str, path: str | None) -> None:
        self.text = text
        self.path = path

    def error(self, message: str, line: int, column: int) -> HloParseError:
        return HloParseError(message, line, column, self.path)

    def parse(self) -> Module:
        lines = self.text.split("\n")
        module: Module | None = None
        comp: Computation | None = None
        section = ""
        computations: dict[str, Computation] = {}
        entry = ""
        for idx, raw in enumerate(lines):
            lineno = idx + 1
            line = raw.rstrip()
            if not line or line.lstrip().startswith("//"):
                if not line:
                    section = ""
                continue
            if comp is not None:
                if line.strip() == "}":
                    self.check_computation(comp, lines)
                    comp = None
                    continue
                self.parse_instruction(line, lineno, comp)
                continue
            if module is None:
                if not line.startswith("HloModule"):
                    raise self.error("expected 'HloModule <name>' at the start of the module", lineno, 1)
                module = self.parse_header(line, lineno)
                continue
            if line in _SECTIONS:
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
            if comp.is_entry:
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
        if not name:
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
        key = int(m.group(1))
        val = m.group(2)
        if section in ("FileNames", "FunctionNames"):
            s = val.strip()
            if s.startswith('"') and s.endswith('"'):
                s = s[1:-1]
            (module.file_names if section == "FileNames" else module.function_names)[key] = s
            return
        fields = {k: int(v) for k, v in _LOC_RE.findall(val)}
        if section == "FileLocations":
            module.file_locations[key] = (
                fields.get("file_name_id", 0), fields.get("function_name_id", 0),
                fields.get("line", 0), fields.get("column", 0),
            )
        else:
            module.stack_frames[key] = (fields.get("file_location_id", 0), fields.get("parent_frame_id", 0))

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
            shape = parse_shape(line[pos:send])
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
            except AttributeError_ as e:
                raise self.error(str(e), lineno, e.offset + 1) from None
        return m, name, shape, text_opcode, start, close, spans

    def parse_instruction(self, line: str, lineno: int, comp: Computation) -> None:
        fast = _FAST_RE.match(line)
        if fast is not None:
            # One regex covers most lines: array shape, opcode, un-nested operands.
            m = fast
            name = fast.group(2)
            try:
                shape = parse_shape(fast.group(3))
            except ShapeError as e:
                raise self.error(str(e), lineno, fast.start(3) + e.offset + 1) from None
            text_opcode = fast.group(4)
            start, close = fast.start(5), fast.end(5)
            spans = None
        else:
            m, name, shape, text_opcode, start, close, spans = self.parse_head(line, lineno)
        opcode, wrapped = canonical_opcode(text_opcode)
        literal = ""
        operands: tuple[str, ...] = ()
        if opcode in _LITERAL_OPCODES:
            literal = line[start:close]
        elif spans is None:
            body = line[start:close]
            if "/*" in body:
                body = _COMMENT_RE.sub("", body)
            if " " in body.replace(", ", ","):  # typed operands: "f32[] %x" style
                operands = tuple(p.rsplit(None, 1)[-1].lstrip("%") for p in body.split(",") if p.strip())
            elif body:
                operands = tuple(body.replace(" ", "").replace("%", "").split(","))
        else:
            ops = []
            for lo, hi in spans:
                piece = line[lo:hi].strip()
                if piece.startswith("/*"):
                    piece = piece[piece.find("*/") + 2 :].strip()
                if piece:
                    ops.append(piece.rsplit(None, 1)[-1].lstrip("%"))
            operands = tuple(ops)
        sep = _SEPARATOR_RE.match(line, close + 1)
        if sep is not None:
            rest = line[sep.end():]
        else:
            rest = line[close + 1 :].strip()
            if rest:
                raise self.error(f"expected ',' before '{rest[:20]}'", lineno, close + 2)
        if rest and (rest.count("{") != rest.count("}") or rest.count("(") != rest.count(")")
                     or rest.count("[") != rest.count("]")):
            # Attributes are split lazily; a cheap count finds likely imbalance, the
            # full scan then confirms it and finds the column.
            try:
                split_top_level(rest)
            except AttributeError_ as e:
                raise self.error(str(e), lineno, len(line) - len(rest) + e.offset + 1) from None
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
                    if op not in known:
                        raise self.error(f"control predecessor '{op}' of '{ins.name}' is not defined", ins.line, 1)

    def check_calls(self, module: Module, lines: list[str]) -> None:
        for comp in module.computations.values():
            for ins in comp.instructions:
                for called in ins.called_computations:
                    if called not in module.computations:
                        text = lines[ins.line - 1]
                        col = text.find(called) + 1
                        raise self.error(f"'{ins.name}' calls unknown computation '{called}'", ins.line, max(col, 1))
