"""Names users know for each host transfer: ``checkpoint_name``, role, user source line.

Pass: ``transfer_names(index, transfers, names=()) -> {(computation, instruction): TransferNames}``:
each transfer's ``checkpoint_name``, ``role`` and ``source``, computed before the
:class:`~hloscope.analysis.transfers.HostTransfer` that holds them is built
(``find_host_transfers`` calls it on the transfers it found).

- ``source``: the user frame of the offloaded value's producer. From the
  transfer's device-side operand the pass walks back (through bitcasts, copies,
  converts, fusions and their fused bodies, sharding custom calls) to the first
  instruction whose stack frame differs from the offload's own frame (the remat
  wrapper's line). A to-device transfer reads a host buffer: the pass follows
  that buffer through tuples and loop parameters to the to-host transfer that
  wrote it and takes its names.
- A to-device transfer of a step argument kept in host memory (parameter or
  optimizer-state offloading) is named by the argument's pytree path, the entry
  parameter's ``op_name`` (``opt_state['mu']['layers']['wo']``), at the first user line
  that reads it on the device.
- ``checkpoint_name``: from ``op_name`` metadata when the HLO records it
  (``.../name[name=query_proj]`` or ``checkpoint_name[query_proj]``), else from
  ``names``: records read from the traced jaxpr by ``hloscope.compile.names``
  (``{"name", "file", "line", "producer_file", "producer_line", "role"}``), matched
  against every frame of the producers' stack traces. JAX 0.10 records the name
  nowhere in the HLO, so a plain HLO file gets the source line and no name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from hloscope.analysis.index import ModuleIndex
from hloscope.analysis.kinds import Direction
from hloscope.hlo.model import Instruction, Module, SourceLocation


class Moved(Protocol):
    """What naming reads of a transfer (a found one, or a :class:`HostTransfer`)."""

    @property
    def instruction(self) -> Instruction: ...
    @property
    def computation(self) -> str: ...
    @property
    def direction(self) -> Direction: ...
    @property
    def is_annotation(self) -> bool: ...
    @property
    def host_space(self) -> int: ...


M = TypeVar("M", bound=Moved)


@dataclass(frozen=True, slots=True)
class TransferNames:
    """The names users know for one transfer: its ``checkpoint_name``, its role in the model
    ("Q projection"), the user source line of the tensor it moves; None where unknown."""

    checkpoint_name: str | None = None
    role: str | None = None
    source: SourceLocation | None = None

#: Opcodes that pass a value through unchanged (walked through towards its producer).
_PASS = frozenset({"bitcast", "copy", "convert", "reshape", "transpose", "get-tuple-element", "copy-start",
                   "copy-done", "async-done", "async-start", "custom-call", "fusion", "dynamic-update-slice",
                   "dynamic-slice", "opt-barrier", "tuple", "parameter", "while"})
_OP_NAME = re.compile(r"(?:checkpoint_name|/name)\[(?:name=)?([A-Za-z0-9_.\-]+)\]")
_MAX_STEPS = 200
_FRAME_ID = re.compile(r"[{ ]stack_frame_id=(\d+)")


def frames(module: Module, ins: Instruction,
           chains: dict[int, tuple[SourceLocation, ...]] | None = None) -> list[SourceLocation]:
    """Every frame of ``ins``'s stack trace, innermost first (one when only source_file/line).
    ``chains`` caches the frames below each stack frame id (instructions share their callers')."""
    fid = _frame_id(ins)
    out = list(_chain(module, fid, {} if chains is None else chains))
    if not out:
        first = module.source_location(ins)
        if first is not None:
            out.append(first)
    return out


def _frame_id(ins: Instruction) -> int:
    """``stack_frame_id`` of the instruction's metadata (0 when absent), read without splitting
    the whole attribute list (backend configs are long; 640 walks read thousands of these)."""
    text = ins.attr_text
    at = text.find("metadata={")
    m = _FRAME_ID.search(text, at) if at >= 0 else None
    return int(m.group(1)) if m else 0


def _chain(module: Module, fid: int, chains: dict[int, tuple[SourceLocation, ...]],
           depth: int = 0) -> tuple[SourceLocation, ...]:
    if fid in chains:
        return chains[fid]
    if fid not in module.stack_frames or depth >= 64:
        return ()
    loc_id, parent = module.stack_frames[fid]
    loc = module.file_locations.get(loc_id)
    head: tuple[SourceLocation, ...] = ()
    if loc:
        f, fn, line, col = loc
        head = (SourceLocation(module.file_names.get(f, "?"), module.function_names.get(fn, "?"), line, col),)
    chains[fid] = out = (head + _chain(module, parent, chains, depth + 1))[:64]
    return out


def op_name_checkpoint(ins: Instruction) -> str | None:
    """The checkpoint name an ``op_name`` records (a JAX that keeps it), else None."""
    if "name[" not in ins.attr_text:
        # Both forms hold "name["; unquoting the metadata only drops the backslash of \" and
        # \\, so the raw text holds it too when op_name does: no need to split the attributes.
        return None
    m = _OP_NAME.search(ins.metadata.get("op_name", ""))
    return m.group(1) if m else None


def _same_file(a: str, b: str) -> bool:
    return a == b or (a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1] and (a.endswith(b) or b.endswith(a)))


