"""The line reader: an instruction or a computation header laid out as XLA's printer writes it,
read whole with a few compiled regular expressions.

Both parser paths read printed lines through it. The fast path (:mod:`hloscope.hlo.parser`)
reads each instruction line's head here (:data:`PRINTED_RE`, :func:`printed_shape`,
:func:`printed_operands`) and checks what follows the operand list with its own cheap rule
(printer-shaped text keeps its attributes as written). The general path
(:mod:`hloscope.hlo.general`) reads with the same wherever an instruction or a header starts,
plus :func:`printed_attributes` and :func:`printed_header`, which accept only text its token
reader would read to the same result: ASCII, single blanks where the printer puts them,
brackets balanced, strings closed on the line, no comment but the printer's
``/*index=N*/`` (or one that ends the attribute list).

Contract: every reader here returns None where it is not sure, and raises nothing
(:func:`printed_shape` excepted: a :class:`~hloscope.hlo.shape.ShapeError`); the caller reads
that text its own way, and reports its error.
"""

from __future__ import annotations

import re

from hloscope.hlo.shape import Shape, ShapeError, parse_shape

# Whitespace (XLA's four blanks, not Unicode's) and comments between tokens. An
# unterminated "/*" is left in place for the caller to report.
SKIP_RE = re.compile(r"(?:[ \t\n\r]+|//[^\n]*|/\*.*?\*/)*", re.S)
_GAP_RE = re.compile(r'("[^"\\]*(?:\\.[^"\\]*)*")|(?:[ \t\n\r]+|//[^\n]*|/\*.*?\*/)+', re.S)

_BARE = r"A-Za-z0-9_\-?=<>%:*#+~@."  # what the token reader reads as a bare value, "/" excepted
_INDEX = r"(?:/\*index=[0-9]+\*/)?"
_LAYOUT_CH = r"[A-Za-z0-9_,:*.]"
#: An array shape the token reader reads to the same end (ASCII only, no blanks).
_ARRAY = (r"[a-z][a-z0-9]*+\[[0-9,?<=]*+\]"
          rf"(?:\{{{_LAYOUT_CH}*+(?:\({_LAYOUT_CH}*+\){_LAYOUT_CH}*+)*+\}})?+")
_TUPLE1 = rf"\((?:{_INDEX}{_ARRAY}(?:, {_INDEX}{_ARRAY})*)?\)"
_TUPLE2 = rf"\((?:{_INDEX}(?:{_ARRAY}|{_TUPLE1})(?:, {_INDEX}(?:{_ARRAY}|{_TUPLE1}))*)?\)"
_SHAPE = rf"(?:{_ARRAY}|{_TUPLE2})"
#: ``[ROOT] name = shape opcode(operands)`` as printed; groups: ROOT, name, shape, opcode, operand
#: text (which may run over lines, with the printer's ``/*index=N*/`` comments). Possessive
#: quantifiers (``*+``) where no later token could start with what they took: the same matches,
#: with no state kept to give characters back (the fast path's cost per line).
PRINTED_RE = re.compile(
    rf"[ \t]*+(ROOT )?%?([A-Za-z0-9_][A-Za-z0-9_.\-]*+) = ({_SHAPE}) ([a-z][a-z0-9\-_]*+)"
    rf"\(([{_BARE} ,\t\n\r]*+(?:/\*index=[0-9]+\*/[{_BARE} ,\t\n\r]*+)*+)\)")
_PRINTED_HEADER_RE = re.compile(
    rf"(ENTRY )?%?([A-Za-z0-9_][A-Za-z0-9_.\-]*) "
    rf"\((?:{_INDEX}[A-Za-z0-9_][A-Za-z0-9_.\-]*: {_SHAPE}(?:, {_INDEX}[A-Za-z0-9_][A-Za-z0-9_.\-]*: {_SHAPE})*)?\)"
    rf" -> ({_SHAPE}) \{{")
