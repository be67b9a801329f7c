"""Match every async done with its start, also across while-loop iterations.

Pass: ``pair_async_ops(index) -> list[AsyncPair]`` (``index``: the module's :class:`ModuleIndex`).

A done's operand is normally its start. With pipelined offloading the start's
context is threaded through a while loop's tuple: the done then reads a
``get-tuple-element`` of the loop parameter (start in the previous iteration or
in a peeled prologue) or of the while result (start in the last iteration).
Tracing follows tuples, get-tuple-element, while parameters (back to the init
operand *and* the body's root tuple) and while results, and marks such pairs as
crossing a loop iteration. One done can match several starts (prologue and loop).
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.kinds import PairKind
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.opclass import collective_kind, is_done, is_start
from hloscope.hlo.model import Instruction


@dataclass(frozen=True)
class AsyncPair:
    """start/done: the two instructions. kind: ``collective`` or ``other``
    (host transfers are marked later). op: the wrapped op or collective name.
    crosses_iteration: the context went through a while loop's tuple.
    """

    start: Instruction
    done: Instruction
    op: str
    kind: PairKind
    crosses_iteration: bool


def trace_to_starts(index: ModuleIndex, comp: str, name: str) -> list[tuple[Instruction, bool]]:
    """Starts whose context reaches value ``name`` of computation ``comp``."""
    module, cg = index.module, index.callgraph
    found: dict[tuple[str, str], bool] = {}
    seen: set[tuple[str, str, tuple[int, ...]]] = set()
    stack: list[tuple[str, str, tuple[int, ...], bool]] = [(comp, name, (), False)]
    while stack:
        c, n, path, crossed = stack.pop()
        key = (c, n, path)
        if key in seen or len(seen) > 10000:
            continue
        seen.add(key)
        computation = module.computations.get(c)
        if computation is None or n not in computation.by_name:
            continue
        ins = computation.by_name[n]
        op = ins.opcode
        if not path and is_start(ins):
            found[(c, n)] = found.get((c, n), False) or crossed
        elif op == "async-update" and not path and ins.operands:
            stack.append((c, ins.operands[0], (), crossed))
        elif op == "get-tuple-element" and ins.operands:
            stack.append((c, ins.operands[0], (ins.tuple_index, *path), crossed))
        elif op == "tuple" and path:
            if path[0] < len(ins.operands):
                stack.append((c, ins.operands[path[0]], path[1:], crossed))
        elif op == "opt-barrier" and ins.operands:
            stack.append((c, ins.operands[0], path, crossed))
        elif op == "parameter":
            for caller, call in cg.callers.get(c, []):
                if call.opcode == "while" and call.operands:
                    stack.append((caller, call.operands[0], path, True))
                    body = index.while_body(call)
                    if body is not None and body.name == c and body.root is not None:
                        stack.append((c, body.root.name, path, True))
                elif call.opcode == "call":
                    idx = int(ins.literal or 0)
                    if idx < len(call.operands):
                        stack.append((caller, call.operands[idx], path, crossed))
        elif op == "while":
            loop_body = index.while_body(ins)
            if loop_body is not None and loop_body.root is not None:
                stack.append((loop_body.name, loop_body.root.name, path, True))
        elif op == "call":
            for callee in ins.called_computations:
                callee_comp = module.computations.get(callee)
                if callee_comp is not None and callee_comp.root is not None:
                    stack.append((callee, callee_comp.root.name, path, crossed))
    return [(module.computations[c].by_name[n], x) for (c, n), x in found.items()]


def pair_async_ops(index: ModuleIndex) -> list[AsyncPair]:
    module, cg = index.module, index.callgraph
    pairs: list[AsyncPair] = []
    for cname in module.computations:
        if cname not in cg.scheduled:
            continue
        for ins in module.computations[cname].instructions:
            if not is_done(ins) or not ins.operands:
                continue
            for start, crossed in trace_to_starts(index, cname, ins.operands[0]):
                coll = collective_kind(start)
                kind = PairKind.COLLECTIVE if coll else PairKind.OTHER
                op = coll or start.wrapped_opcode or start.opcode.removesuffix("-start")
                pairs.append(AsyncPair(start, ins, op, kind, crossed))
    return pairs