class _Namer:
    def __init__(self, index: ModuleIndex, names: Sequence[Mapping[str, Any]]) -> None:
        self.index = index
        self.module = index.module
        self.names = list(names)
        self._frames: dict[tuple[str, str], list[SourceLocation]] = {}
        self._chains: dict[int, tuple[SourceLocation, ...]] = {}

    def frames(self, ins: Instruction) -> list[SourceLocation]:
        """:func:`frames`, once per instruction (transfers share producers)."""
        key = (ins.computation, ins.name)
        if key not in self._frames:
            self._frames[key] = frames(self.module, ins, self._chains)
        return self._frames[key]

    def lookup(self, fr: SourceLocation) -> Mapping[str, Any] | None:
        hits = [r for r in self.names
                if (fr.line == r.get("line") and _same_file(fr.file, str(r.get("file", ""))))
                or (fr.line == r.get("producer_line") and _same_file(fr.file, str(r.get("producer_file", ""))))]
        return hits[0] if len({r["name"] for r in hits}) == 1 else None

    def _callers(self) -> dict[str, list[Instruction]]:
        if not hasattr(self, "_caller_map"):
            out: dict[str, list[Instruction]] = {}
            for comp in self.module.computations.values():
                for i in comp.instructions:
                    for c in i.called_computations:
                        out.setdefault(c, []).append(i)
            self._caller_map = out
        return self._caller_map

    def _element(self, ins: Instruction, idx: int) -> list[Instruction]:
        """What element ``idx`` of the tuple value ``ins`` was made from."""
        table = self.module.computations[ins.computation].by_name
        if ins.opcode == "tuple":
            return [table[ins.operands[idx]]] if idx < len(ins.operands) else []
        if ins.opcode == "while":
            body = self.index.while_body(ins)
            root = body.root if body is not None else None
            return self._element(root, idx) if root is not None else []
        if ins.opcode == "parameter":
            return [e for caller in self._callers().get(ins.computation, [])
                    for op in caller.operands[:1] if caller.opcode == "while"
                    for e in self._element(self.module.computations[caller.computation].by_name[op], idx)]
        return [ins]

    def _inputs(self, ins: Instruction) -> list[Instruction]:
        """The instructions ``ins`` reads: its operands, a fused/async body's root, a
        tuple element's source, a parameter's value in the caller."""
        table = self.module.computations[ins.computation].by_name
        if ins.opcode == "dynamic-update-slice" and len(ins.operands) > 1:
            return [table[ins.operands[1]]]
        if ins.opcode == "get-tuple-element" and ins.operands:
            return self._element(table[ins.operands[0]], ins.tuple_index)
        if ins.opcode == "parameter":
            number = int(ins.literal) if ins.literal.strip().isdigit() else 0
            return [self.module.computations[c.computation].by_name[c.operands[number]]
                    for c in self._callers().get(ins.computation, [])
                    if c.opcode != "while" and number < len(c.operands)]
        out = [table[o] for o in ins.operands if o in table]
        for c in ins.called_computations[:1]:
            root = self.module.computations[c].root if c in self.module.computations else None
            if root is not None and ins.opcode not in ("while", "conditional"):
                out.insert(0, root)
        return out

    def producer(self, t: Moved) -> tuple[SourceLocation | None, Mapping[str, Any] | None]:
        """The user frame of the offloaded value's producer and the name record matched there."""
        # Lines of the offload itself and of the copies around it are the remat wrapper's, not the tensor's.
        wrapper = {(f.file, f.line) for f in self.frames(t.instruction)[:1]}
        start = self._inputs(t.instruction)
        if t.direction is Direction.TO_HOST and t.instruction.opcode in ("dynamic-update-slice-start",
                                                                          "async-start", "fusion"):
            start = [i for i in start if i.opcode != "get-tuple-element" or i.shape.memory_space != t.host_space]
        queue, seen, first = list(start), set(), None
        steps = 0
        while queue and steps < _MAX_STEPS:
            ins = queue.pop(0)
            key = (ins.computation, ins.name)
            if key in seen:
                continue
            seen.add(key)
            steps += 1
            chain = self.frames(ins)
            for fr in chain:
                rec = self.lookup(fr) if self.names else None
                if rec is not None:
                    return fr, rec
            if (chain and first is None and ins.opcode not in _PASS
                    and (chain[0].file, chain[0].line) not in wrapper):
                first = chain[0]
                if not self.names:
                    return first, None
            queue.extend(self._inputs(ins))
        return first, None

    def host_writer(self, t: Moved, by_ins: Mapping[tuple[str, str], M]) -> M | None:
        """For a to-device transfer: the to-host transfer that wrote the host buffer it reads."""
        table = self.module.computations[t.instruction.computation].by_name
        queue = [table[t.instruction.operands[0]]] if t.instruction.operands else []
        seen: set[tuple[str, str]] = set()
        while queue and len(seen) < _MAX_STEPS:
            ins = queue.pop(0)
            key = (ins.computation, ins.name)
            if key in seen:
                continue
            seen.add(key)
            hit = by_ins.get(key)
            if hit is not None and hit.direction is Direction.TO_HOST:
                return hit
            if ins.opcode.endswith("-done") and ins.operands:
                table = self.module.computations[ins.computation].by_name
                start = table.get(ins.operands[0])
                hit = by_ins.get((ins.computation, ins.operands[0])) if start is not None else None
                if hit is not None and hit.direction is Direction.TO_HOST:
                    return hit
            if ins.opcode == "dynamic-update-slice" and ins.operands:
                queue.append(self.module.computations[ins.computation].by_name[ins.operands[0]])
                continue
            queue.extend(self._inputs(ins))
        return None


    def argument_read(self, t: Moved) -> tuple[str, SourceLocation | None] | None:
        """For a to-device transfer of a step argument kept in host memory (parameter or optimizer
        offloading): the argument's pytree path, which JAX writes as the entry parameter's
        ``op_name`` (``opt_state['mu']['layers']['wo']``), and the first user line that reads the
        value on the device (the transfer itself carries no frame). None for any other transfer."""
        if t.direction is not Direction.TO_DEVICE or not t.instruction.operands:
            return None
        table = self.module.computations[t.instruction.computation].by_name
        ins = table.get(t.instruction.operands[0])
        while ins is not None and ins.opcode in ("bitcast", "get-tuple-element", "copy") and ins.operands:
            ins = self.module.computations[ins.computation].by_name.get(ins.operands[0])
        if ins is None or ins.opcode != "parameter" or ins.computation != self.module.entry_name:
            return None
        path = ins.metadata.get("op_name", "").replace("\\'", "'")
        if not path:
            return None
        queue, seen = list(self.index.users(t.instruction)), set[tuple[str, str]]()
        while queue and len(seen) < _MAX_STEPS:
            user = queue.pop(0)
            if (user.computation, user.name) in seen:
                continue
            seen.add((user.computation, user.name))
            chain = self.frames(user)
            if chain:
                return path, chain[0]
            queue.extend(self.index.users(user))
        return path, None


