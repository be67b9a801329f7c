"""Pair the transfers of two steps by what each one is, never by XLA's instruction numbers.

``pair_transfers(base, new) -> Pairing``. A transfer is what it moves and where the
user asked for it: its ``role`` (direction, bytes per execution, op kind:
``dynamic-update-slice``, ``dynamic-slice``, ``copy``...) and its checkpoint name or
source line. Two transfers of different roles are never the same transfer (a 64 KiB
value and a 256 KiB query are two tensors, whatever their numbering). The stages, each
on what the earlier ones left:

1. the checkpoint name, where both sides know it (not one guessed from bytes alone);
2. the source line, with shifted lines allowed for: in each file the lines holding
   transfers are aligned in order by the roles at each line (``difflib``), so a file
   edited above its offloads (every line 3 further down) still pairs line with line
   (when both sides hold transfers at the same lines, nothing shifted); transfers with
   no source line pair among themselves;
3. the same file, where only one transfer of that role is left on each side (its line
   changed otherwise than by a shift);
4. the op label (the JAX op path) whatever the source, again only one on each side;
5. last, the checkpoint name once more with the bytes left out (direction and op kind kept): the
   tensor the user named, at another size (a batch or shape change). Only a name both sides
   know pairs across sizes; a line, a file or an op label never does.

Within one stage, several candidates of one role (the peeled and the in-loop copy
of a pipelined offload) pair first with one in a computation of the same name and
the same executions per step, then in schedule order. What is left is lost (base
only) or added (new only).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from difflib import SequenceMatcher

from hloscope.check.keys import TransferRecord

Role = tuple[str, int, str]


@dataclass(frozen=True)
class Pairing:
    """pairs: (base, new) in base order. lost: base only. added: new only (both in their side's order)."""

    pairs: tuple[tuple[TransferRecord, TransferRecord], ...]
    lost: tuple[TransferRecord, ...]
    added: tuple[TransferRecord, ...]


def role(r: TransferRecord, with_op: bool = True) -> Role:
    """What a transfer moves: direction, bytes per execution, op kind (``with_op`` False: left out,
    for a side that does not record it)."""
    return (r.key.direction, r.bytes, r.op if with_op else "")


def _file_line(r: TransferRecord) -> tuple[str, int | None]:
    """("model/layers.py", 140) from the record's source key; ("", None) without a line."""
    file, sep, line = r.key.source.rpartition(":")
    if not sep or not line.isdigit():
        return r.key.source, None
    return file, int(line)


class _Pairer:
    def __init__(self, base: list[TransferRecord], new: list[TransferRecord]) -> None:
        self.left: tuple[dict[int, TransferRecord], dict[int, TransferRecord]] = (
            {id(r): r for r in base}, {id(r): r for r in new})
        self.pairs: list[tuple[TransferRecord, TransferRecord]] = []
        # A JSON report written before reports named the op kind: compare the rest of the role.
        self.with_op = all(r.op for r in base) and all(r.op for r in new)

    def role(self, r: TransferRecord) -> Role:
        return role(r, self.with_op)

    def _take(self, b: TransferRecord, n: TransferRecord) -> None:
        self.pairs.append((b, n))
        del self.left[0][id(b)], self.left[1][id(n)]

    def _pair_group(self, bs: list[TransferRecord], ns: list[TransferRecord]) -> None:
        """Pair records of one key: same computation and executions first, then in schedule order."""
        bs, ns = sorted(bs, key=lambda r: r.line), sorted(ns, key=lambda r: r.line)
        for strict in (True, False):
            for b in list(bs):
                n = next((n for n in ns if not strict
                          or (n.computation, n.executions) == (b.computation, b.executions)), None)
                if n is not None:
                    self._take(b, n)
                    bs.remove(b)
                    ns.remove(n)

    def by_key(self, keyf: Callable[[TransferRecord, int], Hashable | None], unique: bool = False) -> None:
        """Pair within groups of equal key; ``keyf(record, side)`` (0 base, 1 new), None: no key.
        unique: only groups of one record on each side."""
        groups: dict[Hashable, tuple[list[TransferRecord], list[TransferRecord]]] = {}
        for side, records in enumerate(self.left):
            for r in records.values():
                k = keyf(r, side)
                if k is not None:
                    groups.setdefault(k, ([], []))[side].append(r)
        for bs, ns in groups.values():
            if bs and ns and (not unique or len(bs) == len(ns) == 1):
                self._pair_group(bs, ns)

    def by_aligned_lines(self) -> None:
        """Stage 2: each file's lines aligned in order by the roles at each line."""
        base, new = (list(side.values()) for side in self.left)
        aligned: dict[tuple[str, int], int] = {}  # (file, new line) -> the base line it aligns with
        for file in sorted({f for f, line in map(_file_line, base) if line is not None}):
            sides = []
            for records in (base, new):
                at: dict[int, set[Role]] = {}
                for r in records:
                    f, line = _file_line(r)
                    if f == file and line is not None:
                        at.setdefault(line, set()).add(self.role(r))
                lines = sorted(at)
                sides.append((lines, [tuple(sorted(at[n])) for n in lines]))
            (blines, bsigs), (nlines, nsigs) = sides
            if blines == nlines:  # the same lines hold transfers on both sides: nothing shifted
                aligned.update(((file, line), line) for line in blines)
                continue
            for blk in SequenceMatcher(None, bsigs, nsigs, autojunk=False).get_matching_blocks():
                for i in range(blk.size):
                    aligned[(file, nlines[blk.b + i])] = blines[blk.a + i]

        def key(r: TransferRecord, side: int) -> Hashable | None:
            f, line = _file_line(r)
            if line is not None and side == 1:
                line = aligned.get((f, line))
                if line is None:
                    return None
            return (f, line, self.role(r))

        self.by_key(key)

def pair_transfers(base: Iterable[TransferRecord], new: Iterable[TransferRecord]) -> Pairing:
    """Pair ``base``'s transfers with ``new``'s by what they are (module docstring)."""
    base, new = list(base), list(new)
    p = _Pairer(base, new)
    p.by_key(lambda r, _: (r.checkpoint, p.role(r)) if r.checkpoint and not r.name_guessed else None)
    p.by_aligned_lines()
    p.by_key(lambda r, _: (_file_line(r)[0], p.role(r)) if _file_line(r)[1] is not None else None, unique=True)
    p.by_key(lambda r, _: (r.key.name, p.role(r)) if r.key.name else None, unique=True)
    p.by_key(lambda r, _: (r.checkpoint, r.key.direction, r.op if p.with_op else "")
             if r.checkpoint and not r.name_guessed else None)
    order = {id(r): i for i, r in enumerate(base)}
    pairs = sorted(p.pairs, key=lambda pair: order[id(pair[0])])
    return Pairing(tuple(pairs), tuple(p.left[0].values()), tuple(p.left[1].values()))
