"""Where a value comes from: one bounded walk back through the HLO, and the steps it takes.

- :func:`walk`: the one breadth-first walk every name search makes (data flow to a name, to the
  producer's line, to the writer of a host buffer, to a reader of an argument): each instruction
  once, at most ``_MAX_STEPS`` of them, the next ones given by a step function read after the
  caller has looked at the instruction (a caller that stops early expands nothing more).
- :class:`ValueFlow`: the steps: what a tuple element was made from, what a parameter was passed,
  where an op that only moves a value took it from (:meth:`ValueFlow.same_value`), every input
  (:meth:`ValueFlow.inputs`), the value a transfer moves (:meth:`ValueFlow.moved`), and each
  instruction's stack frames, read once.
- :func:`frames`, :func:`op_name_checkpoint`: what an instruction's metadata says (its stack
  trace; the checkpoint name a JAX that keeps it records in ``op_name``).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Protocol

from hloscope.analysis.kinds import Direction
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.opclass import SAME_VALUE as KEEPS_VALUE
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


#: Opcodes walked through towards the producer when only a source line is wanted (no records).
PASS = frozenset({"bitcast", "copy", "convert", "reshape", "transpose", "get-tuple-element", "copy-start",
                  "copy-done", "async-done", "async-start", "custom-call", "fusion", "dynamic-update-slice",
                  "dynamic-slice", "opt-barrier", "tuple", "parameter", "while"})
#: Ops whose result is their operand 0's value, moved or re-laid out (data flow walks through them).
SAME_VALUE = KEEPS_VALUE | frozenset({
    "transpose", "bitcast-convert", "reduce-precision", "slice", "dynamic-slice", "all-gather", "all-gather-start",
    "all-gather-done", "all-reduce", "all-reduce-start", "all-reduce-done", "all-to-all", "reduce-scatter",
    "collective-permute", "collective-permute-start", "collective-permute-done", "send", "recv-done"})
#: Collectives that XLA's combiners give several operands and a tuple of results, one per operand.
_COMBINED = frozenset({"all-gather", "all-reduce", "reduce-scatter", "all-to-all"})
#: Custom calls that only place or annotate a value.
_PLACING = frozenset({"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "LayoutConstraint",
                      "annotate_device_placement", "MoveToHost", "MoveToDevice"})
_OP_NAME = re.compile(r"(?:checkpoint_name|/name)\[(?:name=)?([A-Za-z0-9_.\-]+)\]")
#: How many instructions one walk looks at, at most.
_MAX_STEPS = 200
_FRAME_ID = re.compile(r"[{ ]stack_frame_id=(\d+)")


def walk(start: Iterable[Instruction], step: Callable[[Instruction], Iterable[Instruction]]) -> Iterator[Instruction]:
    """Breadth first from ``start``: each instruction once (by computation and name), at most
    ``_MAX_STEPS``; after the caller has looked at one, ``step`` gives the next ones."""
    queue = deque(start)
    seen: set[tuple[str, str]] = set()
    while queue and len(seen) < _MAX_STEPS:
        ins = queue.popleft()
        key = (ins.computation, ins.name)
        if key in seen:
            continue
        seen.add(key)
        yield ins
        queue.extend(step(ins))


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


class ValueFlow:
    """The steps of a walk back through one module's values (and each instruction's frames, once)."""

    def __init__(self, index: ModuleIndex) -> None:
        self.index = index
        self.module = index.module
        self._frames: dict[tuple[str, str], list[SourceLocation]] = {}
        self._chains: dict[int, tuple[SourceLocation, ...]] = {}
        self._caller_map: dict[str, list[Instruction]] | None = None

    def frames(self, ins: Instruction) -> list[SourceLocation]:
        """:func:`frames`, once per instruction (transfers share producers)."""
        key = (ins.computation, ins.name)
        got = self._frames.get(key)
        if got is None:
            got = self._frames[key] = frames(self.module, ins, self._chains)
        return got

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

    def table(self, ins: Instruction) -> Mapping[str, Instruction]:
        """The instructions of ``ins``'s computation, by name."""
        return self.module.computations[ins.computation].by_name

    def root(self, ins: Instruction) -> Instruction | None:
        """The root of the first computation ``ins`` calls."""
        for c in ins.called_computations[:1]:
            comp = self.module.computations.get(c)
            if comp is not None:
                return comp.root
        return None

    def element(self, ins: Instruction, idx: int) -> list[Instruction]:
        """What element ``idx`` of the tuple value ``ins`` was made from."""
        table = self.table(ins)
        op = ins.opcode
        if op == "tuple":
            return [table[ins.operands[idx]]] if idx < len(ins.operands) else []
        if op == "while":
            body = self.index.while_body(ins)
            root = body.root if body is not None else None
            return self.element(root, idx) if root is not None else []
        if op == "parameter":
            return [e for caller in self.callers().get(ins.computation, [])
                    for o in caller.operands[:1] if caller.opcode == "while"
                    for e in self.element(self.module.computations[caller.computation].by_name[o], idx)]
        if op in ("fusion", "call") or (op == "async-done" and ins.operands):
            start = table[ins.operands[0]] if op == "async-done" else ins
            root = self.root(start)
            return self.element(root, idx) if root is not None else []
        if op in ("opt-barrier", "optimization-barrier") and ins.operands:
            return self.element(table[ins.operands[0]], idx)
        if op in _COMBINED and ins.shape.is_tuple and idx < len(ins.operands):
            return [table[ins.operands[idx]]]  # collectives XLA combined: element i is operand i's
        if op.endswith("-done") and ins.operands:  # a native async collective: element i of operand i
            start = table[ins.operands[0]]
            return [table[start.operands[idx]]] if idx < len(start.operands) else []
        return [ins]

    def inputs(self, ins: Instruction) -> list[Instruction]:
        """The instructions ``ins`` reads: its operands, a fused/async body's root, a
        tuple element's source, a parameter's value in the caller (the walk for a source line)."""
        table = self.table(ins)
        if ins.opcode == "dynamic-update-slice" and len(ins.operands) > 1:
            return [table[ins.operands[1]]]
        if ins.opcode == "get-tuple-element" and ins.operands:
            return self.element(table[ins.operands[0]], ins.tuple_index)
        if ins.opcode == "parameter":
            return self.passed_in(ins)
        out = [table[o] for o in ins.operands if o in table]
        if ins.opcode not in ("while", "conditional"):
            root = self.root(ins)
            if root is not None:
                out.insert(0, root)
        return out

    def passed_in(self, param: Instruction) -> list[Instruction]:
        """A parameter's value in each caller that is not a loop (a fusion, an async op, a call)."""
        number = int(param.literal) if param.literal.strip().isdigit() else 0
        return [self.module.computations[c.computation].by_name[c.operands[number]]
                for c in self.callers().get(param.computation, [])
                if c.opcode != "while" and number < len(c.operands)]

    def same_value(self, ins: Instruction) -> list[Instruction]:
        """Where the value of ``ins`` comes from, when ``ins`` only passes it on or moves it; []
        for an op that computes something else (data flow stops there)."""
        op = ins.opcode
        table = self.table(ins)
        if op == "get-tuple-element" and ins.operands:
            return self.element(table[ins.operands[0]], ins.tuple_index)
        if op == "parameter":
            return self.passed_in(ins)
        if op == "dynamic-update-slice" and len(ins.operands) > 1:
            return [table[ins.operands[1]]]
        if op in ("fusion", "call", "async-start"):
            root = self.root(ins)
            return [root] if root is not None else []
        if op == "async-done" and ins.operands:
            return [table[ins.operands[0]]]
        if op in SAME_VALUE or (op == "custom-call" and ins.attr("custom_call_target").strip('"') in _PLACING):
            return [table[ins.operands[0]]] if ins.operands and ins.operands[0] in table else []
        return []

    def through(self, ins: Instruction, ops: Collection[str]) -> Instruction | None:
        """One step back from ``ins`` when it only carries a value on: a fusion to its root, a fused or
        called computation's parameter to the caller's operand, one of ``ops`` to its operand 0."""
        if ins.opcode == "fusion":
            return self.root(ins)
        if ins.opcode == "parameter" and ins.computation != self.module.entry_name:
            passed = self.passed_in(ins)
            return passed[0] if len(passed) == 1 else None
        if ins.opcode in ops and ins.operands:
            return self.table(ins).get(ins.operands[0])
        return None

    def moved(self, t: Moved) -> list[Instruction]:
        """The device-side value a to-host transfer (or an annotation) moves; a to-device one's host buffer."""
        ins = t.instruction
        table = self.table(ins)
        if ins.opcode in ("async-start", "fusion"):
            # the op doing the work, through every wrapper (an async start, a GPU fusion-start's fusion)
            root = self.index.core_op(ins) if self.root(ins) is not None else None
            if root is not None and root.opcode == "dynamic-update-slice" and len(root.operands) > 1:
                update = self.table(root).get(root.operands[1])
                # out through each wrapper's parameter to the value the start itself is given
                for _ in range(4):
                    if update is None or update.opcode != "parameter" or update.computation == ins.computation:
                        break
                    outer = self.passed_in(update)
                    if len(outer) != 1:
                        return outer
                    update = outer[0]
                return [update] if update is not None else []
            return [root] if root is not None else []
        if ins.opcode == "dynamic-update-slice" and len(ins.operands) > 1:
            return [table[ins.operands[1]]]
        if t.direction is Direction.TO_DEVICE:  # the host buffer it reads: back to what was written there
            return [table[o] for o in ins.operands[:1] if o in table]
        return [table[o] for o in ins.operands[:1] if o in table and table[o].shape.memory_space != t.host_space]
