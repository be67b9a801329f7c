"""The numbers of a module held to what the module can hold, before any pass sizes anything by them.

A pass that keeps one entry per parameter number, per tuple element or per device
allocates what the text says: ``parameter(1099511627776)`` in a fusion of two parameters
once ran the analysis for 40 s and past 24 GB. XLA refuses such modules (``HloComputation``
takes parameter numbers 0..n-1, each once; its verifier takes a tuple index below the
tuple's arity), so hloscope refuses them too, in one pass over the instructions, when the
module is parsed (:func:`hloscope.hlo.parser.parse_hlo`; an HloProto is parsed through it).
Checked: every operand defined above its user (a cycle in the data flow, such as an
instruction that is its own operand, would loop any pass that follows operands); every
parameter number against the count of its computation's parameters (in range, each
once); every get-tuple-element index against its tuple operand's arity; the module's
device counts (``replica_count``, ``num_partitions``) and the devices an iota or mesh
replica group spans against :data:`MAX_DEVICES`, and an iota group's reshape and
transpose against each other (docs/parser.md, "Numbers bounded by the module"). Contract:
returns None, or raises one :class:`HloParseError` at the instruction's line (the header's
for its counts) and the number's column.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hloscope.errors import HloParseError
from hloscope.hlo.model import Computation, Instruction, Module

#: More devices than any machine XLA compiles for holds (the largest TPU pod has 9,216 chips;
#: a multislice run or a GPU cluster some 10^5): a count past it is a damaged module.
MAX_DEVICES = 1 << 20
_IOTA_RE = re.compile(r"replica_groups=\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?")
_MESH_RE = re.compile(r"replica_groups=mesh\[([^\]]*)\]")
_MESH_AXIS_RE = re.compile(r"'[^']*'=(\d+)")

#: Builds the error for an instruction: (instruction, message, the text to point the column at).
_Fail = Callable[[Instruction, str, str], HloParseError]


def check_bounds(module: Module, text: str, path: str | None = None) -> None:
    """Raise :class:`HloParseError` for the first number the module cannot hold (``path``: the file, for errors)."""
    lines: list[str] | None = None

    def fail(ins: Instruction, message: str, needle: str) -> HloParseError:
        nonlocal lines
        if lines is None:
            lines = text.split("\n")
        line = lines[ins.line - 1] if 0 < ins.line <= len(lines) else ""
        at = line.find(needle, line.find("=") + 1)  # after the name: an operand may be spelt as its user is
        return HloParseError(message, ins.line, at + 1 if at >= 0 else 1, ins.path)

    _check_header(module, text, path)
    for comp in module.computations.values():
        _check_parameters(comp, fail)
        defined: set[str] = set()
        for ins in comp.instructions:
            late = next((o for o in ins.operands if o not in defined), None)
            if late is not None:  # a cycle in the data flow would loop any pass that follows operands
                raise fail(ins, f"'{ins.name}' takes '{late}' before it is defined: XLA reads an operand "
                                "defined above its user", f"%{late}" if f"%{late}" in text else late)
            defined.add(ins.name)
            if ins.opcode == "get-tuple-element":
                _check_tuple_index(comp, ins, fail)
            elif "replica_groups=" in ins.attr_text:
                _check_groups(ins, fail)


def _check_header(module: Module, text: str, path: str | None) -> None:
    for key in ("replica_count", "num_partitions"):
        written = module.attrs.get(key)
        if written is None:
            continue
        if written.isdecimal() and 1 <= int(written[:20]) <= MAX_DEVICES:
            continue
        at = text.find(f"{key}={written}")
        line = text.count("\n", 0, at) + 1 if at >= 0 else 1
        column = at - text.rfind("\n", 0, at) if at >= 0 else 1
        shown = written if len(written) <= 24 else written[:21] + "..."
        raise HloParseError(f"the module's {key}={shown}: a count of devices from 1 to {MAX_DEVICES:,}",
                            line, column, path)


def _check_parameters(comp: Computation, fail: _Fail) -> None:
    params = [ins for ins in comp.instructions if ins.opcode == "parameter"]
    count = len(params)
    seen: dict[int, str] = {}
    for ins in params:
        written = ins.literal.strip()
        number = int(written) if written.isdecimal() and len(written) < 20 else -1
        if not 0 <= number < count:
            shown = written if len(written) <= 24 else written[:21] + "..."
            raise fail(ins, f"'{ins.name}' is parameter({shown}), but computation '{comp.name}' has {count} "
                            f"parameter{'' if count == 1 else 's'}: XLA numbers them 0 to {count - 1}, each once",
                       f"parameter({written[:8]}")
        if number in seen:
            raise fail(ins, f"'{ins.name}' is parameter({number}), as '{seen[number]}' is: XLA numbers a "
                            "computation's parameters 0 to n-1, each once", f"parameter({written}")
        seen[number] = ins.name


def _check_tuple_index(comp: Computation, ins: Instruction, fail: _Fail) -> None:
    operand = comp.by_name.get(ins.operands[0]) if ins.operands else None
    if operand is None or not operand.shape.is_tuple:
        return
    arity = len(operand.shape.tuple_shapes)
    index = ins.tuple_index
    if not 0 <= index < arity:
        raise fail(ins, f"'{ins.name}' takes element {index} of '{operand.name}', a tuple of {arity} "
                        f"element{'' if arity == 1 else 's'}", "index=")


def _check_groups(ins: Instruction, fail: _Fail) -> None:
    m = _IOTA_RE.search(ins.attr_text)
    if m is not None:
        groups, size = int(m.group(1)[:20]), int(m.group(2)[:20])
        dims = [int(d[:20]) for d in m.group(3).split(",") if d]
        total = 1
        for d in dims:
            total *= d
        perm = sorted(int(p[:20]) for p in m.group(4).split(",") if p) if m.group(4) else None
        if total > MAX_DEVICES or groups * size != total or (perm is not None and perm != list(range(len(dims)))):
            raise fail(ins, f"'{ins.name}': replica_groups {m.group(0).removeprefix('replica_groups=')[:60]} "
                            f"is not {groups} groups of {size} of at most {MAX_DEVICES:,} devices in an iota "
                            "reshaped and transposed to its dimensions", "replica_groups=")
        return
    m = _MESH_RE.search(ins.attr_text)
    if m is not None:
        total = 1
        for size in _MESH_AXIS_RE.findall(m.group(1)):
            total *= int(size[:20])
        if total > MAX_DEVICES:
            raise fail(ins, f"'{ins.name}': replica_groups over a mesh of {total:,} devices, past "
                            f"{MAX_DEVICES:,}", "replica_groups=")
