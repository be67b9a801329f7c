"""The closed vocabularies of the analysis, as ``StrEnum`` (equal to their JSON strings)."""

from __future__ import annotations

from enum import StrEnum

from hloscope.vocab import Direction, LinkMode

__all__ = ["Direction", "LinkMode", "NameBasis", "PairKind", "Reason", "SegmentKind", "VerdictKind", "VERDICT_ORDER"]


class VerdictKind(StrEnum):
    """How well the schedule hides a transfer (docs/verdicts.md), worst first."""

    SYNC = "sync"
    EXPOSED = "exposed"
    PARTIAL = "partial"
    HIDDEN = "hidden"
    UNSCHEDULED = "unscheduled"


class NameBasis(StrEnum):
    """How a transfer's ``checkpoint_name`` was decided (``hloscope.analysis.structure.transfer_names``)."""

    DATA_FLOW = "data-flow"  # the moved value followed back to the tagged op (or its op_name, an argument's path)
    # data flow reached the op that computed the tagged value, at a line several names share (MaxText's
    # RoPE computes Q and K on one line); the user frames that called that line told which name's it is
    CALLERS = "callers"
    BYTES = "bytes"  # a guess: only the bytes of the request's placement annotations matched it


class PairKind(StrEnum):
    """What an async start/done pair does."""

    COLLECTIVE = "collective"
    HOST_TRANSFER = "host_transfer"
    OTHER = "other"


class Reason(StrEnum):
    """Why a verdict was reached; ``render.verdict_words`` turns it (and the facts) into words."""

    NOT_SCHEDULED = "not_scheduled"  # module before optimizations: no order to judge
    SYNCHRONOUS = "synchronous"  # one instruction; the stream waits for it
    NO_DONE = "no_done"  # async start without a matching done
    UNKNOWN_WINDOW = "unknown_window"  # start and done in computations that cannot be related
    EMPTY_WINDOW = "empty_window"  # done right after start
    ONLY_FREE_OPS = "only_free_ops"  # window holds only bookkeeping ops
    ESTIMATED = "estimated"  # window holds work; hidden fraction estimated from the window alone
    SIMULATED = "simulated"  # decided by the simulated wait at the done (analysis/simulate/step.py)
    HELD_UP = "held_up"  # it held other transfers up: decided by the waits charged to it (its blame)


class SegmentKind(StrEnum):
    """Where a window segment lies relative to loop iterations."""

    BETWEEN = "between"  # start..done in one computation, one iteration
    ITERATION_TAIL = "iteration_tail"  # after the start to the end of the loop body
    ITERATION_HEAD = "iteration_head"  # top of the (next) loop body to the done
    PROLOGUE = "prologue"  # in the caller, after the start, before the loop
    EPILOGUE = "epilogue"  # in the caller, after the loop, before the done


VERDICT_ORDER = tuple(VerdictKind)
