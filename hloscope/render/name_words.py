"""How every view shows a transfer's one name (``hloscope.analysis.intent.naming``), worded once here.

A name decided by data flow is shown as it is; one decided by bytes only is a guess and
carries :data:`GUESS_MARK` in a cell (``key_proj?``) or ``(a guess: by bytes only)`` in a
sentence, with :data:`GUESS_LEGEND` once under a table that shows one. A ``checkpoint_name``
data flow found on a tensor no request offloads is never shown as the transfer's name:
:func:`unrequested_words` says what the tensor is. Reads any object with the
:class:`~hloscope.analysis.structure.transfers.HostTransfer` name fields.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

#: What a guessed name carries in a table cell, a diagram label, a TUI column.
GUESS_MARK = "?"
#: One line under a table that shows a guessed name.
GUESS_LEGEND = ("name?: a guess: data flow from the moved value did not reach the tagged op; only its bytes "
                "matched that request's placement annotation (docs/offload-happened.md#one-name-per-transfer)")


def guessed(t: Any) -> bool:
    """The transfer's name was decided by bytes only."""
    return bool(getattr(t, "name_guessed", False))


def name_cell(t: Any, empty: str = "-") -> str:
    """``key_proj``, ``key_proj?`` (a guess), or ``empty`` when it has no name."""
    name = getattr(t, "checkpoint_name", None)
    if not name:
        return empty
    return f"{name}{GUESS_MARK}" if guessed(t) else str(name)


def name_text(name: str | None, guess: bool) -> str:
    """``'key_proj'``, ``'key_proj' (a guess: by bytes only)``, or "" without a name."""
    if not name:
        return ""
    return f"'{name}' (a guess: by bytes only)" if guess else f"'{name}'"


def name_words(t: Any) -> str:
    """:func:`name_text` of a transfer's name."""
    return name_text(getattr(t, "checkpoint_name", None), guessed(t))


def unrequested_words(t: Any) -> str:
    """``moves checkpoint_name 'mlpwo', which no request offloads`` or ""."""
    other = getattr(t, "unrequested_name", None)
    return f"moves checkpoint_name '{other}', which no request offloads" if other else ""


def legend(transfers: Iterable[Any]) -> list[str]:
    """``[GUESS_LEGEND]`` when some transfer's name is a guess, else ``[]``."""
    return [GUESS_LEGEND] if any(guessed(t) for t in transfers) else []
