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
from hloscope.hlo.model import Computation, Instruction, Module
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
    operands and the done's result (what enters and leaves the host computation).
    wrapped: it is the computation an async start wraps (``calls=``), whose name only XLA's dump
    prints (``as_text()`` writes the op inline: hlo/async_sugar.py), so it is known by its start."""

    computation: str
    thread: str
    start: Instruction | None
    done: Instruction | None
    caller: str
    instructions: int
    operand_bytes: int
    result_bytes: int
    wrapped: bool = False


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
    wrapped: set[str] = set()
    if host_comps:
        for cname, comp in module.computations.items():
            for ins in comp.instructions:
                if ins.opcode != "async-start":
                    continue
                names = _callees(ins)
                chain = index.async_op(ins)
                if chain is not None and chain.computation is not None and chain.wrapped is not None \
                        and _one_op(chain.computation):
                    # The computation holding just the op the start wraps: XLA's dump prints it,
                    # as_text() does not (hlo/async_sugar.py). What the op calls is entered by the start.
                    wrapped.add(chain.computation.name)
                    names += _callees(chain.wrapped)
                for callee in names:
                    if callee in host_comps and callee not in entered:
                        entered[callee] = (cname, ins)
    compute: list[HostCompute] = []
    for name, comp in host_comps.items():
        caller, start = entered.get(name, ("", None))
        if name in wrapped and comp.root is not None and any(c in entered for c in _callees(comp.root)):
            continue  # known by what its op calls
        done = index.done_of(start) if start is not None else None
        operand_bytes = 0
        if start is not None:
            table = module.computations[caller].by_name
            operand_bytes = sum(table[o].shape.byte_size for o in start.operands if o in table)
        compute.append(HostCompute(name, comp.execution_thread, start, done, caller, len(comp.instructions),
                                   operand_bytes, done.shape.byte_size if done is not None else 0, name in wrapped))
    return HostWork(tuple(accesses), tuple(compute))


def _one_op(comp: Computation) -> bool:
    """Parameters and one op on them: a computation an async start wraps that XLA's printer writes inline."""
    return all(i.opcode == "parameter" for i in comp.instructions[:-1]) and comp.root is comp.instructions[-1]


def _callees(ins: Instruction) -> list[str]:
    """The computations ``ins`` calls: by its call attributes, then a custom call's ``called_computations``."""
    called = ins.attr("called_computations")
    return [*ins.called_computations, *(n.strip().lstrip("%") for n in called.strip("{}").split(",") if n.strip())]
