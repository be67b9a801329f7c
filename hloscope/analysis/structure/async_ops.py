"""What an async op wraps and which done ends it: the one reading every pass uses.

Contract: the parser gives every async-wrapped op one shape (hlo/async_sugar.py: an ``async-start``
that calls a computation whose root is the op, whichever of XLA's printings the module came from),
so these functions read that shape only. :func:`async_op` answers for an ``async-start``,
``async-update`` or ``async-done``: the start, the op it wraps and the computation holding it, the
updates and the done that continue it. :func:`done_of` finds the done that ends any start (async,
copy, collective, send/recv). :func:`core_op` is the op doing the work inside wrappers (an async op,
a fusion, nested). Read through :class:`~hloscope.analysis.structure.index.ModuleIndex`, which
caches them; nothing here mutates the module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hloscope.analysis.structure.opclass import DONE_OPCODES
from hloscope.hlo.model import Computation, Instruction, Module

#: The halves of an async-wrapped op.
ASYNC_HALVES = frozenset({"async-start", "async-update", "async-done"})
#: The most wrappers :func:`core_op` looks through (an async op around a fusion around a fusion...).
_MAX_DEPTH = 8
#: The longest chain of async-updates followed.
_MAX_CHAIN = 10_000


@dataclass(frozen=True, slots=True)
class AsyncOp:
    """One async-wrapped op.

    start: its ``async-start``. wrapped: the op it runs (the root of ``computation``), None when the
    start calls no computation the module holds. computation: the computation the start calls.
    updates: its ``async-update`` chain, in order. done: the ``async-done`` that ends it (None when
    nothing in the start's computation does: a loop's tuple carries the context on)."""

    start: Instruction
    wrapped: Instruction | None
    computation: Computation | None
    updates: tuple[Instruction, ...]
    done: Instruction | None


Users = Callable[[Instruction], list[Instruction]]


def wrapped_computation(module: Module, wrapper: Instruction) -> Computation | None:
    """The computation an ``async-start`` or a fusion wraps (its first called computation)."""
    calls = wrapper.called_computations
    return module.computations.get(calls[0]) if calls else None


def _next_half(users: Users, cur: Instruction) -> Instruction | None:
    return next((u for u in users(cur) if u.opcode in ("async-update", "async-done")
                 and u.operands and u.operands[0] == cur.name), None)


def find_async_op(module: Module, users: Users, ins: Instruction) -> AsyncOp | None:
    """The async op ``ins`` (a start, update or done) belongs to; None for any other op, or an
    update or done whose context does not come from a start in its computation."""
    if ins.opcode not in ASYNC_HALVES:
        return None
    start: Instruction | None = ins
    table = module.computations[ins.computation].by_name
    for _ in range(_MAX_CHAIN):
        if start is None or start.opcode == "async-start":
            break
        start = table.get(start.operands[0]) if start.operands and start.opcode in ASYNC_HALVES else None
    if start is None or start.opcode != "async-start":
        return None
    updates: list[Instruction] = []
    done: Instruction | None = None
    cur = start
    for _ in range(_MAX_CHAIN):
        nxt = _next_half(users, cur)
        if nxt is None:
            break
        if nxt.opcode == "async-done":
            done = nxt
            break
        updates.append(nxt)
        cur = nxt
    comp = wrapped_computation(module, start)
    return AsyncOp(start, comp.root if comp is not None else None, comp, tuple(updates), done)


def find_done(users: Users, start: Instruction) -> Instruction | None:
    """The done that ends ``start``: an async-start's through its updates; a copy-start's copy-done;
    a collective start's or a send/recv's done (the first user that is a done)."""
    cur = start
    for _ in range(_MAX_CHAIN):
        nxt = next((u for u in users(cur) if u.opcode == "async-update" or u.opcode in DONE_OPCODES), None)
        if nxt is None or nxt.opcode != "async-update":
            return nxt
        cur = nxt
    return None


def find_core_op(module: Module, ins: Instruction) -> Instruction:
    """The op doing the work: ``ins`` itself, or through the async ops and fusions wrapping it, the
    root of the innermost wrapped computation; a wrapped ``copy`` or ``bitcast`` of a
    ``dynamic-slice`` is that dynamic-slice (XLA wraps a host-side dynamic-slice so)."""
    cur = ins
    comp: Computation | None = None
    for _ in range(_MAX_DEPTH):
        if cur.opcode not in ("async-start", "fusion"):
            break
        inner = wrapped_computation(module, cur)
        if inner is None or inner.root is None:
            break
        comp, cur = inner, inner.root
    if comp is not None and cur.opcode in ("copy", "bitcast") and cur.operands:
        src = comp.by_name.get(cur.operands[0])
        if src is not None and src.opcode == "dynamic-slice":
            return src
    return cur