#: An operand list as the printer writes it.
_PRINTED_OPERANDS_RE = re.compile(
    r"%?[A-Za-z0-9_][A-Za-z0-9_.\-]*(?:#[0-9]+)*(?:, %?[A-Za-z0-9_][A-Za-z0-9_.\-]*(?:#[0-9]+)*)*")
#: The printer's comment before an operand of a long list (``%a, /*index=5*/%f``).
_INDEX_COMMENT_RE = re.compile(r"(^|, )/\*index=[0-9]+\*/")
#: One operand as printed, a compact tuple element (``%name#i``, XLA 0.12) included.
_PRINTED_OPERAND_RE = re.compile(r"%?([A-Za-z0-9_][A-Za-z0-9_.\-]*(?:#[0-9]+)*)")
#: A string closed on its line.
_LINE_STRING_RE = re.compile(r'"[^"\\\n]*(?:\\[^\n][^"\\\n]*)*"')
#: In an attribute list with its strings made "\x01": a character the printer's layout never
#: holds outside strings (a blank that normalize() would drop or merge is looked for apart).
_ATTR_ODD_RE = re.compile(rf"[^{_BARE},\[\]{{}}() \x01]")
#: An innermost bracket group (made "\x02", repeatedly, to leave the top level).
_GROUP_RE = re.compile(r"\([^(){}\[\]]*\)|\[[^(){}\[\]]*\]|\{[^(){}\[\]]*\}")
#: The top level of a printer-shaped attribute list: ", name=value" items.
_ATTR_LIST_RE = re.compile(rf"(?:, [A-Za-z_][A-Za-z0-9_.\-]*=[{_BARE}\x01\x02]+)+")
#: Items the token reader treats specially: a literal's shape and value, a computation in place.
_ATTR_SPECIAL_RE = re.compile(
    r", (?:literal=|(?:calls|to_apply|condition|body|true_computation|false_computation)=\x02)")
#: Deepest bracket nesting of an attribute list read whole (deeper ones go to the token reader).
_PRINTED_DEPTH = 16
#: Longest attribute list read whole, in characters: beyond, the token reader reads it (it would
#: otherwise be copied once per instruction of a line that holds many).
_PRINTED_SPAN = 1 << 14


def normalize(text: str) -> str:
    """Comments dropped, blank runs made one space, none next to a bracket or before a comma."""
    if " " not in text and "\n" not in text and "/" not in text and "\t" not in text and "\r" not in text:
        return text
    out: list[str] = []
    last = ""  # the last character written
    pos = 0
    for m in _GAP_RE.finditer(text):
        if m.start() > pos:
            out.append(text[pos:m.start()])
            last = text[m.start() - 1]
        pos = m.end()
        if m.group(1) is not None:
            out.append(m.group(1))
            last = '"'
            continue
        after = text[pos:pos + 1]
        if last and after and last not in "([{" and after not in ")]},":
            out.append(" ")
            last = " "
    out.append(text[pos:])
    return "".join(out)


def printed_shape(shape_text: str) -> Shape:
    """The shape of :data:`PRINTED_RE`'s third group (a tuple's blanks dropped; parse_shape skips its
    ``/*index=N*/`` comments)."""
    return parse_shape(shape_text.replace(" ", "") if shape_text[0] == "(" else shape_text)


def printed_operands(body: str) -> tuple[str, ...] | None:
    """The operand names of :data:`PRINTED_RE`'s last group: ``%a, %b`` as printed, or pieces that
    are each one name (``/*index=5*/%c``, ``%t#0``) between commas; None for anything else (an
    empty piece, a typed operand ``f32[] %x``)."""
    plain = _INDEX_COMMENT_RE.sub(r"\1", body) if "/" in body else body
    if _PRINTED_OPERANDS_RE.fullmatch(plain):
        return tuple(plain.replace("%", "").split(", "))
    if not body or ("," not in body and not normalize(body).strip()):
        return ()
    names: list[str] = []
    for piece in body.split(","):
        nm = _PRINTED_OPERAND_RE.fullmatch(normalize(piece).strip() if "/" in piece else piece.strip())
        if nm is None:
            return None
        names.append(nm.group(1))
    return tuple(names)


