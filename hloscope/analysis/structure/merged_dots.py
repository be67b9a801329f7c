"""The name of one part of dots XLA merged, read from the operand the part was computed from.

XLA's DotMerger turns dots that share an operand (``h @ wq``, ``h @ wk``, ``h @ wv``) into one dot
of the shared operand and the others concatenated, and slices the result apart. From jax 0.12
every slice carries the first dot's source line, so the slice's frames name every part after the
first dot; the part's operand does not lie. :func:`merged_name` is data-flow naming's first
question (``hloscope.analysis.structure.transfer_names``): is the moved value such a part, and
whose is it?
"""

from __future__ import annotations

import re

from hloscope.analysis.structure.name_records import NameBook, NameRecord, same_file, unique
from hloscope.analysis.structure.value_flow import PASS, SAME_VALUE, Moved, ValueFlow, op_name_checkpoint, walk
from hloscope.hlo.model import Instruction, SourceLocation

#: What names a value: (the frame that named it, the name its ``op_name`` records, the name record).
Named = tuple[SourceLocation | None, str | None, NameRecord | None]


def merged_name(flow: ValueFlow, book: NameBook, t: Moved) -> Named | None:
    """The name of the part of merged dots the moved value is, when it is one (:func:`merged_part`),
    found before any frame is read: XLA gives the slices of merged dots, and the bitcasts and loop
    carries after them, the merged dot's frames, which name its first part whatever the slice
    takes.

    Each part is named by the operand it was computed from (:func:`part_name`); a part none
    names (an operand computed before the step's layer, such as the layer's input) takes the
    one name left when the others are named and the merged dot's own frames name one more.
    """
    for ins in walk(flow.moved(t), flow.same_value):
        if op_name_checkpoint(ins) is not None:
            return None  # a JAX that records the name: data flow reads it there
        found = merged_part(flow, ins)
        if found is None:
            continue
        picked, parts = found
        named = [part_name(flow, book, p) if p is not None else None for p in parts]
        if named[picked] is not None:
            return named[picked]
        if sum(n is None for n in named) != 1:
            return None
        taken = {n[2].name for n in named if n is not None and n[2] is not None}
        merged = [r for fr in flow.frames(ins) if (r := book.lookup(fr)) is not None]
        left = {r.name: r for r in merged if r.name not in taken}
        if len(left) != 1:
            return None
        [rec] = left.values()
        return rec.source, None, rec
    return None


def merged_part(flow: ValueFlow, ins: Instruction) -> tuple[int, list[Instruction | None]] | None:
    """When ``ins`` takes one part of the result of merged dots: (which part, the operand of the merged
    dot each part was computed from); else None.

    Read in the optimized HLO: a ``slice`` (alone or at the root of a fusion, under bitcasts and
    transposes) of a value computed, through casts, bitcasts, fusions and a split-K ``reduce``,
    by a ``dot`` one of whose operands is a ``concatenate`` (in the dot's fusion or one of its
    own). The slice's range along the dimension of the concatenated size must be exactly one
    concatenated operand's. XLA gives every slice the merged dot's metadata (from jax 0.12, the
    first dot's source line), so the slice's own frames do not tell the parts apart; the
    part's operand does.
    """
    sliced = _slice_of(flow, ins)
    if sliced is None:
        return None
    sl, source = sliced
    concat = _concatenated(flow, source)
    if concat is None:
        return None
    table = flow.table(concat)
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
    operand = flow.table(sl).get(sl.operands[0]) if sl.operands else None
    if operand is None:
        return None
    picked = {bounds.index(r) for d, r in enumerate(ranges) if r in bounds and d < len(operand.shape.dims)
              and operand.shape.dims[d] == bounds[-1][1] and r != (0, bounds[-1][1])}
    if len(picked) != 1:
        return None
    return picked.pop(), [_out_of_fusion(flow, table[o]) for o in concat.operands]


