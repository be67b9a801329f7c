"""Names users know for each host transfer, by data flow: ``checkpoint_name``, role, user source line.

Pass: ``transfer_names(index, transfers, names=(), requested=None, guess=None) ->
{(computation, instruction): TransferNames}``: each transfer's one name, how it was decided,
its role and its source line, computed before the
:class:`~hloscope.analysis.structure.transfers.HostTransfer` that holds them is built.

- **Data flow.** From the value a to-host transfer moves (the update of a
  ``dynamic-update-slice``, the operand of a ``copy-start``, of a placement annotation),
  the pass walks back through ops that pass the value on unchanged or only move it:
  bitcasts, copies, converts, reshapes, transposes, slices, sharding custom calls,
  collectives, into fused and wrapped bodies and out through their parameters,
  through tuples, ``get-tuple-element`` and loop parameters to the value a loop's caller
  passed in (``hloscope.analysis.structure.value_flow``). The first instruction on the way whose
  ``op_name`` records a checkpoint name, or one of whose stack frames is a ``checkpoint_name`` line
  (or the line of the op that computed the tagged value) of exactly one name record, names the
  transfer. The walk stops at any op that computes something else (a dot, an add, a reduction): a
  name seen only beyond it belongs to an input, not to the moved value.
- **Shared lines.** When a frame's line is that of several names (MaxText's RoPE computes
  Q and K at one line and MaxText tags them after it), the frames below it decide: the
  name whose recorded callers of that line (``producer_callers``, ``callers``) agree with
  them for more frames than any other name's is given, with ``NameBasis.CALLERS``
  (:meth:`~hloscope.analysis.structure.name_records.NameBook.by_callers`); a tie gives none, unless
  the tied names are one value's (``same_value``: a ``checkpoint_name`` of a ``checkpoint_name``).
  The callers are read only when no frame on the whole way names one record by its line alone
  (that decides first). A name so found that no request asks for gives way to the one of the same
  value's names a request asks for.
- **Merged dots.** Before any frame is read: when the moved value is one part of dots XLA
  merged, that part is named by its operand (``hloscope.analysis.structure.merged_dots``).
- **Reloads.** A to-device transfer reads a host buffer: the pass follows that buffer
  through tuples and loop parameters to the to-host transfer that wrote it and takes its
  names, and how they were decided.
- **Arguments kept in host memory** (parameter or optimizer-state offloading): a to-device
  transfer of one is named by the argument's pytree path, the entry parameter's
  ``op_name`` (``opt_state['mu']['layers']['wo']``), at the first user line that reads it.
- **Requests.** ``requested``: the names the step asked to offload (None: unknown, any
  name goes). A name data flow finds that no request asks for is not given as the
  transfer's ``checkpoint_name``; it is kept as ``unrequested`` (what the moved tensor is).
- **Guesses.** ``guess``: called with the data-flow names of the to-host transfers, it
  returns names for transfers data flow could not name, decided by bytes only
  (``hloscope.analysis.intent.naming``); those carry ``NameBasis.BYTES`` and their reloads too.
- ``source``: the user frame of the offloaded value's producer (the frame that named it,
  else the first frame on the way back that differs from the offload's own, the remat
  wrapper's line).

``names`` are the step's ``checkpoint_name`` records
(:class:`~hloscope.analysis.structure.name_records.NameRecord`). JAX 0.10 records the name
nowhere in the HLO, so a plain HLO file gets the source line and no name.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from hloscope.analysis.kinds import Direction, NameBasis
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.merged_dots import merged_name
from hloscope.analysis.structure.name_records import NameBook, NameRecord
from hloscope.analysis.structure.value_flow import PASS, Moved, ValueFlow, op_name_checkpoint, walk
from hloscope.hlo.model import Instruction, SourceLocation

M = TypeVar("M", bound=Moved)

#: A transfer's key: (computation, instruction name).
Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class TransferNames:
    """The names users know for one transfer.

    checkpoint_name: the name of the request it belongs to (or, when the step's requests are
    unknown, any ``checkpoint_name`` found); None when none. basis: how that name was decided
    (:class:`NameBasis`; None without a name): ``data-flow`` followed the moved value to the
    tagged op, ``bytes`` is a guess. unrequested: a ``checkpoint_name`` data flow found on
    the moved tensor that no request asks to offload (what the tensor is, never its request).
    role: what the tensor is in the model ("Q projection"). source: the user source line of
    the tensor it moves.
    """

    checkpoint_name: str | None = None
    role: str | None = None
    source: SourceLocation | None = None
    basis: NameBasis | None = None
    unrequested: str | None = None

    @property
    def guessed(self) -> bool:
        """The name was decided by bytes only."""
        return self.basis is NameBasis.BYTES


#: A transfer's names before they are computed (a found transfer's), or when none is known.
UNNAMED = TransferNames()


class _Namer:
    def __init__(self, index: ModuleIndex, names: Sequence[NameRecord]) -> None:
        self.flow = ValueFlow(index)
        self.book = NameBook(names)

    def traced(self, t: Moved) -> tuple[SourceLocation | None, str | None, NameRecord | None, NameBasis]:
        """Data flow from the moved value: (the frame that named it, the ``op_name`` name, the name
        record, how it was decided), the first found. Without a name: (the frame of the first op on
        the way that computes rather than passes the value on, None, None, data flow)."""
        flow, book = self.flow, self.book
        merged = merged_name(flow, book, t) if book else None
        if merged is not None:
            return (*merged, NameBasis.DATA_FLOW)
        wrapper = {(f.file, f.line) for f in flow.frames(t.instruction)[:1]}
        producer: SourceLocation | None = None
        # the first op on the way whose frames name it only by the callers of a shared line: taken when
        # no frame on the whole way names one record by its line alone (those decide first, as before)
        shared: tuple[SourceLocation, NameRecord] | None = None
        for ins in walk(flow.moved(t), flow.same_value):
            # an element of a multi-output fusion carries the fusion's metadata (its first output's: on
            # TPU the RoPE fusion that computes Q and K), not its own: its own value's ops decide
            of_fusion = ins.opcode == "get-tuple-element" and _tuple_of(flow, ins) == "fusion"
            recorded = None if of_fusion else op_name_checkpoint(ins)
            chain = [] if of_fusion else flow.frames(ins)
            if recorded is not None:
                return (chain[0] if chain else None), recorded, None, NameBasis.DATA_FLOW
            if book:
                for fr in chain:
                    rec = book.lookup(fr)
                    if rec is not None:
                        return fr, None, rec, NameBasis.DATA_FLOW
                for at, fr in enumerate(chain if shared is None else ()):
                    rec = book.by_callers(chain, at)
                    if rec is not None:
                        shared = fr, rec
                        break
            if (producer is None and chain and ins.opcode not in PASS
                    and (chain[0].file, chain[0].line) not in wrapper):
                producer = chain[0]
                if not book:
                    break
        if shared is not None:
            return shared[0], None, shared[1], NameBasis.CALLERS
        return producer, None, None, NameBasis.DATA_FLOW

    def first_frame(self, t: Moved) -> SourceLocation | None:
        """The user frame of the moved value's producer: the first frame on the way back (through
        every input) that is not the offload's own line (the remat wrapper's)."""
        flow = self.flow
        wrapper = {(f.file, f.line) for f in flow.frames(t.instruction)[:1]}
        start = flow.inputs(t.instruction)
        if t.direction is Direction.TO_HOST and t.instruction.opcode in ("dynamic-update-slice-start",
                                                                          "async-start", "fusion"):
            start = [i for i in start if i.opcode != "get-tuple-element" or i.shape.memory_space != t.host_space]
        for ins in walk(start, flow.inputs):
            chain = flow.frames(ins)
            if chain and ins.opcode not in PASS and (chain[0].file, chain[0].line) not in wrapper:
                return chain[0]
        return None

    def host_writer(self, t: Moved, by_ins: Mapping[Key, M]) -> M | None:
        """For a to-device transfer: the to-host transfer that wrote the host buffer it reads."""
        flow = self.flow
        table = flow.table(t.instruction)
        for ins in walk([table[t.instruction.operands[0]]] if t.instruction.operands else [], self._to_writer):
            hit = by_ins.get((ins.computation, ins.name))
            if hit is not None and hit.direction is Direction.TO_HOST:
                return hit
            if ins.opcode.endswith("-done") and ins.operands:
                hit = by_ins.get((ins.computation, ins.operands[0]))
                if hit is not None and hit.direction is Direction.TO_HOST:
                    return hit
        return None

    def _to_writer(self, ins: Instruction) -> list[Instruction]:
        """The next step towards the writer of a host buffer: a ``dynamic-update-slice``'s buffer, else every input."""
        if ins.opcode == "dynamic-update-slice" and ins.operands:
            return [self.flow.table(ins)[ins.operands[0]]]
        return self.flow.inputs(ins)

    def argument_read(self, t: Moved) -> tuple[str, SourceLocation | None] | None:
        """For a to-device transfer of a step argument kept in host memory (parameter or optimizer
        offloading): the argument's pytree path, which JAX writes as the entry parameter's
        ``op_name`` (``opt_state['mu']['layers']['wo']``), and the first user line that reads the
        value on the device (the transfer itself carries no frame). None for any other transfer."""
        flow = self.flow
        if t.direction is not Direction.TO_DEVICE or not t.instruction.operands:
            return None
        ins = flow.table(t.instruction).get(t.instruction.operands[0])
        while ins is not None and ins.opcode in ("bitcast", "get-tuple-element", "copy") and ins.operands:
            ins = flow.table(ins).get(ins.operands[0])
        if ins is None or ins.opcode != "parameter" or ins.computation != flow.module.entry_name:
            return None
        path = ins.metadata.get("op_name", "").replace("\\'", "'")
        if not path:
            return None
        users = flow.index.users
        for user in walk(users(t.instruction), users):
            chain = flow.frames(user)
            if chain:
                return path, chain[0]
        return path, None

    def own_names(self, t: Moved, requested: Collection[str] | None) -> TransferNames:
        """A to-host transfer's (or an annotation's) names, by data flow from the value it moves; its
        source line, the line that named it, else that of the op that computed it (else the first
        frame on any way back)."""
        fr, recorded, rec, basis = self.traced(t)
        own = op_name_checkpoint(t.instruction)
        if own is not None or recorded is not None:
            basis = NameBasis.DATA_FLOW
        name = own or recorded or (rec.name if rec is not None else None)
        if own is None and recorded is None and rec is not None and requested is not None and name not in requested:
            # a value tagged twice (checkpoint_name of a checkpoint_name): the one of its names a request asks for
            asked = [r for r in self.book.records if r.name in requested and r.name in rec.same_value]
            if len({r.name for r in asked}) == 1:
                rec, name = asked[0], asked[0].name
        role = rec.role if rec is not None else None
        source = fr or self.first_frame(t)
        if name is None:
            return TransferNames(source=source)
        if requested is not None and name not in requested:
            return TransferNames(None, role, source, None, name)
        return TransferNames(name, role, source, basis)


