"""What the simulation (``hloscope.analysis.simulate.engine``) counts as it runs: the step's running
totals, each transfer's waits and the blame they charge (:class:`Totals`); each transfer's last
simulated execution (:class:`LastRun`); what one loop iteration looked like, to tell a loop that has
become steady (:data:`IterationSig`, :func:`same_iteration`); each async start's XLA execution stream
as a small number (:class:`StreamNumbers`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hloscope.analysis.structure.streams import ExecutionStream, StreamAssignment, StreamKind
from hloscope.hlo.model import Instruction


@dataclass
class Totals:
    """Running totals of the step (µs), and per transfer its executions and summed waits.
    A copy taken at the top of a loop iteration is that iteration's snapshot."""

    compute: float = 0.0
    xfer: float = 0.0
    coll: float = 0.0
    other: float = 0.0
    execs: dict[tuple[str, str], int] = field(default_factory=dict)
    waits: dict[tuple[str, str], float] = field(default_factory=dict)
    blame: dict[tuple[str, str], float] = field(default_factory=dict)  # transfer -> wait charged to it
    caused: dict[tuple[tuple[str, str], tuple[str, str]], float] = field(default_factory=dict)  # (holder, waiter)

    def snapshot(self) -> Totals:
        return Totals(self.compute, self.xfer, self.coll, self.other, dict(self.execs), dict(self.waits),
                    dict(self.blame), dict(self.caused))

    def charge(self, waiter: tuple[str, str], wait: float, held: dict[tuple[str, str], float]) -> None:
        """Charge a wait of ``wait`` µs at ``waiter``'s done: the transfers that held it up share
        ``min(wait, held in all)`` in proportion to what each held it; the rest (what it would have
        waited had nothing held it) is its own."""
        if wait <= 0:
            return
        total = sum(held.values())
        others = min(wait, total)
        self.blame[waiter] = self.blame.get(waiter, 0.0) + (wait - others)
        if others <= 0:
            return
        for holder, us in held.items():
            part = others * us / total
            self.blame[holder] = self.blame.get(holder, 0.0) + part
            self.caused[(holder, waiter)] = self.caused.get((holder, waiter), 0.0) + part


@dataclass
class LastRun:
    """The last simulated execution of one transfer."""

    issue: float = 0.0
    finish: float = 0.0
    done_at: float = 0.0
    wait: float = 0.0
    done: Instruction | None = None
    queued: float = 0.0
    ahead: tuple[str, ...] = ()
    engine_wait: float = 0.0
    engine_behind: tuple[str, ...] = ()


#: One loop iteration: its time, its three wait totals, how many transfers have waits so far, and the
#: waits of each transfer whose waits it changed.
IterationSig = tuple[float, tuple[float, float, float], int, dict[tuple[str, str], float]]


def same_iteration(a: IterationSig, b: IterationSig) -> bool:
    """Two iterations alike: the same time, totals and waits per transfer, each within 1e-6 (relative
    to the first's, at least 1 µs); a transfer missing from one iteration's changes waited 0 in it."""
    if a[2] != b[2] or abs(a[0] - b[0]) > 1e-6 * max(1.0, abs(a[0])):
        return False
    if not all(abs(x - y) <= 1e-6 * max(1.0, abs(x)) for x, y in zip(a[1], b[1], strict=True)):
        return False
    da, db = a[3], b[3]
    return all(abs(da.get(k, 0.0) - db.get(k, 0.0)) <= 1e-6 * max(1.0, abs(da.get(k, 0.0)))
               for k in da.keys() | db.keys())


class StreamNumbers:
    """Each async start's XLA execution stream as a small number (None: none known, or a communication
    stream, which the simulation does not serialize), looked up once and shared by the re-simulations
    of one step (a number is a cheaper key than the stream itself)."""

    def __init__(self, streams: StreamAssignment | None) -> None:
        self.streams = streams
        self.of_start: dict[tuple[str, str], int | None] = {}
        self.numbers: dict[ExecutionStream, int] = {}

    def of(self, comp: str, name: str) -> int | None:
        return self.of_key((comp, name))

    def of_key(self, key: tuple[str, str]) -> int | None:
        if key in self.of_start:
            return self.of_start[key]
        s = self.streams.stream_of(key[0], key[1]) if self.streams is not None else None
        got = (self.numbers.setdefault(s, len(self.numbers))
               if s is not None and s.kind is not StreamKind.COMMUNICATION else None)
        self.of_start[key] = got
        return got
