"""One shape for XLA's two printings of an async-wrapped op.

XLA writes an op it runs asynchronously inside a wrapper (``kAsyncStart``/``kAsyncUpdate``/``kAsyncDone``
around a computation of parameters and that one op) two ways. Its dump writes the wrapper and the
computation::

    %s = ((f32[8]{0:S(5)}, f32[1]{0}, s32[]), f32[8]{0:S(5)}, u32[]) async-start(%a, %b, %i), calls=%async_computation.2
    %async_computation.2 (p0: f32[8], p1: f32[1], p2: s32[]) -> f32[8] { ... ROOT dynamic-update-slice(...) }

and ``compiled.as_text()`` (the printer's default ``syntax_sugar_async_ops``) writes the op inline, with
its attributes and none of the computation::

    %s = ((f32[8]{0:S(5)}, f32[1]{0}, s32[]), f32[8]{0:S(5)}, u32[]) dynamic-update-slice-start(%a, %b, %i)

XLA's parser builds one module from both (hlo_parser.cc: a sugared ``*-start`` gets a wrapped
computation, ``async_wrapped``, of ``async_param`` parameters and the op). So does
:func:`expand_async_sugar`, run by the parser on every module it builds, so that no pass learns which
printing a module came from. Contract, after it:

- every ``async-start`` that wraps an op calls (``calls=``) a computation whose root is that op;
  a sugared start's attributes are split as XLA's printer joined them: its own (``metadata``,
  ``backend_config``, ``frontend_attributes``, ``sharding``, ``control-predecessors``,
  ``async_execution_thread``, ``async_group_id``, ``statistics``) stay on the start, with
  ``calls=`` added; the rest (``dynamic_slice_sizes``, ``slice``, a fusion's ``kind`` and ``calls``,
  a call's ``to_apply`` ...) go to the wrapped op, with the start's ``metadata``,
  ``frontend_attributes`` and ``sharding`` (what XLA's parser gives it);
- every async start, update and done has ``wrapped_opcode`` set to the wrapped op's opcode, however it
  was written (``text_opcode`` keeps what the text said, for display);
- the synthesized computation, named as XLA's parser names it (``async_wrapped``, ``async_wrapped.1``
  ... with ``async_param`` parameters and the op named after its opcode, unique in the module), sits
  just before the computation of its start, runs on the start's ``async_execution_thread``, and
  ``module.calling`` lists its callers in text order.

Copies (``copy-start``/``copy-done``) and the collectives XLA has its own start/done opcodes for
(``all-gather-start``, ``all-reduce-start``, ``collective-permute-start``; ``send``/``recv``) are not
async-wrapped ops and are left as they are.
"""

from __future__ import annotations

from hloscope.hlo.model import Computation, Instruction, Module
from hloscope.hlo.shape import Shape

__all__ = ["expand_async_sugar", "order_computations"]

#: Attributes XLA prints for the async start itself (the rest of a sugared start's belong to its op).
_START_OWN = frozenset({"metadata", "backend_config", "frontend_attributes", "sharding", "control-predecessors",
                        "async_execution_thread", "async_group_id", "statistics", "original_value"})
#: Of those, the ones the wrapped op is given too.
_SHARED = ("metadata", "frontend_attributes", "sharding")
#: Attributes that stay on the start and open its list, in the order XLA's dump prints them.
_LEADING = ("async_execution_thread",)
_ASYNC = ("async-start", "async-update", "async-done")


