"""What became of each request of the step: the intent account's records.

:class:`IntentAccount` holds one :class:`Accounted` per request (``hloscope.analysis.intent.model.Asked``):
the reason (:class:`Why`, docs/offload-happened.md), the facts behind it (:class:`Detail`: a
:class:`Fact` with its names and figures, worded by ``hloscope.render.intent_words``) and the
verdicts of the transfers it became. The pass that builds it is ``hloscope.analysis.intent.account``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeAlias

from hloscope.analysis.intent.model import Asked, Policy
from hloscope.analysis.kinds import Direction, VerdictKind
from hloscope.analysis.simulate.verdict import Verdict


class Why(StrEnum):
    """What became of a request (docs/offload-happened.md)."""

    TRANSFERRED = "transferred"  # it became host transfers (listed)
    SYNC_COPY = "sync-copy"  # it became transfers, at least one synchronous
    PARTLY_REMOVED = "partly-removed"  # it became transfers, but XLA removed some of its placement annotations
    NEVER_TAGGED = "never-tagged"  # the policy names a name no checkpoint_name in the step uses
    PRESET_NOT_TAGGED = "preset-not-tagged"  # a framework preset lists the name; this model tags no value with it
    NOT_A_RESIDUAL = "not-a-residual"  # tagged, but JAX kept no residual of it (carry, output, recomputed)
    SAVED_ON_DEVICE = "saved-on-device"  # a policy saves the name on the device instead
    NO_GRADIENT = "no-gradient"  # no remat site of the policy is differentiated: nothing is saved at all
    DROPPED_IN_LOWERING = "dropped-in-lowering"  # in the jaxpr, but no host placement in the unoptimized module
    REMOVED_BY_XLA = "removed-by-xla"  # annotated in the unoptimized module, gone from the optimized one
    NOT_INSPECTABLE = "policy-not-inspectable"  # a policy hloscope cannot read: what it asks is unknown
    NOT_A_TRANSFER = "not-a-transfer"  # compute_on("device_host") places computation, not data
    UNKNOWN = "unknown"  # the cause cannot be known; the detail says what was checked


class Fact(StrEnum):
    """One fact behind a reason, or what the accounting checked; ``render.intent_words`` words
    each from its arguments (names and figures). A fact whose words continue the one before
    starts with its own separator there."""

    # what the unoptimized module says (``_Lowered``)
    LOWERED_UNKNOWN = "lowered-unknown"
    LOWERED = "lowered"  # to_host, removed, annotations
    # what became of the placement annotations a request owns
    HOW_ELIMINATED = "how-eliminated"
    HOW_BY_LINE = "how-by-line"
    ANNOTATIONS_BECAME = "annotations-became"  # names, how, moved
    READ_BACK = "read-back"  # n
    SAME_BYTES = "same-bytes"  # names
    BYTES_CLAIMED = "bytes-claimed"  # names, how, moved, others: its annotations' transfers carry other names
    ANNOTATIONS_REMOVED = "annotations-removed"  # names, how
    LOOP_RUNS_ONCE = "loop-runs-once"  # loops, trip: the removed annotations sit in loops that run once (issue 34)
    SOME_LOOPS_RUN_ONCE = "some-loops-run-once"  # loops, trip, names, n, of: only some of them do (each loop counted)
    PART_REMOVED = "part-removed"  # names, n, of: some of the request's annotations became no transfer
    ANNOTATIONS_UNMATCHED = "annotations-unmatched"  # names, how
    SOME_SYNC = "some-sync"  # n
    # a tagged name JAX made no host copy of
    NO_SOURCE_LINE = "no-source-line"
    SAVED_BY_POLICY = "saved-by-policy"  # at, policy (a Policy)
    NOT_DIFFERENTIATED = "not-differentiated"  # at
    TAGGED_CARRY = "tagged-carry"  # at
    TAGGED_OUTPUT = "tagged-output"  # at
    TAGGED_NOT_SAVED = "tagged-not-saved"  # at
    # a request JAX copied to host, no transfer found by name or line
    NOT_FOLLOWED = "not-followed"  # unnamed
    DROPPED_WHILE_LOWERING = "dropped-while-lowering"
    NONE_TOLD = "none-told"  # lowered, unnamed
    # names
    CARRY_THE_NAME = "carry-the-name"  # n
    NAMED_BY_BYTES = "named-by-bytes"  # n: that many carry it as a guess (bytes only)
    GUESS_TWINS = "guess-twins"  # names: other name requests whose annotations move as many bytes
    TAGGED_COPIED = "tagged-copied"  # at
    NOT_TAGGED = "not-tagged"  # name, tagged
    PRESET_LISTS = "preset-lists"  # name, framework, setting, value, tagged: a preset's name this model never tags
    DID_YOU_MEAN = "did-you-mean"  # names (a tuple: the closest tagged names)
    # dot offloads
    NO_DOT_COPY = "no-dot-copy"
    DOT_COPIES = "dot-copies"  # n, lines
    # arguments and outputs in host memory
    NO_PARAMETER = "no-parameter"  # label
    PARAMETER_ON_DEVICE = "parameter-on-device"  # param
    PARAMETER_READ = "parameter-read"  # param, n
    PARAMETER_UNREAD = "parameter-unread"  # param
    OUTPUT_WRITTEN = "output-written"  # label, n
    OUTPUT_UNMADE = "output-unmade"  # label, followed
    # compute_on
    RUNS_ON_HOST = "runs-on-host"  # calls
    NO_HOST_CALL = "no-host-call"
    NOT_MARKED_HOST = "not-marked-host"
    MARKED_HOST_REMOVED = "marked-host-removed"  # n
    # placements
    PLACEMENT_NO_LINE = "placement-no-line"  # lowered
    TRACE_BACK = "trace-back"  # n, where
    PLACED = "placed"  # memory, where
    UNUSED = "unused"
    # policies
    NOT_INSPECTABLE = "not-inspectable"  # callable
    CLOSURE_STRINGS = "closure-strings"  # strings
    # annotations only (no trace)
    ITS_SLICES = "its-slices"  # n
    BYTES_NOT_MOVED = "bytes-not-moved"
    NOT_IN_SLICES = "not-in-slices"
    # what was checked
    READ_FROM_TRACE = "read-from-trace"  # policies, tags, placements
    NO_TRACE = "no-trace"  # annotations
    NOTE = "note"  # text: what the trace reader could not read (hloscope.compile.seam.intent)


#: An argument of a fact: a name or figure, names (a tuple), a policy, or a fact of its own; each is
#: worded in its place by ``render.intent_words`` (a policy in JAX's notation, names joined).
Arg: TypeAlias = "str | int | tuple[str, ...] | Policy | Detail"


@dataclass(frozen=True)
class Detail:
    """One fact and its arguments (names, figures, facts), in the order ``render.intent_words`` needs."""

    fact: Fact
    args: tuple[tuple[str, Arg], ...] = ()

    def arg(self, key: str) -> Arg | None:
        return next((v for k, v in self.args if k == key), None)


def fact(kind: Fact, **args: Arg) -> Detail:
    """``Detail(kind, args)``, the arguments by keyword."""
    return Detail(kind, tuple(args.items()))

#: Reasons that mean the request produced no transfer (the check rule ``intent-accounted`` fails on them,
#: and on ``partly-removed``). ``preset-not-tagged`` is not one: the name is the framework preset's,
#: not the user's (the rule ``preset-names-tagged`` fails on it when asked).
NO_TRANSFER = frozenset({Why.NEVER_TAGGED, Why.NOT_A_RESIDUAL, Why.SAVED_ON_DEVICE, Why.NO_GRADIENT,
                         Why.DROPPED_IN_LOWERING, Why.REMOVED_BY_XLA, Why.UNKNOWN})


@dataclass(frozen=True)
class Accounted:
    """One request and what became of it.

    why: :class:`Why`. detail: the facts behind it, in order (``render.intent_words`` reads them
    as one sentence). transfers: the verdicts of the transfers it became (both directions).
    suggestions: the closest tagged names (``never-tagged``).
    """

    asked: Asked
    why: Why
    detail: tuple[Detail, ...] = ()
    transfers: tuple[Verdict, ...] = ()
    suggestions: tuple[str, ...] = ()

    @property
    def produced_no_transfer(self) -> bool:
        return self.why in NO_TRANSFER

    @property
    def bytes_per_step(self) -> dict[Direction, int]:
        out = {d: 0 for d in Direction}
        for v in self.transfers:
            out[v.transfer.direction] += v.transfer.bytes * v.transfer.executions
        return out

    @property
    def executions(self) -> int:
        return sum(v.transfer.executions for v in self.transfers)

    @property
    def by_verdict(self) -> dict[VerdictKind, int]:
        out: dict[VerdictKind, int] = {}
        for v in self.transfers:
            out[v.verdict] = out.get(v.verdict, 0) + 1
        return out


class AccountSource(StrEnum):
    """What stood for the step's requests."""

    TRACE = "trace"  # the traced jaxpr (compiled here, or an artifact that records the trace)
    ANNOTATIONS = "annotations"  # a plain HLO file: the unoptimized module's placement annotations


