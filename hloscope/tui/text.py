"""Strings from a module, a manifest or a file name, made safe to show: data, never markup.

Every widget gets such a string through :func:`shown` (control characters made
visible) inside a ``rich.text.Text`` built without markup (:func:`plain`), never
as a ``str`` that Textual or Rich would parse as markup (``[b]``, ``[link=...]``,
``[@click=...]``). Light (``re`` and Rich only): the first screen imports it.
"""

from __future__ import annotations

import re

from rich.text import Text

#: C0/C1 control characters and the bidirectional overrides: a terminal would act on them
#: (move the cursor, reorder the line), so they are shown as escapes (``\x1b``, ``\u202e``).
_CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape_control(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def shown(s: str) -> str:
    r"""``s`` with control characters as visible escapes (``\x1b``); everything else as it is."""
    return _CONTROL_RE.sub(_escape_control, s)


#: The escapes XLA's printer (absl::CEscape) leaves in a metadata string once the parser has
#: decoded ``\"`` and ``\\``: a pytree path prints as ``params[\'layers\'][\'wq\']``.
_HLO_ESCAPES = {"'": "'", "?": "?", "n": "\n", "t": "\t", "r": "\r"}
_HLO_ESCAPE_RE = re.compile(r"\\(['?ntr])")


def hlo_string(s: str) -> str:
    """A metadata string as its author wrote it (``params['layers']['wq']``): for display only,
    still through :func:`shown` / :func:`plain` (a decoded newline is shown as ``\x0a``)."""
    return _HLO_ESCAPE_RE.sub(lambda m: _HLO_ESCAPES[m.group(1)], s) if "\\" in s else s


def plain(s: str, style: str = "") -> Text:
    """``s`` as literal text (no markup is parsed), control characters shown as escapes."""
    return Text(shown(s), style=style)


def lines(*parts: str) -> Text:
    """One :func:`plain` text of several lines (a newline inside a part is shown as ``\\x0a``)."""
    return Text("\n").join(plain(p) for p in parts)