class _Names:
    """XLA's ``NameUniquer`` in the small: ``base``, then ``base.1``, ``base.2``..., skipping names taken."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken
        self.next: dict[str, int] = {}

    def make(self, base: str) -> str:
        k = self.next.get(base, 0)
        while True:
            name = base if k == 0 else f"{base}.{k}"
            k += 1
            if name not in self.taken:
                self.next[base] = k
                self.taken.add(name)
                return name


def expand_async_sugar(module: Module) -> None:
    """Give every sugared async start its wrapped computation and every async op its ``wrapped_opcode``
    (module docstring). Changes ``module`` in place; a module without async ops is left untouched."""
    sugared: list[Instruction] = []
    halves: list[tuple[Computation, Instruction]] = []
    for comp in module.computations.values():
        for ins in comp.instructions:
            op = ins.opcode
            if op in _ASYNC:
                if op == "async-start" and ins.text_opcode != "async-start":
                    sugared.append(ins)
                elif op == "async-start":
                    root = _root(module, ins)
                    if root is not None and not ins.wrapped_opcode:
                        ins.wrapped_opcode = root.opcode
                else:
                    halves.append((comp, ins))
    late: dict[tuple[str, str], list[Shape]] = {}  # a sugared start -> the shapes its updates bind later
    result: dict[tuple[str, str], Shape] = {}  # a sugared start -> its output's shape, as first bound
    for comp, ins in halves:
        start = _start_of(comp, ins)
        if start is None:
            continue
        if not ins.wrapped_opcode:
            ins.wrapped_opcode = start.wrapped_opcode
        if start.text_opcode == "async-start":
            continue
        key = (comp.name, start.name)
        if ins.opcode == "async-update":
            late.setdefault(key, []).extend(comp.by_name[o].shape for o in ins.operands[1:])
        bound = ins.shape.tuple_element(1) if ins.opcode == "async-update" else ins.shape
        if key not in result and bound is not None and not (bound.is_tuple and not bound.tuple_shapes):
            result[key] = bound  # an output the start leaves unbound (``()``), bound by an update or the done
    if sugared:
        _wrap_all(module, sugared, late, result)


def _root(module: Module, start: Instruction) -> Instruction | None:
    calls = start.called_computations
    comp = module.computations.get(calls[0]) if calls else None
    return comp.root if comp is not None else None


def _start_of(comp: Computation, ins: Instruction) -> Instruction | None:
    """The async-start an update or done continues, through updates, when its context is one."""
    cur: Instruction | None = ins
    for _ in range(10_000):
        if cur is None or cur.opcode == "async-start":
            return cur
        if cur.opcode not in _ASYNC or not cur.operands:
            return None
        cur = comp.by_name.get(cur.operands[0])
    return None


def _wrap_all(module: Module, sugared: list[Instruction], late: dict[tuple[str, str], list[Shape]],
              result: dict[tuple[str, str], Shape]) -> None:
    taken_before = set(module.computations)
    comp_names = _Names(set(taken_before))
    ins_names = _Names({i.name for c in module.computations.values() for i in c.instructions})
    made: dict[str, list[Computation]] = {}  # caller's computation -> wrapped computations, in text order
    for start in sugared:
        key = (start.computation, start.name)
        made.setdefault(start.computation, []).append(
            _wrap(module, start, late.get(key, []), result.get(key), comp_names, ins_names))
    computations: dict[str, Computation] = {}
    for name, comp in module.computations.items():
        for new in made.get(name, ()):
            computations[new.name] = new
        computations[name] = comp
    module.computations = computations
    callers: dict[str, list[Instruction]] = {}
    for ins in module.calling:
        callers.setdefault(ins.computation, []).append(ins)
    module.calling = [ins for name, comp in computations.items() for ins in
                      (callers.get(name, []) if name in taken_before and name not in made else
                       [i for i in comp.instructions if i.called_computations])]  # new callers: listed again


def _wrap(module: Module, start: Instruction, late: list[Shape], bound: Shape | None, comp_names: _Names,
          ins_names: _Names) -> Computation:
    """The computation XLA's parser builds for one sugared start; the start is made to call it. Its
    parameters are the start's operands, then the inputs its async-updates bind later (``late``: XLA
    0.12's late binding, where the start's operand tuple is ``()``); its op's shape is the start's
    output, or where the start leaves it unbound (``()``), what an update or the done binds (``bound``)."""
    attrs = start.attrs
    own = {k: v for k, v in attrs.items() if k in _START_OWN}
    op_attrs = [f"{k}={v}" for k, v in attrs.items() if k not in _START_OWN]
    op_attrs += [f"{k}={own[k]}" for k in _SHARED if k in own]
    name = comp_names.make("async_wrapped")
    thread = own.get("async_execution_thread", "").strip('"') or "main"
    comp = Computation(name=name, is_entry=False, line=start.line, execution_thread=thread)
    table = module.computations[start.computation].by_name
    shape = start.shape
    inputs = shape.tuple_shapes[0].tuple_shapes if shape.is_tuple and shape.tuple_shapes[0].is_tuple else ()
    args = [inputs[k] if k < len(inputs) else table[o].shape for k, o in enumerate(start.operands)] + late
    params: list[str] = []
    for k, arg in enumerate(args):
        _add(comp, Instruction(ins_names.make("async_param"), "parameter", "parameter", "", arg, (), str(k), "",
                               False, start.line, 0, name), start)
        params.append(comp.instructions[-1].name)
    result = shape.tuple_shapes[1] if shape.is_tuple and len(shape.tuple_shapes) > 1 else shape
    if result.is_tuple and not result.tuple_shapes and bound is not None:
        result = bound
    op = start.wrapped_opcode
    _add(comp, Instruction(ins_names.make(op), op, op, "", result, tuple(params), "", ", ".join(op_attrs), True,
                           start.line, 0, name), start)
    lead = [f"{k}={own[k]}" for k in _LEADING if k in own]
    rest = [f"{k}={v}" for k, v in own.items() if k not in _LEADING]
    start.attr_text = ", ".join([*lead, f"calls=%{name}", *rest])
    start._attrs = None
    start._called = None
    return comp


def _add(comp: Computation, ins: Instruction, like: Instruction) -> None:
    ins.position = len(comp.instructions)
    ins.path = like.path
    ins.attr_column = like.attr_column
    comp.instructions.append(ins)
    comp.by_name[ins.name] = ins


def order_computations(module: Module) -> None:
    """Put ``module.computations`` in the order XLA's printer gives the module as read
    (``HloModule::MakeComputationPostOrder``), which does not depend on the printing it came from:
    for each computation nothing calls, in text order, the computations it reaches, callees first
    (depth first over its instructions in text order, each one's called computations in order, a
    while's body before its condition, each taken where first reached), then itself.

    XLA's dump and ``as_text()`` print one module's computations in different orders, and every
    list a report makes in module order (transfers, unread writes, host computations) must read the
    same from either; re-printing a module read from either writes this order
    (``fixtures/as_text/``). ``module.calling`` follows."""
    comps = module.computations
    callees: dict[str, list[list[str]]] = {}  # computation -> per calling instruction, its callees
    for ins in module.calling:
        calls = list(ins.called_computations)
        if ins.opcode == "while" and len(calls) == 2:
            calls = [ins.attr("body").lstrip("%"), ins.attr("condition").lstrip("%")]
        callees.setdefault(ins.computation, []).append([c for c in calls if c in comps])
    called = {c for lists in callees.values() for calls in lists for c in calls}
    order: list[str] = []
    placed: set[str] = set()
    for root in [n for n in comps if n not in called]:
        for name in _embedded(root, callees):
            if name not in placed:
                placed.add(name)
                order.append(name)
        placed.add(root)
        order.append(root)
    order += [n for n in comps if n not in placed]  # called only from a cycle: text order
    if order == list(comps):
        return
    by_comp: dict[str, list[Instruction]] = {}
    for ins in module.calling:
        by_comp.setdefault(ins.computation, []).append(ins)
    module.computations = {n: comps[n] for n in order}
    module.calling = [ins for n in order for ins in by_comp.get(n, ())]


def _embedded(root: str, callees: dict[str, list[list[str]]]) -> list[str]:
    """The computations ``root`` reaches, callees first (``HloComputation::MakeEmbeddedComputationsList``)."""
    visited: set[str] = set()
    out: list[str] = []
    stack: list[tuple[str, int]] = []

    def push(calls: list[str]) -> None:
        for c in reversed(calls):
            if c not in visited:
                visited.add(c)
                stack.append((c, 0))

    for calls in callees.get(root, ()):
        push(calls)
        while stack:
            name, k = stack[-1]
            lists = callees.get(name, ())
            if k >= len(lists):
                stack.pop()
                out.append(name)
            else:
                stack[-1] = (name, k + 1)
                push(lists[k])
    return out
