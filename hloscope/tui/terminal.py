"""Whether there is a terminal for the TUI, checked before Textual takes it over.

Textual draws on standard error (``sys.__stderr__``) and reads keys from file descriptor 0.
With no terminal there (a script, CI, ``</dev/null``) it would wait for keys that never come;
:func:`need_terminal` makes that one line (exit 2) instead. Keys come from the controlling
terminal (``/dev/tty``) when standard input is a pipe or a file but a terminal is there.
"""

from __future__ import annotations

import os
import sys

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError


def use_terminal_for_keys(stdin_held_module: bool = False) -> None:
    """Textual reads keys from file descriptor 0: when it is not a terminal, put the controlling
    terminal in its place; with none, one line. ``stdin_held_module``: ``tui -`` read the module there."""
    if os.isatty(0):
        return
    try:
        fd = os.open("/dev/tty", os.O_RDWR)
    except OSError:
        if stdin_held_module:
            raise HloscopeError("tui -: stdin held the module and there is no terminal to read keys from "
                                "(run it in a terminal, or give the module as a PATH)", EXIT_BAD_INPUT) from None
        raise HloscopeError("tui needs a terminal: standard input is not one and there is no terminal to read keys "
                            "from (in a script or CI, hloscope analyze prints the same report)",
                            EXIT_BAD_INPUT) from None
    os.dup2(fd, 0)
    os.close(fd)


def need_terminal() -> None:
    """One line (exit 2) unless Textual has a terminal to draw on and keys to read."""
    out = sys.__stderr__
    try:
        drawn = out is not None and os.isatty(out.fileno())
    except (OSError, ValueError):
        drawn = False
    if not drawn:
        raise HloscopeError("tui needs a terminal: standard error, where it draws, is not one (in a script or CI, "
                            "hloscope analyze prints the same report)", EXIT_BAD_INPUT)
    use_terminal_for_keys()
