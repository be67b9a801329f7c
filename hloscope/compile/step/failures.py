"""What went wrong in a deviceless compile, as one line and an exit code.

:func:`first_line` of an exception's text; :func:`memory_kind_error` for JAX's complaints about a
memory kind (bad input, or a trace that needs ``memory_kind='device'``); :func:`xla_error` for
XLA's own failure (out of host memory, or the compile failed); :func:`refuse_unseen_parameters`
for an argument XLA reads with no instruction of the schedule.
"""

from __future__ import annotations

import re

from hloscope.errors import (
    EXIT_BAD_INPUT,
    EXIT_COMPILE_FAILED,
    EXIT_OUT_OF_MEMORY,
    EXIT_TRACE_FAILED,
    HloscopeError,
)


def first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:400]
    return text[:400]


def memory_kind_error(e: BaseException) -> HloscopeError | None:
    """A one-line exit-2 error for JAX's complaint about a memory kind, else None."""
    text = str(e)
    m = re.search(r"invalid memory kind: ?(\S+?)\.? Valid memory kinds are: ([\w, ]+)", text, re.I)
    if m:
        return HloscopeError(f"unsupported memory kind '{m.group(1)}': the target's GPUs have "
                             f"{m.group(2).strip()}", EXIT_BAD_INPUT)
    if "memory kind" in text.lower() or "memory_kind" in text:
        return HloscopeError(f"bad memory placement: {first_line(e)}", EXIT_BAD_INPUT)
    if "memory_space of all inputs" in text:
        # On real GPUs JAX fills in memory_kind="device" for a sharding that names none; over
        # the abstract mesh no memory kind means "where the value already is".
        return HloscopeError(f"tracing failed: {first_line(e)} (a NamedSharding over make_mesh(...) without "
                             "memory_kind leaves a value where it is: give memory_kind='device' to bring it "
                             "from host memory)", EXIT_TRACE_FAILED)
    return None



#: XLA's failures that are known upstream issues: (what XLA says, what it is, the issue).
KNOWN_XLA_FAILURES = (
    # TPU XLA, a name offloaded to pinned_host inside a scan inside a checkpointed scan (libtpu 0.0.42,
    # reproduced with no TPU): "INTERNAL: ... The async-start expects the shape of operand 0 to match
    # the async shape at index {0} (f32[...]{...} vs f32[...]{...S(5)})"; libtpu 0.0.50 names the op first,
    # "host-call...call-start.2 (opcode: async-start) ... to match the async shape at index {0, 0} (...S(5))".
    (re.compile(r"async-start.*to match the async shape.*S\(5\)"),
     "host offload inside a nested scan", "AI-Hypercomputer/maxtext#4995"),
)


def xla_error(e: BaseException) -> HloscopeError:
    """XLA's compile failure in one line: the host out of memory, a known upstream failure (named), or
    the compile failed."""
    if isinstance(e, MemoryError):
        return HloscopeError("the host ran out of memory while compiling", EXIT_OUT_OF_MEMORY)
    msg = first_line(e)
    for pattern, what, issue in KNOWN_XLA_FAILURES:
        if pattern.search(msg):
            return HloscopeError(f"XLA compile failed: {what}, a known XLA failure ({issue}): {msg}",
                                 EXIT_COMPILE_FAILED)
    code = EXIT_OUT_OF_MEMORY if "RESOURCE_EXHAUSTED" in msg and "host" in msg.lower() else EXIT_COMPILE_FAILED
    return HloscopeError(f"XLA compile failed: {msg}", code)


def refuse_unseen_parameters(optimized: str) -> None:
    """An argument in ``unpinned_host`` memory is memory space 6 in the entry layout, and XLA
    reads it with no instruction of the schedule (measured: no copy, no S(6) buffer; the
    runtime moves it), so no transfer could be judged: refuse it in one line rather than
    report 0 transfers. (An unpinned_host *result* is written by a visible copy.)"""
    m = re.search(r"entry_computation_layout=\{\((.*?)\)->", optimized.split("\n", 1)[0])
    if not m:
        return
    unseen = re.findall(r"(\w+\[[\d,]*\])\{[^}]*:S\(6\)\}", m.group(1))
    if unseen:
        raise HloscopeError(f"{len(unseen)} argument(s) in memory_kind='unpinned_host' ({', '.join(unseen[:3])} per "
                            "device): XLA reads them with no instruction of the schedule (the runtime copies them), "
                            "so hloscope cannot judge that transfer; use memory_kind='pinned_host'", EXIT_BAD_INPUT)