@dataclass(frozen=True)
class IntentAccount:
    """Every request of the step with what became of it.

    source: ``trace`` (the step was traced here or its artifact records the trace) or
    ``annotations`` (a plain HLO file: the unoptimized module's placement annotations
    stand in for the requests). checked: what the accounting looked at, one fact each.
    """

    items: tuple[Accounted, ...]
    source: AccountSource = AccountSource.TRACE
    checked: tuple[Detail, ...] = field(default_factory=tuple)

    @property
    def unaccounted(self) -> tuple[Accounted, ...]:
        """Requests that produced no transfer."""
        return tuple(a for a in self.items if a.produced_no_transfer)

    @property
    def partly(self) -> tuple[Accounted, ...]:
        """Requests that became transfers, but not for all their placement annotations (``partly-removed``)."""
        return tuple(a for a in self.items if a.why is Why.PARTLY_REMOVED)

    @property
    def missing(self) -> tuple[Accounted, ...]:
        """Requests that produced no transfer, or none for some of their annotations (what
        ``intent-accounted`` fails on)."""
        return tuple(a for a in self.items if a.produced_no_transfer or a.why is Why.PARTLY_REMOVED)

    @property
    def preset_untagged(self) -> tuple[Accounted, ...]:
        """Names a framework preset lists that this model never tags (``preset-not-tagged``)."""
        return tuple(a for a in self.items if a.why is Why.PRESET_NOT_TAGGED)

    @property
    def not_inspectable(self) -> tuple[Accounted, ...]:
        return tuple(a for a in self.items if a.why is Why.NOT_INSPECTABLE)


def account_of(report: object) -> IntentAccount | None:
    """The report's intent account (``Report.intent``), or None when the step's intent is unknown."""
    acc = getattr(report, "intent", None)
    return acc if isinstance(acc, IntentAccount) else None
