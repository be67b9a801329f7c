"""Find every instruction that moves data between device and host memory.

Pass: ``find_host_transfers(index, host_space=5, names=()) -> list[HostTransfer]``. A transfer
is found without names (``find_transfers``); its names
(``hloscope.analysis.structure.transfer_names.transfer_names``: checkpoint name and how it was
decided, role, user source line) are computed from the found ones, and each is built once more with
them (``build_transfers``): one type, whose ``names`` are empty until then. The pipeline names them
knowing the step's requests instead (``hloscope.analysis.intent.naming.find_named_transfers``).

Recognised, in scheduled computations only (fused bodies run inside their op):
- ``copy-start`` with the host memory space on one side;
- async ops (``async-start`` in dumps, ``fusion-start`` etc. in ``as_text()``)
  whose operands or result live in host memory: the wrapped computation's core
  op (``dynamic-update-slice``, ``dynamic-slice``, ``copy``) decides the bytes;
- ``send``/``recv`` with ``is_host_transfer=true`` (XLA's host send and recv: to host and
  to device), paired with their ``-done``;
- synchronous data movement ops (``copy``, slices, fusions of them) with host memory on
  exactly one side; a kernel reading or writing host memory in place is not a transfer
  (:mod:`hloscope.analysis.structure.host_work` reports it);
- in unoptimized modules, the ``annotate_device_placement`` custom calls
  (``_xla_buffer_placement``) and the older ``MoveToHost``/``MoveToDevice``.
Bytes are those moved per execution (the slice), never the whole host buffer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hloscope.analysis.kinds import Direction, NameBasis
from hloscope.analysis.structure.host_work import is_in_place_access
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.name_records import NameRecord
from hloscope.analysis.structure.opclass import (
    CONTROL_FLOW,
    DONE_OPCODES,
    custom_call_target,
    is_free,
    value_shape,
)
from hloscope.analysis.structure.transfer_names import UNNAMED, Key, TransferNames, transfer_names
from hloscope.hlo.model import Instruction, Module, SourceLocation
from hloscope.hlo.shape import HOST_MEMORY_SPACE, Shape

TO_HOST = Direction.TO_HOST
TO_DEVICE = Direction.TO_DEVICE


@dataclass(frozen=True)
class HostTransfer:
    """One host transfer instruction (the start of an async one).

    instruction: the start (async) or the op itself (sync, annotation).
    computation: enclosing computation. direction: ``to_host`` or ``to_device``.
    op: what moves the data (``dynamic-update-slice``, ``copy`` ...).
    bytes: bytes moved per execution. executions: runs per step.
    is_async: a start/done pair. is_annotation: an unoptimized-module marker. host_space: the
    memory space it was found with. names: the names users know for it
    (``hloscope.analysis.structure.transfer_names``), empty as found (``find_transfers``) and set
    when it is built (``build_transfers``); read through the properties below.
    """

    instruction: Instruction
    computation: str
    direction: Direction
    op: str
    bytes: int
    executions: int
    is_async: bool
    is_annotation: bool = False
    host_space: int = HOST_MEMORY_SPACE
    names: TransferNames = UNNAMED

    @property
    def checkpoint_name(self) -> str | None:
        """The ``checkpoint_name`` of the request the moved tensor belongs to, when known (a name
        no request asks for is never here)."""
        return self.names.checkpoint_name

    @property
    def name_basis(self) -> NameBasis | None:
        """How the name was decided: ``data-flow`` (the moved value followed back to the tagged
        op) or ``bytes`` (a guess: only its bytes matched the request's placement annotations);
        None without a name."""
        return self.names.basis

    @property
    def unrequested_name(self) -> str | None:
        """A ``checkpoint_name`` data flow found on the moved tensor that no request offloads."""
        return self.names.unrequested

    @property
    def role(self) -> str | None:
        """What the tensor is in the model ("Q projection"), when the step said so."""
        return self.names.role

    @property
    def source(self) -> SourceLocation | None:
        """The user source line where the moved tensor was computed (not the remat wrapper's line)."""
        return self.names.source

    @property
    def name_guessed(self) -> bool:
        """Its ``checkpoint_name`` was decided by bytes only (a guess)."""
        return self.names.guessed


def _bound_later(index: ModuleIndex, start: Instruction) -> tuple[list[Shape], Shape | None]:
    """What an async chain binds after its start (late binding, XLA 0.12; docs/parser.md): the
    shapes of its async-updates' operands after the first (inputs of the async computation), and
    the shape of the result where the start leaves it unbound (``()`` at index 1): the first
    update's that binds it, else the done's. ([], None) for a chain that binds all at its start."""
    table = index.module.computations[start.computation].by_name
    late: list[Shape] = []
    unbound = start.shape.is_tuple and len(start.shape.tuple_shapes) > 1 and start.shape.tuple_shapes[1].is_tuple \
        and not start.shape.tuple_shapes[1].tuple_shapes
    result: Shape | None = None
    cur = start
    for _ in range(10_000):
        nxt = next((u for u in index.users(cur) if u.opcode in ("async-update", "async-done")
                    and u.operands and u.operands[0] == cur.name), None)
        if nxt is None:
            break
        if nxt.opcode == "async-done":
            if unbound and result is None:
                result = nxt.shape
            break
        late.extend(table[o].shape for o in nxt.operands[1:] if o in table)
        if unbound and result is None:
            bound = nxt.shape.tuple_element(1)  # an update's shape is ((operands), result, context...)
            if bound is not None and not (bound.is_tuple and not bound.tuple_shapes):
                result = bound
        cur = nxt
    return late, result


def _is_array(s: Shape) -> bool:
    return not s.is_tuple and s.element_type not in ("token", "opaque") and len(s.dims) > 0


def _classify(out_shape: Shape, operand_shapes: list[Shape], host: int) -> Direction | None:
    out_host = out_shape.in_memory_space(host)
    arrays = [s for s in operand_shapes if _is_array(s)]
    in_host = any(s.memory_space == host for s in arrays)
    in_dev = any(s.memory_space != host for s in arrays)
    out_dev = any(leaf.memory_space != host for leaf in out_shape.leaves() if _is_array(leaf))
    if out_host and in_dev:
        return TO_HOST
    if in_host and out_dev and not out_host:
        return TO_DEVICE
    return None


def _moved_bytes(module: Module, direction: str, core: Instruction | None, out_shape: Shape,
                 operand_shapes: list[Shape], host: int) -> tuple[int, str]:
    op = core.opcode if core is not None else "copy"
    if core is not None and op == "copy" and core.operands:
        # XLA wraps a host-side dynamic-slice as copy(dynamic-slice(...)).
        src = module.computations[core.computation].by_name.get(core.operands[0])
        if src is not None and src.opcode == "dynamic-slice":
            op = "dynamic-slice"
    if core is not None and op == "dynamic-update-slice" and len(core.operands) > 1:
        # In-place update of the host buffer: only the update crosses the link.
        owner = module.computations[core.computation].by_name
        return owner[core.operands[1]].shape.byte_size, op
    if direction == TO_DEVICE:
        return sum(leaf.byte_size for leaf in out_shape.leaves() if leaf.memory_space != host), op
    dev = sum(s.byte_size for s in operand_shapes if _is_array(s) and s.memory_space != host)
    host_out = sum(leaf.byte_size for leaf in out_shape.leaves() if leaf.memory_space == host)
    return min(dev, host_out) if dev else host_out, op


def find_host_transfers(index: ModuleIndex, host_space: int = HOST_MEMORY_SPACE,
                        names: Sequence[NameRecord] = ()) -> list[HostTransfer]:
    """Every host transfer of the scheduled computations, named (``names``: the records read
    from the traced jaxpr (:class:`NameRecord`); none for a plain HLO file)."""
    found = find_transfers(index, host_space)
    return build_transfers(found, transfer_names(index, found, names))


def build_transfers(found: Sequence[HostTransfer], named: Mapping[Key, TransferNames]) -> list[HostTransfer]:
    """Each found transfer built with its names."""
    return [HostTransfer(f.instruction, f.computation, f.direction, f.op, f.bytes, f.executions, f.is_async,
                         f.is_annotation, f.host_space, named[(f.computation, f.instruction.name)]) for f in found]


def find_transfers(index: ModuleIndex, host_space: int = HOST_MEMORY_SPACE) -> list[HostTransfer]:
    """Every host transfer of the scheduled computations, before its names (``names`` empty)."""
    module, cg = index.module, index.callgraph
    out: list[HostTransfer] = []
    in_host: dict[int, bool] = {}  # id(shape) -> some leaf lives in host memory (shapes are interned)

    def touches_host(shape: Shape) -> bool:
        got = in_host.get(id(shape))
        if got is None:
            got = in_host[id(shape)] = shape.in_memory_space(host_space)
        return got

    for cname in module.computations:
        if cname not in cg.scheduled:
            continue
        comp = module.computations[cname]
        execs = cg.executions.get(cname, 1)
        table = comp.by_name
        for ins in comp.instructions:
            op = ins.opcode
            if op in DONE_OPCODES or op == "async-update" or op in CONTROL_FLOW:
                continue
            if op == "custom-call":
                t = _annotation_direction(ins)
                if t:
                    size = table[ins.operands[0]].shape.byte_size if ins.operands else ins.shape.byte_size
                    out.append(HostTransfer(ins, cname, t, custom_call_target(ins), size, execs, False, True,
                                             host_space))
                    continue
            if op in ("send", "recv"):
                if ins.attr("is_host_transfer") == "true":
                    # XLA's host send/recv: the data (operand 0 of a send, result element 0 of a
                    # recv) crosses the host link; send/recv-done completes it.
                    if op == "send":
                        data = table[ins.operands[0]].shape if ins.operands and ins.operands[0] in table else None
                    else:
                        data = ins.shape.tuple_shapes[0] if ins.shape.is_tuple and ins.shape.tuple_shapes else None
                    out.append(HostTransfer(ins, cname, TO_HOST if op == "send" else TO_DEVICE, op,
                                      data.byte_size if data is not None else 0, execs, True, False, host_space))
                continue
            if is_free(ins) or op in ("all-gather-start", "all-reduce-start", "collective-permute-start"):
                continue
            operand_shapes = [table[o].shape for o in ins.operands if o in table]
            if op == "async-start":
                late, result = _bound_later(index, ins)
                operand_shapes += late
                if result is None:
                    result = value_shape(ins)
                if not touches_host(ins.shape) and not touches_host(result) \
                        and not any(touches_host(s) for s in operand_shapes):
                    continue  # no host memory on either side: not a transfer
                direction = _classify(result, operand_shapes, host_space)
                if direction:
                    core = index.core_op(ins)
                    size, core_op = _moved_bytes(module, direction, core, result, operand_shapes, host_space)
                    out.append(HostTransfer(ins, cname, direction, core_op, size, execs, True, False, host_space))
                continue
            if not touches_host(ins.shape) and not any(touches_host(s) for s in operand_shapes):
                continue  # no host memory on either side: not a transfer
            if op == "copy-start":
                result = value_shape(ins)
                direction = _classify(result, operand_shapes, host_space)
                if direction:
                    size = result.byte_size if direction == TO_HOST else operand_shapes[0].byte_size
                    out.append(HostTransfer(ins, cname, direction, "copy", size, execs, True, False, host_space))
                continue
            direction = _classify(ins.shape, operand_shapes, host_space)
            if direction and not is_in_place_access(module, ins):
                core = index.core_op(ins)
                size, core_op = _moved_bytes(module, direction, core, ins.shape, operand_shapes, host_space)
                out.append(HostTransfer(ins, cname, direction, core_op, size, execs, False, False, host_space))
    return out


def _annotation_direction(ins: Instruction) -> Direction | None:
    target = custom_call_target(ins)
    if target == "MoveToHost":
        return TO_HOST
    if target == "MoveToDevice":
        return TO_DEVICE
    if target == "annotate_device_placement":
        placement = ins.frontend_attributes.get("_xla_buffer_placement", "")
        if placement in ("pinned_host", "unpinned_host"):
            return TO_HOST
        if placement == "device":
            return TO_DEVICE
    return None
