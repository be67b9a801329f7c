"""Names users know for each host transfer: ``checkpoint_name``, role, user source line.

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
  passed in. The first instruction on the way whose ``op_name`` records a checkpoint name,
  or one of whose stack frames is a ``checkpoint_name`` line (or the line of the op that
  computed the tagged value) of exactly one name record, names the transfer. The walk
  stops at any op that computes something else (a dot, an add, a reduction): a name seen
  only beyond it belongs to an input, not to the moved value.
- **Shared lines.** When a frame's line is that of several names (MaxText's RoPE computes
  Q and K at one line and MaxText tags them after it), the frames below it decide: the
  name whose recorded callers of that line (``producer_callers``, ``callers``) agree with
  them for more frames than any other name's is given, with ``NameBasis.CALLERS``
  (:meth:`_Namer.by_callers`); a tie gives none, unless the tied names are one value's
  (``same_value``: a ``checkpoint_name`` of a ``checkpoint_name``). The callers are read only
  when no frame on the whole way names one record by its line alone (that decides first). A
  name so found that no request asks for gives way to the one of the same value's names a
  request asks for.
- **Merged dots.** Before any frame is read: when the moved value is one part of dots XLA
  merged (a ``slice`` of a ``dot`` over a ``concatenate``, ``_Namer.merged_part``), that part is
  named by its operand: a step argument whose pytree path is among a name record's ``weights``,
  or a value computed at a line among a record's ``inputs``; one part left unnamed takes the one
  name left. XLA 0.12 gives every slice the first dot's frames.
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

``names`` are records read from the traced jaxpr by ``hloscope.compile.names``
(``{"name", "file", "line", "producer_file", "producer_line", "role"}``, and ``weights``,
``inputs``, ``callers``, ``producer_callers``, ``same_value`` where it read them). JAX 0.10
records the name nowhere in the HLO, so a plain HLO file gets the source line and no name.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from hloscope.analysis.kinds import Direction, NameBasis
from hloscope.analysis.structure.index import ModuleIndex
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


#: Opcodes walked through towards the producer when only a source line is wanted (no records).
_PASS = frozenset({"bitcast", "copy", "convert", "reshape", "transpose", "get-tuple-element", "copy-start",
                   "copy-done", "async-done", "async-start", "custom-call", "fusion", "dynamic-update-slice",
                   "dynamic-slice", "opt-barrier", "tuple", "parameter", "while"})
#: Ops whose result is their operand 0's value, moved or re-laid out (data flow walks through them).
_SAME_VALUE = frozenset({"bitcast", "copy", "convert", "reshape", "transpose", "bitcast-convert", "reduce-precision",
                         "slice", "dynamic-slice", "copy-start", "copy-done", "all-gather", "all-gather-start",
                         "all-gather-done", "all-reduce", "all-reduce-start", "all-reduce-done", "all-to-all",
                         "reduce-scatter", "collective-permute", "collective-permute-start",
                         "collective-permute-done", "send", "recv-done"})
#: Collectives that XLA's combiners give several operands and a tuple of results, one per operand.
_COMBINED = frozenset({"all-gather", "all-reduce", "reduce-scatter", "all-to-all"})
#: Custom calls that only place or annotate a value.
_PLACING = frozenset({"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "LayoutConstraint",
                      "annotate_device_placement", "MoveToHost", "MoveToDevice"})
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
    below = _chain(module, parent, chains, depth + 1) if parent != fid else ()
    chains[fid] = out = (head + below)[:64]
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
        self._caller_map: dict[str, list[Instruction]] | None = None
        # name records by line: a frame is looked up once, not against every record
        self._by_line: dict[int, list[Mapping[str, Any]]] = {}
        for r in self.names:
            for key in ("line", "producer_line"):
                if isinstance(r.get(key), int):
                    self._by_line.setdefault(int(r[key]), []).append(r)

    def frames(self, ins: Instruction) -> list[SourceLocation]:
        """:func:`frames`, once per instruction (transfers share producers)."""
        key = (ins.computation, ins.name)
        got = self._frames.get(key)
        if got is None:
            got = self._frames[key] = frames(self.module, ins, self._chains)
        return got

    def _hits(self, fr: SourceLocation) -> list[tuple[Mapping[str, Any], str]]:
        """The name records whose ``checkpoint_name`` line, or the line of the op that computed the
        tagged value, is ``fr``, each with the key of its recorded callers of that line."""
        out = []
        for r in self._by_line.get(fr.line, ()):
            if fr.line == r.get("line") and _same_file(fr.file, str(r.get("file", ""))):
                out.append((r, "callers"))
            if fr.line == r.get("producer_line") and _same_file(fr.file, str(r.get("producer_file", ""))):
                out.append((r, "producer_callers"))
        return out

    def lookup(self, fr: SourceLocation) -> Mapping[str, Any] | None:
        """The one name record whose ``checkpoint_name`` line, or the line of the op that computed
        the tagged value, is ``fr``; None when none or several names are."""
        hits = [r for r, _ in self._hits(fr)]
        return hits[0] if hits and len({r["name"] for r in hits}) == 1 else None

    def by_callers(self, chain: Sequence[SourceLocation], at: int) -> Mapping[str, Any] | None:
        """When several names share the line of frame ``chain[at]`` (each record's ``checkpoint_name``
        line or producer line): the record whose recorded callers of that line agree with the frames
        below it in ``chain`` for more frames than any other name's do; None when fewer than two
        names share it, or nothing (a tie) decides. MaxText's RoPE computes Q and K at one line
        (``embeddings.py``), called for the query at one line of ``attentions.py`` and for the key at
        the next: the RoPE op of each carries its caller's frame, and the jaxpr records each name's
        producer callers."""
        fr = chain[at]
        hits = self._hits(fr)
        if len({r["name"] for r, _ in hits}) < 2:
            return None
        below = chain[at + 1:]
        depth: dict[str, tuple[int, Mapping[str, Any]]] = {}
        for r, key in hits:
            n = _agreeing(r.get(key) or (), below)
            if n > depth.get(str(r["name"]), (-1, r))[0]:
                depth[str(r["name"])] = (n, r)
        top = max(n for n, _ in depth.values())
        best = [r for n, r in depth.values() if n == top]
        return best[0] if top > 0 and (len(best) == 1 or _one_value(best)) else None

    def callers(self) -> dict[str, list[Instruction]]:
        """Computation -> the instructions that call it and pass it operands (a done passes none)."""
        if self._caller_map is None:
            out: dict[str, list[Instruction]] = {}
            for i in self.module.calling:
                if i.opcode.endswith(("-done", "-update")):
                    continue
                for c in i.called_computations:
                    out.setdefault(c, []).append(i)
            self._caller_map = out
        return self._caller_map

    def _table(self, ins: Instruction) -> Mapping[str, Instruction]:
        return self.module.computations[ins.computation].by_name

    def _root(self, ins: Instruction) -> Instruction | None:
        for c in ins.called_computations[:1]:
            comp = self.module.computations.get(c)
            if comp is not None:
                return comp.root
        return None

    def _element(self, ins: Instruction, idx: int) -> list[Instruction]:
        """What element ``idx`` of the tuple value ``ins`` was made from."""
        table = self._table(ins)
        op = ins.opcode
        if op == "tuple":
            return [table[ins.operands[idx]]] if idx < len(ins.operands) else []
        if op == "while":
            body = self.index.while_body(ins)
            root = body.root if body is not None else None
            return self._element(root, idx) if root is not None else []
        if op == "parameter":
            return [e for caller in self.callers().get(ins.computation, [])
                    for o in caller.operands[:1] if caller.opcode == "while"
                    for e in self._element(self.module.computations[caller.computation].by_name[o], idx)]
        if op in ("fusion", "call") or (op == "async-done" and ins.operands):
            start = table[ins.operands[0]] if op == "async-done" else ins
            root = self._root(start)
            return self._element(root, idx) if root is not None else []
        if op in ("opt-barrier", "optimization-barrier") and ins.operands:
            return self._element(table[ins.operands[0]], idx)
        if op in _COMBINED and ins.shape.is_tuple and idx < len(ins.operands):
            return [table[ins.operands[idx]]]  # collectives XLA combined: element i is operand i's
        if op.endswith("-done") and ins.operands:  # a native async collective: element i of operand i
            start = table[ins.operands[0]]
            return [table[start.operands[idx]]] if idx < len(start.operands) else []
        return [ins]

    def _inputs(self, ins: Instruction) -> list[Instruction]:
        """The instructions ``ins`` reads: its operands, a fused/async body's root, a
        tuple element's source, a parameter's value in the caller (the walk for a source line)."""
        table = self._table(ins)
        if ins.opcode == "dynamic-update-slice" and len(ins.operands) > 1:
            return [table[ins.operands[1]]]
        if ins.opcode == "get-tuple-element" and ins.operands:
            return self._element(table[ins.operands[0]], ins.tuple_index)
        if ins.opcode == "parameter":
            return self._passed_in(ins)
        out = [table[o] for o in ins.operands if o in table]
        if ins.opcode not in ("while", "conditional"):
            root = self._root(ins)
            if root is not None:
                out.insert(0, root)
        return out

    def _passed_in(self, param: Instruction) -> list[Instruction]:
        """A parameter's value in each caller that is not a loop (a fusion, an async op, a call)."""
        number = int(param.literal) if param.literal.strip().isdigit() else 0
        return [self.module.computations[c.computation].by_name[c.operands[number]]
                for c in self.callers().get(param.computation, [])
                if c.opcode != "while" and number < len(c.operands)]

    def _same_value(self, ins: Instruction) -> list[Instruction]:
        """Where the value of ``ins`` comes from, when ``ins`` only passes it on or moves it; []
        for an op that computes something else (data flow stops there)."""
        op = ins.opcode
        table = self._table(ins)
        if op == "get-tuple-element" and ins.operands:
            return self._element(table[ins.operands[0]], ins.tuple_index)
        if op == "parameter":
            return self._passed_in(ins)
        if op == "dynamic-update-slice" and len(ins.operands) > 1:
            return [table[ins.operands[1]]]
        sugar = _host_dma(ins)
        if sugar is not None:
            return [table[o] for o in sugar if o in table]
        if op in ("fusion", "call", "async-start"):
            root = self._root(ins)
            return [root] if root is not None else []
        if op == "async-done" and ins.operands:
            return [table[ins.operands[0]]]
        if op in _SAME_VALUE or (op == "custom-call" and ins.attr("custom_call_target").strip('"') in _PLACING):
            return [table[ins.operands[0]]] if ins.operands and ins.operands[0] in table else []
        return []

    def _moved(self, t: Moved) -> list[Instruction]:
        """The device-side value a to-host transfer (or an annotation) moves; a to-device one's host buffer."""
        ins = t.instruction
        table = self._table(ins)
        sugar = _host_dma(ins)
        if sugar is not None and t.direction is Direction.TO_HOST:
            return [table[o] for o in sugar if o in table]
        if ins.opcode in ("async-start", "fusion"):
            root = self._root(ins)
            if root is not None and root.opcode == "dynamic-update-slice" and len(root.operands) > 1:
                update = self._table(root).get(root.operands[1])
                if update is not None and update.opcode == "parameter":
                    return self._passed_in(update)
                return [update] if update is not None else []
            return [root] if root is not None else []
        if ins.opcode == "dynamic-update-slice" and len(ins.operands) > 1:
            return [table[ins.operands[1]]]
        if t.direction is Direction.TO_DEVICE:  # the host buffer it reads: back to what was written there
            return [table[o] for o in ins.operands[:1] if o in table]
        return [table[o] for o in ins.operands[:1] if o in table and table[o].shape.memory_space != t.host_space]

    def traced(self, t: Moved) -> tuple[SourceLocation | None, str | None, Mapping[str, Any] | None, NameBasis]:
        """Data flow from the moved value: (the frame that named it, the ``op_name`` name, the name
        record, how it was decided), the first found. Without a name: (the frame of the first op on
        the way that computes rather than passes the value on, None, None, data flow)."""
        merged = self.merged_name(t) if self.names else None
        if merged is not None:
            return (*merged, NameBasis.DATA_FLOW)
        wrapper = {(f.file, f.line) for f in self.frames(t.instruction)[:1]}
        queue = deque(self._moved(t))
        seen: set[tuple[str, str]] = set()
        producer: SourceLocation | None = None
        # the first op on the way whose frames name it only by the callers of a shared line: taken when
        # no frame on the whole way names one record by its line alone (those decide first, as before)
        shared: tuple[SourceLocation, Mapping[str, Any]] | None = None
        while queue and len(seen) < _MAX_STEPS:
            ins = queue.popleft()
            key = (ins.computation, ins.name)
            if key in seen:
                continue
            seen.add(key)
            # an element of a multi-output fusion carries the fusion's metadata (its first output's: on
            # TPU the RoPE fusion that computes Q and K), not its own: its own value's ops decide
            of_fusion = ins.opcode == "get-tuple-element" and self._tuple_of(ins) == "fusion"
            recorded = None if of_fusion else op_name_checkpoint(ins)
            chain = [] if of_fusion else self.frames(ins)
            if recorded is not None:
                return (chain[0] if chain else None), recorded, None, NameBasis.DATA_FLOW
            if self.names:
                for fr in chain:
                    rec = self.lookup(fr)
                    if rec is not None:
                        return fr, None, rec, NameBasis.DATA_FLOW
                for at, fr in enumerate(chain if shared is None else ()):
                    rec = self.by_callers(chain, at)
                    if rec is not None:
                        shared = fr, rec
                        break
            if (producer is None and chain and ins.opcode not in _PASS
                    and (chain[0].file, chain[0].line) not in wrapper):
                producer = chain[0]
                if not self.names:
                    break
            queue.extend(self._same_value(ins))
        if shared is not None:
            return shared[0], None, shared[1], NameBasis.CALLERS
        return producer, None, None, NameBasis.DATA_FLOW

    def _tuple_of(self, gte: Instruction) -> str | None:
        """The opcode of the tuple a ``get-tuple-element`` reads."""
        src = self._table(gte).get(gte.operands[0]) if gte.operands else None
        return src.opcode if src is not None else None

    def merged_name(self, t: Moved) -> tuple[SourceLocation | None, str | None, Mapping[str, Any] | None] | None:
        """The name of the part of merged dots the moved value is, when it is one (:meth:`merged_part`),
        found before any frame is read: XLA gives the slices of merged dots, and the bitcasts and loop
        carries after them, the merged dot's frames, which name its first part whatever the slice
        takes.

        Each part is named by the operand it was computed from (:meth:`part_name`); a part none
        names (an operand computed before the step's layer, such as the layer's input) takes the
        one name left when the others are named and the merged dot's own frames name one more.
        """
        queue = deque(self._moved(t))
        seen: set[tuple[str, str]] = set()
        while queue and len(seen) < _MAX_STEPS:
            ins = queue.popleft()
            key = (ins.computation, ins.name)
            if key in seen:
                continue
            seen.add(key)
            if op_name_checkpoint(ins) is not None:
                return None  # a JAX that records the name: data flow reads it there
            found = self.merged_part(ins)
            if found is not None:
                picked, parts = found
                named = [self.part_name(p) if p is not None else None for p in parts]
                if named[picked] is not None:
                    return named[picked]
                if sum(n is None for n in named) != 1:
                    return None
                taken = {str(n[2]["name"]) for n in named if n is not None and n[2] is not None}
                merged = [r for fr in self.frames(ins) if (r := self.lookup(fr)) is not None]
                left = {str(r["name"]): r for r in merged if str(r["name"]) not in taken}
                if len(left) != 1:
                    return None
                [rec] = left.values()
                return _record_source(rec), None, rec
            queue.extend(self._same_value(ins))
        return None

    def merged_part(self, ins: Instruction) -> tuple[int, list[Instruction | None]] | None:
        """When ``ins`` takes one part of the result of merged dots: (which part, the operand of the merged
        dot each part was computed from); else None.

        XLA's DotMerger turns dots that share an operand (``h @ wq``, ``h @ wk``, ``h @ wv``) into one
        dot of the shared operand and the others concatenated, and slices the result apart. Read in
        the optimized HLO: a ``slice`` (alone or at the root of a fusion, under bitcasts and
        transposes) of a value computed, through casts, bitcasts, fusions and a split-K ``reduce``,
        by a ``dot`` one of whose operands is a ``concatenate`` (in the dot's fusion or one of its
        own). The slice's range along the dimension of the concatenated size must be exactly one
        concatenated operand's. XLA gives every slice the merged dot's metadata (from jax 0.12, the
        first dot's source line), so the slice's own frames do not tell the parts apart; the
        part's operand does.
        """
        sliced = self._slice_of(ins)
        if sliced is None:
            return None
        sl, source = sliced
        concat = self._concatenated(source)
        if concat is None:
            return None
        table = self._table(concat)
        ranges = _slice_ranges(sl.attr("slice"))
        dims = concat.attr("dimensions").strip("{}").split(",")
        if not ranges or len(dims) != 1 or not dims[0].strip().isdigit():
            return None
        axis = int(dims[0])
        sizes = [table[o].shape.dims[axis] for o in concat.operands if o in table
                 and len(table[o].shape.dims) > axis]
        if len(sizes) != len(concat.operands):
            return None
        bounds = [(sum(sizes[:i]), sum(sizes[:i + 1])) for i in range(len(sizes))]
        operand = self._table(sl).get(sl.operands[0]) if sl.operands else None
        if operand is None:
            return None
        picked = {bounds.index(r) for d, r in enumerate(ranges) if r in bounds and d < len(operand.shape.dims)
                  and operand.shape.dims[d] == bounds[-1][1] and r != (0, bounds[-1][1])}
        if len(picked) != 1:
            return None
        return picked.pop(), [self._out_of_fusion(table[o]) for o in concat.operands]

    def _out_of_fusion(self, part: Instruction | None) -> Instruction | None:
        """The value a concatenated operand is, out of the fusion and past bitcasts and casts."""
        for _ in range(8):
            if part is None or part.opcode not in ("bitcast", "copy", "reshape", "transpose", "convert", "parameter") \
                    or (part.computation == self.module.entry_name and part.opcode == "parameter"):
                break
            part = self._through(part, ("bitcast", "copy", "reshape", "transpose", "convert"))
        return part

    def _slice_of(self, ins: Instruction) -> tuple[Instruction, Instruction] | None:
        """(the slice, the value it slices) when ``ins`` is a slice, or a fusion whose root is one (under
        bitcasts, transposes, copies) of the fusion's operand."""
        if ins.opcode == "slice" and ins.operands:
            operand = self._table(ins).get(ins.operands[0])
            return (ins, operand) if operand is not None else None
        if ins.opcode != "fusion":
            return None
        node = self._root(ins)
        while node is not None and node.opcode in ("bitcast", "transpose", "copy", "reshape") and node.operands:
            node = self._table(node).get(node.operands[0])
        if node is None or node.opcode != "slice" or not node.operands:
            return None
        param = self._table(node).get(node.operands[0])
        if param is None or param.opcode != "parameter":
            return None
        passed = self._passed_in(param)
        return (node, passed[0]) if len(passed) == 1 else None

    def _concatenated(self, value: Instruction) -> Instruction | None:
        """The ``concatenate`` operand of the dot that computed ``value`` (through casts, bitcasts,
        fusion roots and parameters, a split-K reduce); None when there is not exactly one."""
        todo, steps = [value], 0
        while todo and steps < 16:
            ins = todo.pop()
            steps += 1
            if ins.opcode == "dot":
                concats = [c for c in (self._concat_operand(self._table(ins).get(o)) for o in ins.operands)
                           if c is not None]
                return concats[0] if len(concats) == 1 else None
            nxt = self._through(ins, ("bitcast", "convert", "copy", "reshape", "transpose", "reduce"))
            if nxt is not None:
                todo.append(nxt)
        return None

    def _through(self, ins: Instruction, ops: Collection[str]) -> Instruction | None:
        """One step back from ``ins`` when it only carries a value on: a fusion to its root, a fused or
        called computation's parameter to the caller's operand, one of ``ops`` to its operand 0."""
        if ins.opcode == "fusion":
            return self._root(ins)
        if ins.opcode == "parameter" and ins.computation != self.module.entry_name:
            passed = self._passed_in(ins)
            return passed[0] if len(passed) == 1 else None
        if ins.opcode in ops and ins.operands:
            return self._table(ins).get(ins.operands[0])
        return None

    def _concat_operand(self, node: Instruction | None) -> Instruction | None:
        """The ``concatenate`` a dot operand is, under bitcasts and reshapes, in a fusion of its own or not."""
        for _ in range(8):
            if node is None or node.opcode == "concatenate":
                return node
            node = self._through(node, ("bitcast", "reshape", "transpose", "copy"))
        return None

    def part_name(self, part: Instruction) -> tuple[SourceLocation | None, str | None, Mapping[str, Any] | None] | None:
        """The name of one part of merged dots, from the operand it was computed from: a checkpoint name
        its ``op_name`` records; the record whose dot multiplies the step argument it is (its pytree
        path, the entry parameter's ``op_name``: dots that shared their input); the record whose dot
        reads a value computed at the line of the first op on the way back that computes (its
        ``inputs``: dots that shared their weight). None when no name is unique."""
        queue, seen = deque([part]), set[tuple[str, str]]()
        while queue and len(seen) < _MAX_STEPS:
            ins = queue.popleft()
            key = (ins.computation, ins.name)
            if key in seen:
                continue
            seen.add(key)
            recorded = op_name_checkpoint(ins)
            chain = self.frames(ins)
            if recorded is not None:
                return (chain[0] if chain else None), recorded, None
            if ins.opcode == "parameter" and ins.computation == self.module.entry_name:
                path = ins.metadata.get("op_name", "").replace("\\'", "'")
                rec = self._unique(r for r in self.names if path and path in (r.get("weights") or ()))
                if rec is not None:
                    return _record_source(rec), None, rec
                continue
            if chain and ins.opcode not in _PASS and ins.opcode not in _SAME_VALUE:
                at = [f"{fr.file}:{fr.line}" for fr in chain]
                rec = self._unique(r for r in self.names for i in (r.get("inputs") or ())
                                   if any(_same_file(a.rsplit(":", 1)[0], i.rsplit(":", 1)[0])
                                          and a.rsplit(":", 1)[1] == i.rsplit(":", 1)[1] for a in at[:1]))
                return (chain[0], None, rec) if rec is not None else None
            queue.extend(self._same_value(ins))
        return None

    @staticmethod
    def _unique(records: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
        """The record, when all of ``records`` carry one name; None when none or several names."""
        found = list(records)
        return found[0] if found and len({str(r["name"]) for r in found}) == 1 else None

    def first_frame(self, t: Moved) -> SourceLocation | None:
        """The user frame of the moved value's producer: the first frame on the way back (through
        every input) that is not the offload's own line (the remat wrapper's)."""
        wrapper = {(f.file, f.line) for f in self.frames(t.instruction)[:1]}
        start = self._inputs(t.instruction)
        if t.direction is Direction.TO_HOST and t.instruction.opcode in ("dynamic-update-slice-start",
                                                                          "async-start", "fusion"):
            start = [i for i in start if i.opcode != "get-tuple-element" or i.shape.memory_space != t.host_space]
        queue, seen = deque(start), set[tuple[str, str]]()
        while queue and len(seen) < _MAX_STEPS:
            ins = queue.popleft()
            key = (ins.computation, ins.name)
            if key in seen:
                continue
            seen.add(key)
            chain = self.frames(ins)
            if chain and ins.opcode not in _PASS and (chain[0].file, chain[0].line) not in wrapper:
                return chain[0]
            queue.extend(self._inputs(ins))
        return None

    def host_writer(self, t: Moved, by_ins: Mapping[tuple[str, str], M]) -> M | None:
        """For a to-device transfer: the to-host transfer that wrote the host buffer it reads."""
        table = self._table(t.instruction)
        queue = deque([table[t.instruction.operands[0]]] if t.instruction.operands else [])
        seen: set[tuple[str, str]] = set()
        while queue and len(seen) < _MAX_STEPS:
            ins = queue.popleft()
            key = (ins.computation, ins.name)
            if key in seen:
                continue
            seen.add(key)
            hit = by_ins.get(key)
            if hit is not None and hit.direction is Direction.TO_HOST:
                return hit
            if ins.opcode.endswith("-done") and ins.operands:
                hit = by_ins.get((ins.computation, ins.operands[0]))
                if hit is not None and hit.direction is Direction.TO_HOST:
                    return hit
            if ins.opcode == "dynamic-update-slice" and ins.operands:
                queue.append(self._table(ins)[ins.operands[0]])
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
        ins = self._table(t.instruction).get(t.instruction.operands[0])
        while ins is not None and ins.opcode in ("bitcast", "get-tuple-element", "copy") and ins.operands:
            ins = self._table(ins).get(ins.operands[0])
        if ins is None or ins.opcode != "parameter" or ins.computation != self.module.entry_name:
            return None
        path = ins.metadata.get("op_name", "").replace("\\'", "'")
        if not path:
            return None
        queue, seen = deque(self.index.users(t.instruction)), set[tuple[str, str]]()
        while queue and len(seen) < _MAX_STEPS:
            user = queue.popleft()
            if (user.computation, user.name) in seen:
                continue
            seen.add((user.computation, user.name))
            chain = self.frames(user)
            if chain:
                return path, chain[0]
            queue.extend(self.index.users(user))
        return path, None

    def own_names(self, t: Moved, requested: Collection[str] | None) -> TransferNames:
        """A to-host transfer's (or an annotation's) names, by data flow from the value it moves; its
        source line, the line that named it, else that of the op that computed it (else the first
        frame on any way back)."""
        fr, recorded, rec, basis = self.traced(t)
        own = op_name_checkpoint(t.instruction)
        if own is not None or recorded is not None:
            basis = NameBasis.DATA_FLOW
        name = own or recorded or (str(rec["name"]) if rec is not None else None)
        if own is None and recorded is None and rec is not None and requested is not None and name not in requested:
            # a value tagged twice (checkpoint_name of a checkpoint_name): the one of its names a request asks for
            asked = [r for r in self.names if str(r["name"]) in requested
                     and str(r["name"]) in (rec.get("same_value") or ())]
            if len({str(r["name"]) for r in asked}) == 1:
                rec, name = asked[0], str(asked[0]["name"])
        role = rec.get("role") if rec is not None else None
        source = fr or self.first_frame(t)
        if name is None:
            return TransferNames(source=source)
        if requested is not None and name not in requested:
            return TransferNames(None, role, source, None, name)
        return TransferNames(name, role, source, basis)


def _host_dma(ins: Instruction) -> tuple[str, ...] | None:
    """The operand whose value a TPU host DMA carries, when ``ins`` is one: a ``dynamic-update-slice-start``
    (an ``async-start`` wrapping ``dynamic-update-slice`` with no computation of its own) carries its update
    (operand 1), a ``dynamic-slice-start`` the buffer it reads (operand 0); None for any other op."""
    if ins.opcode != "async-start" or ins.called_computations or not ins.operands:
        return None
    if ins.wrapped_opcode == "dynamic-update-slice" and len(ins.operands) > 1:
        return (ins.operands[1],)
    if ins.wrapped_opcode == "dynamic-slice":
        return (ins.operands[0],)
    return None


def _one_value(records: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``records`` are names of one value: each lists every other's name in ``same_value``."""
    return all(str(o["name"]) in (r.get("same_value") or ()) for r in records for o in records if o is not r)


def _agreeing(callers: Iterable[str], below: Sequence[SourceLocation]) -> int:
    """How many leading ``file:line`` of ``callers`` are the frames of ``below``, in order."""
    n = 0
    for want, fr in zip(callers, below, strict=False):
        file, _, line = str(want).rpartition(":")
        if not (line.isdigit() and int(line) == fr.line and _same_file(fr.file, file)):
            break
        n += 1
    return n


def _record_source(rec: Mapping[str, Any]) -> SourceLocation:
    """The source line of a name record's tensor: the line of the op that computed it."""
    return SourceLocation(str(rec.get("producer_file", rec.get("file", ""))), str(rec.get("function", "")),
                          int(rec.get("producer_line", rec.get("line", 0))), 0)


def _slice_ranges(text: str) -> list[tuple[int, int]]:
    """``{[640:768], [0:256]}`` -> [(640, 768), (0, 256)] (a strided range is not one part: [])."""
    out = []
    for m in re.finditer(r"\[(\d+):(\d+)(:\d+)?\]", text):
        if m.group(3) and m.group(3) != ":1":
            return []
        out.append((int(m.group(1)), int(m.group(2))))
    return out


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


#: Names for to-host transfers data flow left unnamed, decided by bytes (``hloscope.analysis.intent.naming``):
#: given the data-flow names of every to-host transfer, it returns the guessed ones.
Guess = Callable[[Mapping[Key, TransferNames]], Mapping[Key, TransferNames]]


def transfer_names(index: ModuleIndex, transfers: Sequence[Moved], names: Sequence[Mapping[str, Any]] = (),
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