def host_writers(index: ModuleIndex, transfers: Sequence[M]) -> dict[tuple[str, str], M]:
    """For each to-device transfer (keyed by computation and instruction name): the to-host
    transfer among ``transfers`` that wrote the host buffer it reads, when one did."""
    namer = _Namer(index, ())
    by_ins = {(t.computation, t.instruction.name): t for t in transfers if t.direction is Direction.TO_HOST}
    out: dict[tuple[str, str], M] = {}
    for t in transfers:
        if t.direction is Direction.TO_DEVICE and not t.is_annotation:
            writer = namer.host_writer(t, by_ins)
            if writer is not None:
                out[(t.computation, t.instruction.name)] = writer
    return out


def transfer_names(index: ModuleIndex, transfers: Sequence[Moved],
                   names: Sequence[Mapping[str, Any]] = ()) -> dict[tuple[str, str], TransferNames]:
    """Each transfer's names, keyed by (computation, instruction name) (see the module docstring):
    to-host transfers and annotations first, then to-device ones, which take the names of the
    to-host transfer that wrote the buffer they read."""
    namer = _Namer(index, names)
    done: dict[tuple[str, str], TransferNames] = {}
    to_host: dict[tuple[str, str], Moved] = {}
    for t in transfers:
        if t.direction is Direction.TO_HOST or t.is_annotation:
            src, rec = namer.producer(t)
            name = op_name_checkpoint(t.instruction) or (str(rec["name"]) if rec else None)
            key = (t.computation, t.instruction.name)
            done[key] = TransferNames(name, rec.get("role") if rec else None, src)
            if t.direction is Direction.TO_HOST:
                to_host[key] = t
    for t in transfers:
        key = (t.computation, t.instruction.name)
        if key in done:
            continue
        writer = namer.host_writer(t, to_host)
        name = op_name_checkpoint(t.instruction)
        if writer is not None:
            w = done[(writer.computation, writer.instruction.name)]
            done[key] = TransferNames(name or w.checkpoint_name, w.role, w.source)
        elif (arg := namer.argument_read(t)) is not None:  # an argument kept in host memory: its path
            done[key] = TransferNames(name or arg[0], None, arg[1])
        else:
            src, rec = namer.producer(t)
            done[key] = TransferNames(name or (str(rec["name"]) if rec else None),
                                      rec.get("role") if rec else None, src)
    return done
