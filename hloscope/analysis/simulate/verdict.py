"""The typed result of judging one host transfer: its window, what fills it, and hints.

Contract: every field is a fact about the schedule or an estimate derived from
it; no field holds prose. Sentences are built from these facts in
``hloscope.render.verdict_words``, so the table, the JSON, the TUI, check messages and
diagrams all say the same thing. Times are estimates in microseconds for one
execution of the transfer; positions are 0-based schedule indices.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.kinds import Reason, SegmentKind, VerdictKind
from hloscope.analysis.simulate.timeline import TransferTiming
from hloscope.analysis.structure.pairs import AsyncPair
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.hlo.model import Instruction, Module


@dataclass(frozen=True)
class Thresholds:
    """When a transfer is hidden, partial or exposed, by the fraction of its own time left exposed.

    That fraction is the simulated wait at the done over the transfer's time (a wait longer
    than the transfer, which shared the link, counts as 1), or, judged by the window alone,
    1 - hidden / transfer. hidden_at_most: at or below it the transfer is ``hidden``;
    exposed_at_least: at or above it ``exposed``; in between ``partial``.
    """

    hidden_at_most: float = 0.05
    exposed_at_least: float = 0.95

    def __post_init__(self) -> None:
        if not 0.0 <= self.hidden_at_most < self.exposed_at_least <= 1.0:
            raise ValueError(f"thresholds must satisfy 0 <= hidden_at_most < exposed_at_least <= 1, got "
                             f"{self.hidden_at_most} and {self.exposed_at_least}")

    def verdict(self, exposed_fraction: float) -> VerdictKind:
        """``hidden``, ``partial`` or ``exposed`` for a transfer that leaves ``exposed_fraction`` exposed."""
        if exposed_fraction <= self.hidden_at_most:
            return VerdictKind.HIDDEN
        if exposed_fraction >= self.exposed_at_least:
            return VerdictKind.EXPOSED
        return VerdictKind.PARTIAL


DEFAULT_THRESHOLDS = Thresholds()


def verdict_from_wait(transfer_us: float, exposed_us: float,
                      thresholds: Thresholds = DEFAULT_THRESHOLDS) -> VerdictKind:
    """The verdict of a transfer whose done waited ``exposed_us`` (simulated) for a transfer of
    ``transfer_us``: ``thresholds`` on the waited fraction (at most 1)."""
    if transfer_us <= 0:
        return VerdictKind.HIDDEN if exposed_us <= 0 else VerdictKind.EXPOSED
    return thresholds.verdict(min(1.0, max(0.0, exposed_us) / transfer_us))


@dataclass(frozen=True, slots=True)
class WindowSegment:
    """One contiguous range ``[first, end)`` of a computation's schedule inside a window.

    kind: where the range lies relative to loop iterations (``between`` when
    start and done are in one computation and one iteration).
    """

    computation: str
    first: int
    end: int
    kind: SegmentKind

    @property
    def size(self) -> int:
        return max(0, self.end - self.first)

    @property
    def crosses_iteration(self) -> bool:
        return self.kind is not SegmentKind.BETWEEN


@dataclass(frozen=True, slots=True)
class WindowOp:
    """An instruction that runs while the transfer is in flight.

    est_us: estimated time of the instruction as counted for this window (a loop
    with its body times its trip count; an async collective, the part of its
    own interval that lies inside the window: ``fraction`` of its time).
    """

    instruction: Instruction
    est_us: float
    fraction: float = 1.0

    @property
    def name(self) -> str:
        return self.instruction.name


@dataclass(frozen=True, slots=True)
class InputReady:
    """When the data the start needs was ready.

    producer: the device-side input (looked through bitcasts).
    from_top: the input is a parameter or loop-state element, ready from the top
    of the computation. ops_before_start: instructions scheduled between the
    producer (or the top) and the start. work_ops_between: how many of those do
    work (not bitcasts, tuples, constants or async halves).
    """

    producer: Instruction
    from_top: bool
    ops_before_start: int
    work_ops_between: int


@dataclass(frozen=True, slots=True)
class FirstUse:
    """The first instruction that really uses the transfer's result.

    user: that instruction (looked through bitcasts, tuples and
    get-tuple-elements of the element that holds the result).
    element: the tuple path at which ``user`` receives the result (``()`` when it
    reads the value itself). is_loop_state: the result only goes into the loop
    body's root tuple, for the next iteration. ops_after_done: instructions
    between the done and the user; work_ops_between: how many of those do work.
    """

    user: Instruction
    element: tuple[int, ...]
    is_loop_state: bool
    ops_after_done: int
    work_ops_between: int


@dataclass(frozen=True)
class Verdict:
    """The judgement for one transfer.

    verdict: the verdict; reason: which rule decided it (``render.verdict_words`` words it).
    pair: the async start/done pair (None for synchronous ops and annotations).
    window: the schedule ranges between start and done, in execution order.
    compute / collectives: work in the window (collectives: synchronous ones and
    async ones in flight). other_transfers: host transfers issued in the window,
    which share the host link. est_*: estimated microseconds per execution;
    hidden = min(transfer, max(compute, collectives)).
    input_ready / first_use: why the window is not wider (None when unknown).
    timing: the simulated timing of the transfer in the step (issue, finish, the wait
    at its done, what ran beside it), when the step was simulated. With a timing,
    est_hidden_us = est_transfer_us - the mean simulated wait (never below 0), or, for a transfer
    judged by its blame (reason ``held_up``), est_transfer_us - its blame per execution.
    """

    transfer: HostTransfer
    verdict: VerdictKind
    reason: Reason
    pair: AsyncPair | None = None
    window: tuple[WindowSegment, ...] = ()
    compute: tuple[WindowOp, ...] = ()
    collectives: tuple[WindowOp, ...] = ()
    other_transfers: tuple[Instruction, ...] = ()
    est_transfer_us: float = 0.0
    est_compute_us: float = 0.0
    est_collective_us: float = 0.0
    est_hidden_us: float = 0.0
    input_ready: InputReady | None = None
    first_use: FirstUse | None = None
    timing: TransferTiming | None = None

    @property
    def done(self) -> Instruction | None:
        return self.pair.done if self.pair is not None else None

    @property
    def crosses_iteration(self) -> bool:
        return self.pair.crosses_iteration if self.pair is not None else False

    @property
    def window_size(self) -> int:
        """Instructions in the window, all kinds (free ones too)."""
        return sum(s.size for s in self.window)

    @property
    def overlapped_compute(self) -> list[str]:
        return [w.name for w in self.compute]

    @property
    def overlapped_collectives(self) -> list[str]:
        return [w.name for w in self.collectives]

    @property
    def est_exposed_us(self) -> float:
        """Estimated exposed time of one execution (0 for ``unscheduled``): the mean simulated
        wait at the done when simulated (it may exceed the transfer's own time when the link
        is shared), else the part of the transfer the window does not cover."""
        if self.verdict is VerdictKind.UNSCHEDULED:
            return 0.0
        if self.timing is not None and self.timing.matched:
            return self.timing.mean_wait_us
        return self.est_transfer_us - self.est_hidden_us

    def window_instructions(self, module: Module) -> list[Instruction]:
        """Every instruction of the window (free ones too), in execution order."""
        out: list[Instruction] = []
        for s in self.window:
            out.extend(module.computations[s.computation].instructions[s.first:s.end])
        return out
