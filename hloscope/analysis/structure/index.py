"""One index per module: users, loops, trip counts, schedule positions, opcode classes.

Contract: ``ModuleIndex(module)`` is built once per module (by the pipeline) and
shared by every pass and view. It holds facts of the module only, each computed
on first use, then cached: the users of each instruction (per computation), the
while loops with their bodies, conditions and trip counts, the call graph
(executions per step), instructions by name, and how many work ops lie between
two schedule positions. Results of passes (async pairs, the dependency graph,
verdicts) are not here: they live on the report. Nothing here mutates the module.
"""

from __future__ import annotations

from hloscope.analysis.structure.async_ops import (
    ASYNC_HALVES,
    AsyncOp,
    find_async_op,
    find_core_op,
    find_done,
    wrapped_computation,
)
from hloscope.analysis.structure.callgraph import CallGraph, build_call_graph, callee_name
from hloscope.analysis.structure.opclass import OpClass, op_class
from hloscope.hlo.model import Computation, Instruction, Module


class ModuleIndex:
    """Shared, lazily built facts about one :class:`Module`."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self._users: dict[str, dict[str, list[Instruction]]] = {}
        self._work_prefix: dict[str, list[int]] = {}
        self._classes: dict[str, list[OpClass]] = {}
        # Built on first read, by hand: the class compiles with mypyc (build_tools/hloscope_build.py), and a
        # compiled class has no instance __dict__ for a caching descriptor to fill.
        self._loops: list[Instruction] | None = None
        self._loop_of_body: dict[str, Instruction] | None = None
        self._by_name: dict[str, Instruction] | None = None
        self._callgraph: CallGraph | None = None
        self._async: dict[tuple[str, str], AsyncOp | None] = {}

    # -- users ---------------------------------------------------------------

    def users_map(self, computation: str) -> dict[str, list[Instruction]]:
        """Instruction name -> its users in ``computation``, in schedule order."""
        users = self._users.get(computation)
        if users is None:
            users = {}
            for ins in self.module.computations[computation].instructions:
                for o in ins.operands:
                    lst = users.setdefault(o, [])
                    if not lst or lst[-1] is not ins:  # an op reading one value twice is one user
                        lst.append(ins)
            self._users[computation] = users
        return users

    def users(self, ins: Instruction) -> list[Instruction]:
        """Users of ``ins`` within its computation, in schedule order."""
        return self.users_map(ins.computation).get(ins.name, [])

    def op_classes(self, computation: str) -> list[OpClass]:
        """The :class:`~hloscope.analysis.structure.opclass.OpClass` of each instruction of ``computation``,
        by position."""
        got = self._classes.get(computation)
        if got is None:
            got = self._classes[computation] = [op_class(i) for i in self.module.computations[computation].instructions]
        return got

    def work_ops_between(self, computation: str, lo: int, hi: int) -> int:
        """How many instructions at positions ``lo <= p < hi`` of ``computation`` do work (not free,
        not an async half: compute, control flow, synchronous collectives)."""
        prefix = self._work_prefix.get(computation)
        if prefix is None:
            prefix = [0]
            for c in self.op_classes(computation):
                prefix.append(prefix[-1] + (c >= OpClass.CONTROL))
            self._work_prefix[computation] = prefix
        hi = max(lo, min(hi, len(prefix) - 1))
        return prefix[hi] - prefix[max(0, lo)]

    # -- control flow -------------------------------------------------------

    def computation(self, name: str) -> Computation:
        return self.module.computations[name]

    def called(self, ins: Instruction, key: str) -> Computation | None:
        """The computation named by a call attribute (``body``, ``condition``, ``calls``...)."""
        name = callee_name(ins, key)
        return self.module.computations.get(name) if name else None

    def while_body(self, loop: Instruction) -> Computation | None:
        return self.called(loop, "body") if loop.opcode == "while" else None

    def while_condition(self, loop: Instruction) -> Computation | None:
        return self.called(loop, "condition") if loop.opcode == "while" else None

    def trip_count(self, loop: Instruction) -> int | None:
        """XLA's ``known_trip_count``, else read from a counted loop; None if unknown
        (the call graph's, computed once per loop)."""
        return self.callgraph.trip_count(loop)

    @property
    def loops(self) -> list[Instruction]:
        """Every while instruction of the module, in text order."""
        if self._loops is None:
            self._loops = [i for c in self.module.computations.values() for i in c.instructions
                           if i.opcode == "while"]
        return self._loops

    @property
    def loop_of_body(self) -> dict[str, Instruction]:
        """Body computation name -> the while instruction that runs it (the first, if several)."""
        if self._loop_of_body is None:
            out: dict[str, Instruction] = {}
            for w in self.loops:
                out.setdefault(callee_name(w, "body"), w)
            self._loop_of_body = out
        return self._loop_of_body

    def loop_running(self, body: str, caller: str) -> Instruction | None:
        """The while instruction in ``caller`` whose body is ``body``."""
        for w in self.loops:
            if w.computation == caller and callee_name(w, "body") == body:
                return w
        return None

    @property
    def instructions_by_name(self) -> dict[str, Instruction]:
        """Instruction name -> instruction over all computations (the first, if a name repeats)."""
        if self._by_name is None:
            out: dict[str, Instruction] = {}
            for comp in self.module.computations.values():
                for ins in comp.instructions:
                    out.setdefault(ins.name, ins)
            self._by_name = out
        return self._by_name

    # -- async ops -----------------------------------------------------------

    def async_op(self, ins: Instruction) -> AsyncOp | None:
        """The async-wrapped op ``ins`` (its start, an update or its done) belongs to: what it wraps
        and which done ends it (:mod:`hloscope.analysis.structure.async_ops`); None for any other op."""
        if ins.opcode not in ASYNC_HALVES:
            return None
        key = (ins.computation, ins.name)
        if key not in self._async:
            got = find_async_op(self.module, self.users, ins)
            if got is not None:  # the whole chain answers alike
                for half in (got.start, *got.updates, *((got.done,) if got.done is not None else ())):
                    self._async[(half.computation, half.name)] = got
            self._async[key] = got
        return self._async[key]

    def wrapped_op(self, ins: Instruction) -> Instruction | None:
        """The op an async op (any half) or a fusion wraps: the root of the computation it runs."""
        if ins.opcode == "fusion":
            comp = wrapped_computation(self.module, ins)
            return comp.root if comp is not None else None
        op = self.async_op(ins)
        return op.wrapped if op is not None else None

    def done_of(self, start: Instruction) -> Instruction | None:
        """The done that ends ``start`` (an async start through its updates, a copy-start, a
        collective start, a send or recv); None when its computation holds none."""
        if start.opcode == "async-start":
            op = self.async_op(start)
            return op.done if op is not None else None
        return find_done(self.users, start)

    def core_op(self, ins: Instruction) -> Instruction:
        """The op doing the work of ``ins``: itself, or the innermost op its async and fusion wrappers run."""
        return find_core_op(self.module, ins)

    # -- whole-module structures --------------------------------------------

    @property
    def callgraph(self) -> CallGraph:
        if self._callgraph is None:
            self._callgraph = build_call_graph(self.module)
        return self._callgraph

    def executions(self, computation: str) -> int:
        """Runs per step of a scheduled computation (product of enclosing trip counts)."""
        return self.callgraph.executions.get(computation, 1)

    def is_scheduled_computation(self, computation: str) -> bool:
        return computation in self.callgraph.scheduled
