"""Splitting HLO attribute text: ``a=1, calls=%f, metadata={op_name="x(y)"}``.

Values are returned as raw text; nothing is rejected, so attributes that a newer
XLA adds survive. Commas inside strings, ``{}``, ``()`` and ``[]`` do not split.
"""

from __future__ import annotations

import re

# Strings (double or single quoted, with escapes), brackets, and the separators.
_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'|[(){}\[\],]')
_OPEN = {"(": ")", "{": "}", "[": "]"}


class AttributeError_(ValueError):
    """Unbalanced brackets; ``offset`` is the 0-based position of the problem."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def split_top_level(text: str, start: int = 0, stop_at_close: bool = False) -> tuple[list[tuple[int, int]], int]:
    """Split ``text`` at top-level commas.

    Returns the (start, end) spans of the pieces and the end offset. With
    ``stop_at_close`` the scan stops at the first unmatched ``)`` (the end of an
    operand list); its offset is returned as the end.
    """
    spans: list[tuple[int, int]] = []
    stack: list[str] = []
    piece = start
    for m in _TOKEN_RE.finditer(text, start):
        tok = m.group()
        c = tok[0]
        if c == '"' or c == "'":
            continue
        if c in _OPEN:
            stack.append(_OPEN[c])
        elif c == ",":
            if not stack:
                spans.append((piece, m.start()))
                piece = m.end()
        else:
            if not stack:
                if stop_at_close and c == ")":
                    spans.append((piece, m.start()))
                    return spans, m.start()
                raise AttributeError_(f"unmatched '{c}'", m.start())
            if stack[-1] != c:
                raise AttributeError_(f"expected '{stack[-1]}' but found '{c}'", m.start())
            stack.pop()
    if stack:
        raise AttributeError_(f"missing '{stack[-1]}'", len(text))
    if stop_at_close:
        raise AttributeError_("missing ')'", len(text))
    spans.append((piece, len(text)))
    return spans, len(text)


def parse_attribute_list(text: str) -> dict[str, str]:
    """``a=1, b={x}`` -> {"a": "1", "b": "{x}"}. A bare word maps to ""."""
    out: dict[str, str] = {}
    spans, _ = split_top_level(text)
    for s, e in spans:
        piece = text[s:e].strip()
        if not piece:
            continue
        eq = piece.find("=")
        if eq < 0:
            out[piece] = ""
        else:
            out[piece[:eq].strip()] = piece[eq + 1 :].strip()
    return out


_MAP_ITEM_RE = re.compile(r'\s*,?\s*([\w.\-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,}]*)')


def parse_braced_map(text: str) -> dict[str, str]:
    """``{op_name="a" stack_frame_id=3}`` -> {"op_name": "a", "stack_frame_id": "3"}."""
    t = text.strip()
    if t.startswith("{") and t.endswith("}"):
        t = t[1:-1]
    out: dict[str, str] = {}
    for m in _MAP_ITEM_RE.finditer(t):
        v = m.group(2)
        if v.startswith('"'):
            v = v[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        out[m.group(1)] = v
    return out
