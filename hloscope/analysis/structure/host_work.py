"""Work on host memory or the host thread that is not a transfer.

Pass: ``find_host_work(index, host_space=5) -> HostWork``.

- In-place host accesses: a kernel (not a data movement op) whose operand or result
  lives in host memory, e.g. a ``dot`` reading a host-memory ``bitcast``: no transfer
  op moves the data, the kernel reads or writes pinned host memory directly over the
  host link (so it runs at host-link speed). :mod:`hloscope.analysis.structure.transfers` leaves
  these out.
- Host compute: computations on ``execution_thread="host"`` (``compute_on("device_host")``,
  host compute offload), with the async start that enters each one and the done that
  leaves it; XLA's scheduler does not schedule them (openxla/xla#35568), so they are not
  judged as GPU kernels here.

Facts only; render/ builds the words.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.opclass import CONTROL_FLOW, is_free
from hloscope.hlo.model import Instruction, Module
from hloscope.hlo.shape import HOST_MEMORY_SPACE, Shape

#: Ops (or fusion roots) that move data: on host memory one side they are transfers.
MOVEMENT_OPS = frozenset({
    "copy", "dynamic-slice", "dynamic-update-slice", "slice", "concatenate", "reshape", "transpose", "bitcast",
    "pad", "broadcast", "gather", "scatter", "tuple", "get-tuple-element",
})

#: Ops that hold or pass buffers rather than run a kernel on them: control flow carries host
#: buffers through, custom-calls allocate and annotate them, barriers order them.
_NOT_KERNELS = CONTROL_FLOW | {"custom-call", "opt-barrier", "optimization-barrier", "async-update"}
#: Transfers and their wrappers (:mod:`hloscope.analysis.structure.transfers`), and parameters.
_SKIP = frozenset({"async-start", "copy-start", "send", "recv", "parameter"})


@dataclass(frozen=True)
class InPlaceHostAccess:
    """A kernel that reads (``read_bytes``) or writes (``written_bytes``) host memory in place.

    instruction: the kernel (a fusion, dot, custom-call ...). computation: where it runs.
    op: its opcode, or a fusion's root opcode. executions: runs per step."""

    instruction: Instruction
    computation: str
    op: str
    read_bytes: int
    written_bytes: int
    executions: int


@dataclass(frozen=True)
class HostCompute:
    """One computation run on the host thread, and the async ops that enter and leave it.

    computation: the host computation. thread: its execution thread (``host``). start /
    done: the async start that calls it and its done (None when the module has no caller
    or no done for it). caller: the computation holding ``start`` ("" without one).
    instructions: its instruction count. operand_bytes / result_bytes: of the start's
    operands and the done's result (what enters and leaves the host computation)."""

    computation: str
    thread: str
    start: Instruction | None
    done: Instruction | None
    caller: str
    instructions: int
    operand_bytes: int
    result_bytes: int


@dataclass(frozen=True)
class HostWork:
    """Result of :func:`find_host_work`: in-place host accesses and host computations, text order."""

    accesses: tuple[InPlaceHostAccess, ...] = ()
    compute: tuple[HostCompute, ...] = ()


def core_op(module: Module, ins: Instruction) -> str:
    """A fusion's root opcode (nested fusions followed), else the instruction's opcode."""
    cur, seen = ins, 0
    while cur.opcode == "fusion" and seen < 8:
        called = cur.called_computations
        root = module.computations[called[0]].root if called and called[0] in module.computations else None
        if root is None:
            break
        cur, seen = root, seen + 1
    return cur.opcode


def _host_bytes(shape: Shape, host: int) -> int:
    return sum(leaf.byte_size for leaf in shape.leaves() if leaf.memory_space == host)


def is_in_place_access(module: Module, ins: Instruction) -> bool:
    """A synchronous op touching host memory whose work is not moving data."""
    return ins.opcode not in MOVEMENT_OPS and core_op(module, ins) not in MOVEMENT_OPS


def find_host_work(index: ModuleIndex, host_space: int = HOST_MEMORY_SPACE) -> HostWork:
    module, cg = index.module, index.callgraph
    host_comps = {name: c for name, c in module.computations.items() if c.execution_thread != "main"}
    accesses: list[InPlaceHostAccess] = []
    for cname, comp in module.computations.items():
        if cname not in cg.scheduled or cname in host_comps:
            continue
        # A kernel touching host memory is an instruction in host memory or one of its users
        # (operands are instructions of the same computation). Shapes are interned: each
        # distinct one is tested once, and most computations have none in host memory.
        shapes = {id(i.shape): i.shape for i in comp.instructions}
        host_ids = {k for k, shape in shapes.items() if shape.in_memory_space(host_space)}
        if not host_ids:
            continue
        candidates: dict[int, Instruction] = {}
        for h in comp.instructions:
            if id(h.shape) in host_ids:
                candidates[h.position] = h
                for u in index.users(h):
                    candidates[u.position] = u
        table = comp.by_name
        for _, ins in sorted(candidates.items()):
            op = ins.opcode
            if op in _SKIP or op in MOVEMENT_OPS or op in _NOT_KERNELS or op.endswith("-done") or is_free(ins):
                continue
            read = sum(_host_bytes(table[o].shape, host_space) for o in ins.operands if o in table)
            written = _host_bytes(ins.shape, host_space)
            if (read or written) and is_in_place_access(module, ins):
                accesses.append(InPlaceHostAccess(ins, cname, core_op(module, ins), read, written,
                                                  cg.executions.get(cname, 1)))
    entered: dict[str, tuple[str, Instruction]] = {}
    if host_comps:
        for cname, comp in module.computations.items():
            for ins in comp.instructions:
                if ins.opcode != "async-start":
                    continue
                called = ins.attr("called_computations") or ""
                names = (n.strip().lstrip("%") for n in called.strip("{}").split(","))
                for callee in (*ins.called_computations, *names):
                    if callee in host_comps and callee not in entered:
                        entered[callee] = (cname, ins)
    compute: list[HostCompute] = []
    for name, comp in host_comps.items():
        caller, start = entered.get(name, ("", None))
        done = _done_of(index, start) if start is not None else None
        operand_bytes = 0
        if start is not None:
            table = module.computations[caller].by_name
            operand_bytes = sum(table[o].shape.byte_size for o in start.operands if o in table)
        compute.append(HostCompute(name, comp.execution_thread, start, done, caller, len(comp.instructions),
                                   operand_bytes, done.shape.byte_size if done is not None else 0))
    return HostWork(tuple(accesses), tuple(compute))


def _done_of(index: ModuleIndex, start: Instruction) -> Instruction | None:
    """The done at the end of ``start``'s chain (through async-updates)."""
    cur = start
    for _ in range(10_000):
        nxt = next((u for u in index.users(cur) if u.opcode in ("async-update", "async-done")), None)
        if nxt is None or nxt.opcode == "async-done":
            return nxt
        cur = nxt
    return None
