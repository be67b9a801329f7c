"""Host writes that nothing reads back: bytes sent to host memory for nothing.

Pass: ``find_unread_host_writes(index, transfers, host_space, link_us) -> UnreadHostWrites``.

Every host buffer is followed as one *storage* through everything that passes it on without
reading it: tuples and get-tuple-element, loop state (a while's operand, its body's parameter
and root, its condition's parameter, its result), calls and conditionals, bitcasts, copies
from host to host, optimization barriers, and the in-place updates that write into it (an
async or fused ``dynamic-update-slice`` whose operand 0 is the buffer: its result is the same
storage). Every other use of a host value in a scheduled computation is a read: a reload
(``dynamic-slice``, async or fused, reads the region its start indices give; a ``copy`` to
device reads all of it), a kernel reading host memory in place, anything not understood (read
all: the pass says nothing it cannot show). A storage the entry computation returns or takes as
a parameter is read (by the next step, or the caller).

A write to host (a D->H transfer) is unread when:

- it updates a slot of a host stack (``dynamic-update-slice``) that no read of the storage can
  overlap. Start indices are read as XLA clamps them: a constant is one slot; an index computed
  in a loop body whose trip count reaches every start of its dimension is every slot; any other
  index is unknown (a read at an unknown index reads every slot; a write at one is judged only
  when the storage has no read at all);
- it copies a whole value to host and the copy's storage has no read (``DEAD_COPY``).

Bytes are per step (per execution times executions); ``link_us`` prices them on the target's
D->H link. Facts only; render/ builds the words.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

from hloscope.analysis.kinds import Direction
from hloscope.analysis.structure.callgraph import callee_name
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.opclass import SAME_VALUE
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.hlo.model import Computation, Instruction
from hloscope.hlo.shape import Shape

#: A place holding a host array: (computation, instruction, tuple index path).
Node = tuple[str, str, tuple[int, ...]]
#: Per sliced dimension, the half-open range of starts a read or write covers.
Box = tuple[tuple[int, int], ...]

_PASS_ON = frozenset({"bitcast", "copy", "opt-barrier", "optimization-barrier"})
_PLUMBING = frozenset({"async-update", "async-done", "copy-done", "get-tuple-element", "tuple", "while",
                       "call", "conditional", "bitcast", "opt-barrier", "optimization-barrier"})
#: The most slots of one write enumerated (a loop-indexed write into a stack of several dimensions).
_MAX_BOXES = 4096


class UnreadReason(StrEnum):
    """Why a write to host is never read."""

    SLOT_NOT_READ = "slot_not_read"  # it fills slots of a host stack that no read overlaps
    NEVER_READ = "never_read"  # it updates a host buffer nothing reads at all
    DEAD_COPY = "dead_copy"  # a copy to host whose result nothing reads


@dataclass(frozen=True)
class UnreadWrite:
    """One write to host whose bytes (some or all) nothing reads back.

    transfer: the D->H transfer. reason: :class:`UnreadReason`. buffer: the instruction the host
    storage starts at (an ``AllocateBuffer`` custom-call, the copy's done ...). sliced_dims: the
    dimensions of the buffer a slot is indexed along (empty for a copy). slots: the starts
    (one per sliced dimension) of the slots written and never read. read_slots: the starts of
    the slots the storage's reads index (constant reads only; every read is in ``readers``).
    readers: the instructions reading the storage. unread_bytes: bytes per step written and
    never read. link_us: their time on the D->H link per step (the target's estimate).
    """

    transfer: HostTransfer
    reason: UnreadReason
    buffer: str
    sliced_dims: tuple[int, ...]
    slots: tuple[tuple[int, ...], ...]
    read_slots: tuple[tuple[int, ...], ...]
    readers: tuple[str, ...]
    unread_bytes: int
    link_us: float


@dataclass(frozen=True)
class UnreadHostWrites:
    """Result of :func:`find_unread_host_writes`.

    writes: the unread writes, in transfer order. written_bytes / read_bytes: bytes per step
    the step's transfers move to host and back. unread_bytes / link_us: the writes' sums per step.
    """

    writes: tuple[UnreadWrite, ...] = ()
    written_bytes: int = 0
    read_bytes: int = 0

    @property
    def unread_bytes(self) -> int:
        return sum(w.unread_bytes for w in self.writes)

    @property
    def link_us(self) -> float:
        return sum(w.link_us for w in self.writes)

    def of(self, transfer: HostTransfer) -> UnreadWrite | None:
        """The unread write of ``transfer``, if it is one."""
        return next((w for w in self.writes if w.transfer is transfer), None)


class _Sets:
    """Union-find over nodes."""

    def __init__(self) -> None:
        self.parent: dict[Node, Node] = {}

    def find(self, n: Node) -> Node:
        root = n
        while (p := self.parent.get(root, root)) != root:
            root = p
        while (p := self.parent.get(n, n)) != root:  # path compression
            self.parent[n] = root
            n = p
        return root

    def union(self, a: Node, b: Node) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb


def _host_paths(shape: Shape, host: int, prefix: tuple[int, ...] = ()) -> Iterator[tuple[int, ...]]:
    if shape.is_tuple:
        for i, s in enumerate(shape.tuple_shapes):
            yield from _host_paths(s, host, (*prefix, i))
    elif shape.memory_space == host and shape.dims:
        yield prefix


@dataclass(frozen=True)
class _Access:
    """A read (or an in-place write) of a storage: the instruction, its box on the sliced
    dimensions (None: all of it, or at an unknown index), and its constant starts."""

    ins: Instruction
    box: tuple[Box, ...] | None
    starts: tuple[int, ...] | None


def _outer_operand(index: ModuleIndex, wrapper: Instruction, core: Instruction, name: str) -> int | None:
    """The ``wrapper``'s operand number an operand ``name`` of its ``core`` op comes from (through
    parameters of the wrapped computations), None when it is computed inside."""
    comp = index.computation(core.computation)
    ins = comp.by_name.get(name)
    seen = 0
    while ins is not None and ins.opcode == "parameter" and seen < 4:
        number = int(ins.literal) if ins.literal.strip().isdigit() else -1
        callers = index.callgraph.callers.get(comp.name, [])
        caller = next((c for _, c in callers if c.opcode in ("fusion", "async-start")), None)
        if caller is None or number < 0 or number >= len(caller.operands):
            return None
        if caller is wrapper:
            return number
        comp = index.computation(caller.computation)
        ins = comp.by_name.get(caller.operands[number])
        seen += 1
    return None


def _constant(comp: Computation, name: str) -> int | None:
    ins = comp.by_name.get(name)
    for _ in range(16):
        if ins is None:
            return None
        if ins.opcode == "constant":
            try:
                return int(ins.literal.strip())
            except ValueError:
                return None
        if ins.opcode not in SAME_VALUE or len(ins.operands) != 1:
            return None
        ins = comp.by_name.get(ins.operands[0])
    return None


class _Starts:
    """Reads a start index: its constant value, or the loop trip count that indexes it."""

    def __init__(self, index: ModuleIndex) -> None:
        self.index = index

    def _loop_trip(self, comp: str) -> int | None:
        """The trip count of the innermost loop whose body (or something it calls) is ``comp``."""
        cg = self.index.callgraph
        seen: set[str] = set()
        todo = [comp]
        while todo:
            c = todo.pop()
            if c in seen:
                continue
            seen.add(c)
            loop = self.index.loop_of_body.get(c)
            if loop is not None:
                return cg.trip_count(loop)
            todo.extend(caller for caller, _ in cg.callers.get(c, ()))
        return None

    def box(self, wrapper: Instruction, core: Instruction, names: Sequence[str], buffer: Shape, size: Sequence[int],
            dims: tuple[int, ...]) -> tuple[list[list[tuple[int, int]]] | None, tuple[int, ...] | None]:
        """Per sliced dimension, the ranges of the starts ``names`` can take (None: unknown), and
        the constant starts (None unless every one is constant)."""
        per_dim: list[list[tuple[int, int]]] = []
        consts: list[int] = []
        for d in dims:
            if d >= len(names):
                return None, None
            top = buffer.dims[d] - size[d]
            value = _constant(self.index.computation(core.computation), names[d])
            if value is None and core is not wrapper:
                k = _outer_operand(self.index, wrapper, core, names[d])
                outer = self.index.computation(wrapper.computation)
                value = _constant(outer, wrapper.operands[k]) if k is not None else None
            if value is not None:
                s = min(max(value, 0), top)
                consts.append(s)
                per_dim.append([(s, s + size[d])])
                continue
            trip = self._loop_trip(wrapper.computation)
            if trip is None or trip < top + 1:
                return None, None
            per_dim.append([(s, s + size[d]) for s in range(top + 1)])
        return per_dim, tuple(consts) if len(consts) == len(dims) else None


def _sliced_dims(buffer: Shape, part: Shape) -> tuple[int, ...]:
    if len(buffer.dims) != len(part.dims):
        return ()
    return tuple(d for d, (a, b) in enumerate(zip(buffer.dims, part.dims, strict=True)) if b < a)


def _overlaps(a: Box, b: Box) -> bool:
    if len(a) != len(b):  # shapes the text gives differently (a damaged module): taken as read, never "unread"
        return True
    return all(x0 < y1 and y0 < x1 for (x0, x1), (y0, y1) in zip(a, b, strict=True))


class _Storages:
    """The host storages of a module: which nodes hold the same host buffer, and who reads it."""

    def __init__(self, index: ModuleIndex, host: int) -> None:
        self.index, self.host = index, host
        self.sets = _Sets()
        self.origin: dict[Node, str] = {}
        self.escapes: set[Node] = set()
        self.reads: dict[Node, list[_Access]] = {}
        self.read_all: dict[Node, list[str]] = {}
        self.starts = _Starts(index)
        cg = index.callgraph
        for cname in index.module.computations:
            if cname in cg.scheduled:
                self._alias(index.computation(cname))
        entry = index.module.entry
        for ins in entry.instructions:
            if ins.opcode == "parameter" or ins.is_root:
                for p in _host_paths(ins.shape, host):
                    self.escapes.add(self.sets.find((entry.name, ins.name, p)))
        for cname in index.module.computations:
            if cname in cg.scheduled:
                self._collect_reads(index.computation(cname))

    def node(self, comp: str, name: str, path: tuple[int, ...] = ()) -> Node:
        return self.sets.find((comp, name, path))

    def _shape(self, comp: Computation, name: str) -> Shape | None:
        ins = comp.by_name.get(name)
        return ins.shape if ins is not None else None

    def _alias(self, comp: Computation) -> None:
        u, host, c = self.sets.union, self.host, comp.name
        for ins in comp.instructions:
            op = ins.opcode
            if op == "get-tuple-element" and ins.operands:
                for p in _host_paths(ins.shape, host):
                    u((c, ins.name, p), (c, ins.operands[0], (ins.tuple_index, *p)))
            elif op == "tuple":
                for i, o in enumerate(ins.operands):
                    s = self._shape(comp, o)
                    for p in _host_paths(s, host) if s is not None else ():
                        u((c, ins.name, (i, *p)), (c, o, p))
            elif op in _PASS_ON and ins.operands:
                s = self._shape(comp, ins.operands[0])
                if s is not None:
                    for p in set(_host_paths(ins.shape, host)) & set(_host_paths(s, host)):
                        u((c, ins.name, p), (c, ins.operands[0], p))
            elif op == "while" and ins.operands:
                body, cond = callee_name(ins, "body"), callee_name(ins, "condition")
                for p in _host_paths(ins.shape, host):
                    u((c, ins.name, p), (c, ins.operands[0], p))
                    for sub in (body, cond):
                        self._bind_param(sub, 0, (c, ins.name, p), p)
                    b = self.index.module.computations.get(body)
                    if b is not None and b.root is not None:
                        u((c, ins.name, p), (body, b.root.name, p))
            elif op in ("call", "conditional"):
                branches = list(ins.called_computations)
                for k, callee in enumerate(branches):
                    first = 1 if op == "conditional" else 0
                    args = ins.operands[first + k:first + k + 1] if op == "conditional" else ins.operands
                    for i, o in enumerate(args):
                        s = self._shape(comp, o)
                        for p in _host_paths(s, host) if s is not None else ():
                            self._bind_param(callee, i, (c, o, p), p)
                    callee_comp = self.index.module.computations.get(callee)
                    if callee_comp is not None and callee_comp.root is not None:
                        for p in _host_paths(ins.shape, host):
                            u((c, ins.name, p), (callee, callee_comp.root.name, p))
            elif op in ("async-start", "fusion", "dynamic-update-slice"):
                self._alias_update(comp, ins)
            elif op == "custom-call" or op == "copy-done":
                for p in _host_paths(ins.shape, host):
                    self.origin.setdefault((c, ins.name, p), ins.name)

    def _bind_param(self, callee: str, number: int, outer: Node, path: tuple[int, ...]) -> None:
        comp = self.index.module.computations.get(callee)
        if comp is None:
            return
        for ins in comp.instructions:
            if ins.opcode == "parameter" and ins.literal.strip() == str(number):
                self.sets.union(outer, (callee, ins.name, path))

    def _alias_update(self, comp: Computation, ins: Instruction) -> None:
        """An in-place update: its result (the async done's) is the buffer it updates."""
        if not ins.shape.in_memory_space(self.host):  # (an async start's shape holds its done's result)
            return
        core = self.index.core_op(ins)
        if core.opcode != "dynamic-update-slice" or not core.operands:
            return
        k = _outer_operand(self.index, ins, core, core.operands[0]) if ins.opcode != "dynamic-update-slice" else 0
        if k is None or k >= len(ins.operands):
            return
        result = ins if ins.opcode != "async-start" else self.index.done_of(ins)
        if result is not None and not result.shape.is_tuple and result.shape.memory_space == self.host:
            self.sets.union((comp.name, result.name, ()), (comp.name, ins.operands[k], ()))

    def update_operand(self, ins: Instruction) -> int | None:
        """For an in-place update of a buffer, the wrapper's operand number of the buffer."""
        core = self.index.core_op(ins)
        if core.opcode != "dynamic-update-slice" or not core.operands:
            return None
        return 0 if ins is core else _outer_operand(self.index, ins, core, core.operands[0])

    def _collect_reads(self, comp: Computation) -> None:
        c = comp.name
        for ins in comp.instructions:
            if ins.opcode in _PLUMBING or ins.opcode == "parameter":
                continue
            if ins.opcode == "copy" and ins.shape.memory_space == self.host:
                continue  # host to host: passed on
            hosted = [(k, o, s) for k, o in enumerate(ins.operands)
                      if (s := self._shape(comp, o)) is not None and s.in_memory_space(self.host)]
            if not hosted:  # reads no host buffer (most ops): no need to look inside it
                continue
            written = self.update_operand(ins)
            for k, o, s in hosted:
                if k == written:
                    continue
                for p in _host_paths(s, self.host):
                    self._read(comp, ins, k, self.node(c, o, p), s if not p else None)

    def _read(self, comp: Computation, ins: Instruction, k: int, storage: Node, buffer: Shape | None) -> None:
        core = self.index.core_op(ins)
        if ins.opcode != "copy-start" and buffer is not None \
                and core.opcode == "dynamic-slice" and core.operands:
            source = 0 if core is ins else _outer_operand(self.index, ins, core, core.operands[0])
            if source == k:
                dims = _sliced_dims(buffer, core.shape)
                per_dim, starts = self.starts.box(ins, core, core.operands[1:], buffer, core.shape.dims, dims)
                boxes = None if per_dim is None else tuple(itertools.islice(itertools.product(*per_dim), _MAX_BOXES))
                self.reads.setdefault(storage, []).append(_Access(ins, boxes, starts))
                return
        self.read_all.setdefault(storage, []).append(ins.name)


def find_unread_host_writes(index: ModuleIndex, transfers: Sequence[HostTransfer], host_space: int,
                            link_us: Callable[[int], float]) -> UnreadHostWrites:
    """Per write to host, the bytes nothing reads back (module docstring)."""
    to_host = [t for t in transfers if t.direction is Direction.TO_HOST and not t.is_annotation]
    written = sum(t.bytes * t.executions for t in to_host)
    read = sum(t.bytes * t.executions for t in transfers if t.direction is Direction.TO_DEVICE and not t.is_annotation)
    if not to_host:
        return UnreadHostWrites((), written, read)
    st = _Storages(index, host_space)
    out = [w for t in to_host if (w := _judge(index, st, t, link_us)) is not None]
    return UnreadHostWrites(tuple(out), written, read)


def _judge(index: ModuleIndex, st: _Storages, t: HostTransfer, link_us: Callable[[int], float]) -> UnreadWrite | None:
    ins, comp = t.instruction, index.computation(t.computation)
    if t.op == "dynamic-update-slice":
        k = st.update_operand(ins)
        if k is None or k >= len(ins.operands):
            return None
        storage = st.node(comp.name, ins.operands[k])
        buffer = comp.by_name[ins.operands[k]].shape
        core = index.core_op(ins)
        inside = index.computation(core.computation)
        update = inside.by_name.get(core.operands[1]) if len(core.operands) > 1 else None
        if update is None:
            return None
        dims = _sliced_dims(buffer, update.shape)
        per_dim, _ = st.starts.box(ins, core, core.operands[2:], buffer, update.shape.dims, dims)
        boxes = None if per_dim is None else list(itertools.islice(itertools.product(*per_dim), _MAX_BOXES + 1))
        if boxes is not None and len(boxes) > _MAX_BOXES:
            boxes = None
    elif t.op == "copy":
        done = index.done_of(ins) if t.is_async else ins
        if done is None or done.shape.is_tuple:
            return None
        storage, dims, boxes = st.node(comp.name, done.name), (), [()]
    else:
        return None
    if storage in st.escapes or st.read_all.get(storage):
        return None
    reads = st.reads.get(storage, [])
    if any(r.box is None for r in reads):
        return None
    readers = tuple(dict.fromkeys(r.ins.name for r in reads))
    read_slots = tuple(sorted({r.starts for r in reads if r.starts is not None}))
    if boxes is None:  # written at an unknown slot: unread only if nothing reads the buffer
        if reads:
            return None
        unread, total = 1, 1
    else:
        unread_boxes = [b for b in boxes if not any(_overlaps(b, rb) for r in reads for rb in r.box or ())]
        unread, total = len(unread_boxes), len(boxes)
        if not unread:
            return None
    nbytes = t.bytes * t.executions * unread // total
    if t.op == "copy":
        reason = UnreadReason.DEAD_COPY
    else:
        reason = UnreadReason.NEVER_READ if not reads else UnreadReason.SLOT_NOT_READ
    slots = () if boxes is None or t.op == "copy" else tuple(
        tuple(lo for lo, _ in b) for b in boxes if not any(_overlaps(b, rb) for r in reads for rb in r.box or ()))
    return UnreadWrite(t, reason, _origin_name(st, storage), dims, slots, read_slots,
                       readers, nbytes, link_us(nbytes))


def _origin_name(st: _Storages, storage: Node) -> str:
    for n, name in st.origin.items():
        if st.sets.find(n) == storage:
            return name
    return storage[1]
