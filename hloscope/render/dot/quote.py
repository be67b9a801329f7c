"""The one quoting layer of the DOT views: every user string goes through here.

Contract: names, op_names and metadata come from HLO text the user supplied,
so they may hold quotes, backslashes, braces, angle brackets, newlines or any
unicode. Two kinds of string reach the ``graphviz`` package, and both are safe
however hostile the input:

- node ids from :func:`node_id`: only ``[A-Za-z0-9_.-]`` plus ``/`` separators;
  every other character is spelled ``_uXXXX_``, so an id can never carry a quote,
  a backslash, a port separator (``:``) or HTML markup;
- labels from :func:`label`: each line has its control characters made visible
  and its backslashes doubled (so Graphviz escapes such as ``\\N`` or ``\\l``
  stay literal text); lines are joined with DOT's ``\\n``; the result is marked
  ``nohtml`` so a label that looks like ``<...>`` is never read as an HTML label.
  The ``graphviz`` package then escapes the double quotes when it writes the file.

Nothing here interprets the text; long strings are shortened with an ellipsis.
"""

from __future__ import annotations

import re
import textwrap
from typing import cast

from graphviz import nohtml

_SAFE_ID = re.compile(r"[A-Za-z0-9_.\-]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _id_part(s: str) -> str:
    return "".join(c if _SAFE_ID.match(c) else f"_u{ord(c):04x}_" for c in s) or "_empty_"


def node_id(*parts: str) -> str:
    """A DOT node id for an instruction (``computation/name``): readable, unique, inert."""
    return "/".join(_id_part(p) for p in parts)


def shorten(s: str, limit: int = 60) -> str:
    """``s`` cut to ``limit`` characters, the middle replaced by an ellipsis."""
    if len(s) <= limit:
        return s
    keep = limit - 1
    return s[: keep - keep // 2] + "…" + s[len(s) - keep // 2:]


def _visible(s: str) -> str:
    """Control characters (newlines, tabs, NUL ...) as visible ``\\n``-style text."""
    def sub(m: re.Match[str]) -> str:
        c = m.group(0)
        named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
        return named.get(c, f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}")
    return _CONTROL.sub(sub, s)


def line(s: str, limit: int = 60) -> str:
    """One label line of user text: control characters shown, shortened (not yet escaped)."""
    return shorten(_visible(s), limit)


#: Widest title line of a diagram or panel, in characters: a longer sentence is wrapped, so a
#: panel is sized by its drawing, not by one 200-character line (issue 36: query_proj's three
#: panels were 1,258-1,444 pt wide for their slack sentence, and a font wider than the one the
#: layout measured ran it past the border).
TITLE_WIDTH = 80


def wrapped(s: str, width: int = TITLE_WIDTH) -> list[str]:
    """One sentence of user text as title lines of at most ``width`` characters, broken between
    words (an instruction name longer than that stays whole); control characters shown."""
    return textwrap.wrap(_visible(s), width, break_long_words=False, break_on_hyphens=False) or [""]


def label(*lines: str) -> str:
    """A DOT label of plain-text lines (centred), safe for any text."""
    return cast(str, nohtml("\\n".join(x.replace("\\", "\\\\") for x in lines)))

