"""The one error type hloscope raises for user-facing failures, and its exit codes.

Every failure a user can cause (bad input, bad flags, unknown target, a compile
that fails) is a :class:`HloscopeError` carrying a documented exit code. The CLI
prints ``str(err)`` on one line and exits with ``err.exit_code``.
"""

from __future__ import annotations

# Exit codes (documented in docs/cli.md).
EXIT_OK = 0
EXIT_CHECK_FAILED = 1  # analysis ran, but a --fail-on condition was met
EXIT_BAD_INPUT = 2  # malformed HLO text, unreadable path, bad arguments
EXIT_UNKNOWN_NAME = 3  # unknown target, workload, preset or format name
EXIT_TRACE_FAILED = 4  # the user's function failed to trace or lower
EXIT_COMPILE_FAILED = 5  # XLA rejected a flag or failed to compile
EXIT_OUT_OF_MEMORY = 6  # the host ran out of memory while compiling
EXIT_ENVIRONMENT = 7  # jax / the CUDA plugin is missing or broken
EXIT_NOTHING_TO_CHECK = 8  # a check found nothing to judge (unscheduled, not GPU, no host transfer)
EXIT_INTERNAL = 70  # a bug in hloscope (one line; HLOSCOPE_DEBUG=1 shows the traceback)


class HloscopeError(Exception):
    """A failure to report to the user in one line, with an exit code."""

    exit_code: int = EXIT_BAD_INPUT

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class HloParseError(HloscopeError):
    """Malformed HLO text. ``str()`` is ``path:line:column: message``.

    ``truncated``: the parser found the text ending inside a computation (the message says so)."""

    exit_code = EXIT_BAD_INPUT
    truncated = False

    def __init__(self, message: str, line: int, column: int, path: str | None = None) -> None:
        self.reason = message
        self.line = line
        self.column = column
        self.path = path or "<text>"
        super().__init__(f"{self.path}:{line}:{column}: {message}")