def part_name(flow: ValueFlow, book: NameBook, part: Instruction) -> Named | None:
    """The name of one part of merged dots, from the operand it was computed from: a checkpoint name
    its ``op_name`` records; the record whose dot multiplies the step argument it is (its pytree
    path, the entry parameter's ``op_name``: dots that shared their input); the record whose dot
    reads a value computed at the line of the first op on the way back that computes (its
    ``inputs``: dots that shared their weight). None when no name is unique."""
    for ins in walk([part], flow.same_value):
        recorded = op_name_checkpoint(ins)
        chain = flow.frames(ins)
        if recorded is not None:
            return (chain[0] if chain else None), recorded, None
        if ins.opcode == "parameter" and ins.computation == flow.module.entry_name:
            path = ins.metadata.get("op_name", "").replace("\\'", "'")
            rec = unique(r for r in book.records if path and path in r.weights)
            if rec is not None:
                return rec.source, None, rec
            continue  # an entry parameter is passed nothing: the walk takes no step from it
        if chain and ins.opcode not in PASS and ins.opcode not in SAME_VALUE:
            at = [f"{fr.file}:{fr.line}" for fr in chain]
            rec = unique(r for r in book.records for i in r.inputs
                         if any(same_file(a.rsplit(":", 1)[0], i.rsplit(":", 1)[0])
                                and a.rsplit(":", 1)[1] == i.rsplit(":", 1)[1] for a in at[:1]))
            return (chain[0], None, rec) if rec is not None else None
    return None


def _out_of_fusion(flow: ValueFlow, part: Instruction | None) -> Instruction | None:
    """The value a concatenated operand is, out of the fusion and past bitcasts and casts."""
    for _ in range(8):
        if part is None or part.opcode not in ("bitcast", "copy", "reshape", "transpose", "convert", "parameter") \
                or (part.computation == flow.module.entry_name and part.opcode == "parameter"):
            break
        part = flow.through(part, ("bitcast", "copy", "reshape", "transpose", "convert"))
    return part


def _slice_of(flow: ValueFlow, ins: Instruction) -> tuple[Instruction, Instruction] | None:
    """(the slice, the value it slices) when ``ins`` is a slice, or a fusion whose root is one (under
    bitcasts, transposes, copies) of the fusion's operand."""
    if ins.opcode == "slice" and ins.operands:
        operand = flow.table(ins).get(ins.operands[0])
        return (ins, operand) if operand is not None else None
    if ins.opcode != "fusion":
        return None
    node = flow.root(ins)
    while node is not None and node.opcode in ("bitcast", "transpose", "copy", "reshape") and node.operands:
        node = flow.table(node).get(node.operands[0])
    if node is None or node.opcode != "slice" or not node.operands:
        return None
    param = flow.table(node).get(node.operands[0])
    if param is None or param.opcode != "parameter":
        return None
    passed = flow.passed_in(param)
    return (node, passed[0]) if len(passed) == 1 else None


def _concatenated(flow: ValueFlow, value: Instruction) -> Instruction | None:
    """The ``concatenate`` operand of the dot that computed ``value`` (through casts, bitcasts,
    fusion roots and parameters, a split-K reduce); None when there is not exactly one."""
    todo, steps = [value], 0
    while todo and steps < 16:
        ins = todo.pop()
        steps += 1
        if ins.opcode == "dot":
            concats = [c for c in (_concat_operand(flow, flow.table(ins).get(o)) for o in ins.operands)
                       if c is not None]
            return concats[0] if len(concats) == 1 else None
        nxt = flow.through(ins, ("bitcast", "convert", "copy", "reshape", "transpose", "reduce"))
        if nxt is not None:
            todo.append(nxt)
    return None


def _concat_operand(flow: ValueFlow, node: Instruction | None) -> Instruction | None:
    """The ``concatenate`` a dot operand is, under bitcasts and reshapes, in a fusion of its own or not."""
    for _ in range(8):
        if node is None or node.opcode == "concatenate":
            return node
        node = flow.through(node, ("bitcast", "reshape", "transpose", "copy"))
    return None


def _slice_ranges(text: str) -> list[tuple[int, int]]:
    """``{[640:768], [0:256]}`` -> [(640, 768), (0, 256)] (a strided range is not one part: [])."""
    out = []
    for m in re.finditer(r"\[(\d+):(\d+)(:\d+)?\]", text):
        if m.group(3) and m.group(3) != ":1":
            return []
        out.append((int(m.group(1)), int(m.group(2))))
    return out

