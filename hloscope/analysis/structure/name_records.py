"""The step's ``checkpoint_name`` records, typed, and the look-ups naming makes in them.

A record is one ``checkpoint_name`` call site of the traced step, read from its jaxpr by
``hloscope.compile.seam.names`` (``CompileResult.tensor_names``), written in JSON form by
:meth:`NameRecord.to_json` (the compile record's and the manifest's ``tensor_names``) and read back
by :meth:`NameRecord.from_json`, its inverse; :func:`name_records` reads a manifest's list where it
enters the core (``StepInputs.names``).

:class:`NameBook` answers the questions data-flow naming asks of the records: which record's line
a stack frame is (:meth:`NameBook.lookup`), which of several names sharing a line the frames below
it agree with (:meth:`NameBook.by_callers`), which record carries one name (:func:`unique`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from hloscope.hlo.model import SourceLocation


@dataclass(frozen=True, slots=True)
class NameRecord:
    """One ``checkpoint_name`` call site of the traced step.

    name: the checkpoint name. file / line / function: where ``checkpoint_name`` was called (line
    1-based; None when the record has none). producer_file / producer_line: the user frame of the
    equation that computed the named value (None when the record has none: then ``file`` / ``line``
    stand for it where a source line is wanted). role: what the tensor is ("Q projection"), when
    the workload says. weights: when that equation is a dot, the pytree paths of the step arguments
    it multiplies (``params['layers']['wq']``); inputs: the ``file:line`` of the equations that
    computed its other operands. callers / producer_callers: the ``file:line`` of the user frames
    that called the ``checkpoint_name`` line / the producer's line, innermost first. same_value: the
    other names ``checkpoint_name`` gave the same value (``moe_mlpwi_0`` of ``mlpwi_0``). The lists
    are empty in records made before hloscope read them.
    """

    name: str
    file: str = ""
    line: int | None = None
    function: str = ""
    producer_file: str | None = None
    producer_line: int | None = None
    role: str | None = None
    weights: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    callers: tuple[str, ...] = ()
    producer_callers: tuple[str, ...] = ()
    same_value: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> NameRecord:
        """The record a JSON object holds (``tensor_names`` of a manifest or compile result)."""
        role = d.get("role")
        producer_file = d.get("producer_file")
        return cls(str(d.get("name", "")), str(d.get("file", "")), _int(d.get("line")), str(d.get("function", "")),
                   str(producer_file) if producer_file is not None else None, _int(d.get("producer_line")),
                   str(role) if role is not None else None, _strs(d.get("weights")), _strs(d.get("inputs")),
                   _strs(d.get("callers")), _strs(d.get("producer_callers")), _strs(d.get("same_value")))

    def to_json(self) -> dict[str, object]:
        """The record's JSON form (the manifest's and the compile record's ``tensor_names``, keys in
        this order); :meth:`from_json` reads it back equal."""
        return {"name": self.name, "file": self.file, "line": self.line, "function": self.function,
                "producer_file": self.producer_file, "producer_line": self.producer_line, "role": self.role,
                "weights": list(self.weights), "inputs": list(self.inputs), "callers": list(self.callers),
                "producer_callers": list(self.producer_callers), "same_value": list(self.same_value)}

    @property
    def source(self) -> SourceLocation:
        """The source line of the record's tensor: the line of the op that computed it."""
        file = self.producer_file if self.producer_file is not None else self.file
        line = self.producer_line if self.producer_line is not None else self.line
        return SourceLocation(file, self.function, line if line is not None else 0, 0)


def _int(v: object) -> int | None:
    return int(v) if isinstance(v, int) else None


def _strs(v: object) -> tuple[str, ...]:
    return tuple(str(x) for x in v) if isinstance(v, list | tuple) else ()


def name_records(raw: Iterable[Mapping[str, object] | NameRecord]) -> tuple[NameRecord, ...]:
    """The typed records of ``raw`` (JSON objects, or records already read)."""
    return tuple(r if isinstance(r, NameRecord) else NameRecord.from_json(r) for r in raw)


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file (equal, or one ends with the other with the same base name)."""
    return a == b or (a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1] and (a.endswith(b) or b.endswith(a)))


#: Which callers of a record's line a frame hit is read against: the ``checkpoint_name`` line's, or the producer's.
CallersOf = Literal["callers", "producer_callers"]


class NameBook:
    """The step's name records, indexed by line: a frame is looked up once, not against every record."""

    def __init__(self, records: Sequence[NameRecord]) -> None:
        self.records = tuple(records)
        self._by_line: dict[int, list[NameRecord]] = {}
        for r in self.records:
            for line in (r.line, r.producer_line):
                if line is not None:
                    self._by_line.setdefault(line, []).append(r)

    def __bool__(self) -> bool:
        return bool(self.records)

    def hits(self, fr: SourceLocation) -> list[tuple[NameRecord, CallersOf]]:
        """The records whose ``checkpoint_name`` line, or the line of the op that computed the
        tagged value, is ``fr``, each with which of its recorded callers belong to that line."""
        out: list[tuple[NameRecord, CallersOf]] = []
        for r in self._by_line.get(fr.line, ()):
            if fr.line == r.line and same_file(fr.file, r.file):
                out.append((r, "callers"))
            if fr.line == r.producer_line and same_file(fr.file, r.producer_file or ""):
                out.append((r, "producer_callers"))
        return out

    def lookup(self, fr: SourceLocation) -> NameRecord | None:
        """The one record whose ``checkpoint_name`` line, or the line of the op that computed the
        tagged value, is ``fr``; None when none or several names are."""
        return unique(r for r, _ in self.hits(fr))

    def by_callers(self, chain: Sequence[SourceLocation], at: int) -> NameRecord | None:
        """When several names share the line of frame ``chain[at]`` (each record's ``checkpoint_name``
        line or producer line): the record whose recorded callers of that line agree with the frames
        below it in ``chain`` for more frames than any other name's do; None when fewer than two
        names share it, or nothing (a tie) decides. MaxText's RoPE computes Q and K at one line
        (``embeddings.py``), called for the query at one line of ``attentions.py`` and for the key at
        the next: the RoPE op of each carries its caller's frame, and the jaxpr records each name's
        producer callers."""
        hits = self.hits(chain[at])
        if len({r.name for r, _ in hits}) < 2:
            return None
        below = chain[at + 1:]
        depth: dict[str, tuple[int, NameRecord]] = {}
        for r, key in hits:
            n = _agreeing(r.callers if key == "callers" else r.producer_callers, below)
            if n > depth.get(r.name, (-1, r))[0]:
                depth[r.name] = (n, r)
        top = max(n for n, _ in depth.values())
        best = [r for n, r in depth.values() if n == top]
        return best[0] if top > 0 and (len(best) == 1 or _one_value(best)) else None


def unique(records: Iterable[NameRecord]) -> NameRecord | None:
    """The first of ``records`` when all carry one name; None when none or several names."""
    found = list(records)
    return found[0] if found and len({r.name for r in found}) == 1 else None


def _one_value(records: Sequence[NameRecord]) -> bool:
    """Whether ``records`` are names of one value: each lists every other's name in ``same_value``."""
    return all(o.name in r.same_value for r in records for o in records if o is not r)


def _agreeing(callers: Iterable[str], below: Sequence[SourceLocation]) -> int:
    """How many leading ``file:line`` of ``callers`` are the frames of ``below``, in order."""
    n = 0
    for want, fr in zip(callers, below, strict=False):
        file, _, line = want.rpartition(":")
        if not (line.isdigit() and int(line) == fr.line and same_file(fr.file, file)):
            break
        n += 1
    return n