def host_writers(index: ModuleIndex, transfers: Sequence[M]) -> dict[Key, M]:
    """For each to-device transfer (keyed by computation and instruction name): the to-host
    transfer among ``transfers`` that wrote the host buffer it reads, when one did."""
    namer = _Namer(index, ())
    by_ins = {(t.computation, t.instruction.name): t for t in transfers if t.direction is Direction.TO_HOST}
    out: dict[Key, M] = {}
    for t in transfers:
        if t.direction is Direction.TO_DEVICE and not t.is_annotation:
            writer = namer.host_writer(t, by_ins)
            if writer is not None:
                out[(t.computation, t.instruction.name)] = writer
    return out


#: Names for to-host transfers data flow left unnamed, decided by bytes (``hloscope.analysis.intent.naming``):
#: given the data-flow names of every to-host transfer, it returns the guessed ones.
Guess = Callable[[Mapping[Key, TransferNames]], Mapping[Key, TransferNames]]


def transfer_names(index: ModuleIndex, transfers: Sequence[Moved], names: Sequence[NameRecord] = (),
                   requested: Collection[str] | None = None, guess: Guess | None = None) -> dict[Key, TransferNames]:
    """Each transfer's names, keyed by (computation, instruction name) (see the module docstring):
    to-host transfers and annotations first (by data flow, then ``guess`` for those it left
    unnamed), then to-device ones, which take the names of the to-host transfer that wrote the
    buffer they read."""
    namer = _Namer(index, names)
    done: dict[Key, TransferNames] = {}
    to_host: dict[Key, Moved] = {}
    for t in transfers:
        if t.direction is Direction.TO_HOST or t.is_annotation:
            key = (t.computation, t.instruction.name)
            done[key] = namer.own_names(t, requested)
            if t.direction is Direction.TO_HOST and not t.is_annotation:
                to_host[key] = t
    if guess is not None:
        done.update(guess({k: done[k] for k in to_host}))
    for t in transfers:
        key = (t.computation, t.instruction.name)
        if key in done:
            continue
        writer = namer.host_writer(t, to_host)
        if writer is not None:
            done[key] = done[(writer.computation, writer.instruction.name)]
        elif (arg := namer.argument_read(t)) is not None:  # an argument kept in host memory: its path
            done[key] = TransferNames(op_name_checkpoint(t.instruction) or arg[0], None, arg[1], NameBasis.DATA_FLOW)
        else:
            done[key] = namer.own_names(t, requested)
    return done


def _tuple_of(flow: ValueFlow, gte: Instruction) -> str | None:
    """The opcode of the tuple a ``get-tuple-element`` reads."""
    src = flow.table(gte).get(gte.operands[0]) if gte.operands else None
    return src.opcode if src is not None else None