def operand_offsets(body: str, names: tuple[str, ...], at: int) -> list[int]:
    """Where each of :func:`printed_operands`' names stands, ``body`` starting at offset ``at``."""
    offsets: list[int] = []
    if not names:
        return offsets
    for piece, name in zip(body.split(","), names, strict=True):
        offsets.append(at + piece.rfind(name))
        at += len(piece) + 1
    return offsets


def printed_header(text: str, pos: int) -> tuple[bool, str, int, int] | None:
    """A computation header as the printer writes it, ``[ENTRY] %name (params) -> shape {``:
    (is entry, name, offset of the name, offset of the '{')."""
    m = _PRINTED_HEADER_RE.match(text, pos)
    if m is None or (m.group(1) is None and m.group(2) == "ENTRY"):
        return None  # "ENTRY (p: f32[]) -> ...": the token reader reads ENTRY as the keyword
    try:
        printed_shape(m.group(3))
    except ShapeError:
        return None
    return m.group(1) is not None, m.group(2), pos if m.group(1) is None else m.end(1), m.end() - 1


def printed_attributes(text: str, close: int) -> tuple[str, int, int] | None:
    """From ``close`` (past an operand list), an attribute list as the printer writes it, to the
    end of its line (it may start on the next one): (attribute text, offset of its first ',',
    offset after it and the gap that follows)."""
    if not text.startswith(",", close):
        # No attributes (the token reader's answer is then "none, and the next token is
        # where they would start"), or they start after a line break or a comment. Nothing
        # here raises: an error in the operands, read after this, would come first.
        skipped = SKIP_RE.match(text, close)
        assert skipped is not None  # the pattern matches the empty string
        after = skipped.end()
        if text.startswith("/*", after):
            return None  # a comment left open: the token reader reports it
        if not text.startswith(",", after):
            return "", after, after
        close = after
    # The line's end, unless another instruction (" = ", or that in a string) comes first, or
    # the line is very long: those are read token by token.
    eq = text.find(" = ", close, close + _PRINTED_SPAN)
    eol = text.find("\n", close, eq if eq >= 0 else close + _PRINTED_SPAN)
    if eol < 0:
        if eq >= 0 or len(text) - close > _PRINTED_SPAN:
            return None
        eol = len(text)
    rest = text[close:eol].rstrip(" \t\r")
    if not rest.isprintable():
        return None  # a tab, or a control character (one that could pass for a marker below)
    flat = _LINE_STRING_RE.sub("\x01", rest) if '"' in rest else rest
    cut = flat.find("/")
    if cut >= 0:
        # A comment ending the line: the list ends before it (if it goes on, after the
        # comment, the check of what follows below sends the line to the token reader).
        if not flat.startswith(("//", "/*"), cut):
            return None
        at = cut  # the same place in ``rest``: past the strings made "\x01" before it
        before = flat.count("\x01", 0, cut)
        for k, string in enumerate(_LINE_STRING_RE.finditer(rest)):
            if k == before:
                break
            at += string.end() - string.start() - 1
        rest, flat = rest[:at].rstrip(" "), flat[:cut].rstrip(" ")
    if _ATTR_ODD_RE.search(flat) is not None or "  " in flat or "{ " in flat or " }" in flat or " ," in flat \
            or "( " in flat or " )" in flat or "[ " in flat or " ]" in flat:
        return None
    depth = 0
    while "{" in flat or "[" in flat or "(" in flat:
        flat, groups = _GROUP_RE.subn("\x02", flat)
        depth += 1
        if not groups or depth > _PRINTED_DEPTH:
            return None  # misnested, or deeper than read here
    if _ATTR_LIST_RE.fullmatch(flat) is None or _ATTR_SPECIAL_RE.search(flat) is not None:
        return None
    gap = SKIP_RE.match(text, close + len(rest))
    assert gap is not None  # the pattern matches the empty string
    end = gap.end()
    if text.startswith((",", "{", "/*"), end):
        # The list, or its last value, goes on after the line break; or a comment is left
        # open (the token reader reports it).
        return None
    return rest[2:], close, end
