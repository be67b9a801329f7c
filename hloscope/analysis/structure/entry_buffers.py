"""The step's arguments and outputs in host memory, and which output aliases which argument.

Pass (part of): ``find_entry_host_buffers(module, host_space) -> EntryHostBuffers``.

What the runtime hands a call is the entry computation's layout: the module header's
``entry_computation_layout={(ARGS)->RESULT}`` (the shapes with their ``S(n)`` memory spaces, as
the runtime lays the buffers out), and ``input_output_alias={ {OUT}: (PARAM, {PARAM_INDEX},
may-alias) ... }``: the outputs written into a donated argument's buffer. XLA prints the alias map
only when it is not empty, so a header with a layout and no alias map has no aliases. A module
without the layout (an HloProto's text here, a hand-written module) leaves the aliases unknown
(``aliases_known`` False); its buffers are then read from the entry's parameters and root.

Every array leaf of an argument or output is one buffer (a tuple argument's leaves, a tuple
result's elements). Facts only: :mod:`hloscope.analysis.host_call` prices them, render/ builds the words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hloscope.hlo.model import Module
from hloscope.hlo.shape import Shape, ShapeError, parse_shape

_ALIAS_RE = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}\s*(?:,\s*([\w-]+)\s*)?\)")


@dataclass(frozen=True)
class EntryBuffer:
    """One array the step takes or returns in host memory.

    output: True for a result, False for an argument. index: the parameter number (argument) or
    the tuple index of the result (output; 0 for a result that is not a tuple). leaf: the index
    path inside a tuple argument or tuple element (empty for an array). shape: its shape (with its
    layout). size_bytes: its bytes. name: the argument's ``op_name`` (``w[0]``, JAX's path of
    it), else the parameter's name; "" for an output (JAX does not name them in the module).
    aliased_with: for an output, the (parameter, leaf) whose buffer it is written into; for an
    argument, the output index written into it; None when nothing aliases it.
    """

    output: bool
    index: int
    leaf: tuple[int, ...]
    shape: Shape
    size_bytes: int
    name: str
    aliased_with: tuple[int, tuple[int, ...]] | int | None


@dataclass(frozen=True)
class EntryHostBuffers:
    """The step's host-memory (``S(host_space)``) arguments and outputs.

    arguments / outputs: the buffers, in parameter / result order. aliases_known: whether the
    module says which outputs alias which arguments (its header carries the entry layout).
    """

    arguments: tuple[EntryBuffer, ...]
    outputs: tuple[EntryBuffer, ...]
    aliases_known: bool

    @property
    def fresh_outputs(self) -> tuple[EntryBuffer, ...]:
        """Host outputs no argument's buffer is reused for: new host buffers every call."""
        return tuple(b for b in self.outputs if b.aliased_with is None)


def parse_aliases(text: str) -> dict[int, tuple[int, tuple[int, ...]]]:
    """``input_output_alias``'s map: output tuple index (its first) -> (parameter, leaf path)."""
    out: dict[int, tuple[int, tuple[int, ...]]] = {}
    for m in _ALIAS_RE.finditer(text):
        where = [int(x) for x in m.group(1).replace(" ", "").split(",") if x]
        leaf = tuple(int(x) for x in m.group(3).replace(" ", "").split(",") if x)
        out[where[0] if where else 0] = (int(m.group(2)), leaf)
    return out


def _layout_shapes(text: str) -> tuple[tuple[Shape, ...], Shape] | None:
    """``entry_computation_layout``'s (argument shapes, result shape), or None when unreadable."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1].strip()
    depth = 0
    for i, ch in enumerate(body):
        depth += ch in "({["
        depth -= ch in ")}]"
        if depth == 0 and body.startswith("->", i):
            try:
                args, result = parse_shape(body[:i].strip()), parse_shape(body[i + 2:].strip())
            except ShapeError:
                return None
            return (args.tuple_shapes if args.is_tuple else (args,)), result
    return None


def _leaves(shape: Shape, path: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], Shape]]:
    if not shape.is_tuple:
        return [(path, shape)]
    return [leaf for i, s in enumerate(shape.tuple_shapes) for leaf in _leaves(s, (*path, i))]


def find_entry_host_buffers(module: Module, host_space: int) -> EntryHostBuffers:
    """The entry's arguments and outputs that live in memory space ``host_space``, with their aliases."""
    entry = module.entry
    params = {int(i.literal): i for i in entry.instructions if i.opcode == "parameter" and i.literal.isdigit()}
    layout = _layout_shapes(module.attrs.get("entry_computation_layout", ""))
    if layout is not None:
        arg_shapes, result = layout
    else:
        arg_shapes = tuple(params[k].shape for k in sorted(params))
        result = entry.root.shape if entry.root is not None else Shape("tuple")
    aliases = parse_aliases(module.attrs.get("input_output_alias", ""))
    by_param = {(p, leaf): out for out, (p, leaf) in aliases.items()}
    args: list[EntryBuffer] = []
    for k, shape in enumerate(arg_shapes):
        ins = params.get(k)
        name = (ins.metadata.get("op_name", "").strip('"') or ins.name) if ins is not None else f"parameter {k}"
        for leaf, s in _leaves(shape):
            if s.memory_space == host_space and s.byte_size:
                args.append(EntryBuffer(False, k, leaf, s, s.byte_size, name, by_param.get((k, leaf))))
    elements = result.tuple_shapes if result.is_tuple else (result,)
    outs: list[EntryBuffer] = []
    for k, element in enumerate(elements):
        for leaf, s in _leaves(element):
            if s.memory_space == host_space and s.byte_size:
                outs.append(EntryBuffer(True, k, leaf, s, s.byte_size, "", aliases.get(k)))
    return EntryHostBuffers(tuple(args), tuple(outs), layout is not None)
