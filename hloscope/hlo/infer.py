"""Result shapes for instructions written without one (``x = get-tuple-element(t), index=0``).

XLA's parser infers the shape where the text leaves it out; hloscope does the
same for the opcodes hand-written modules use: tuple access and construction,
element-wise operations, compare, select, clamp, after-all, dot, calls
(the called computation's root) and ``while`` (its operand's shape, which the
loop carries from iteration to iteration). Contract: :func:`infer_shape` returns the
shape, or None when it cannot be inferred from what is given (the caller
reports that as a parse error); :func:`resolve_shapes` infers those a parsed module left out,
in dependency order. An inferred array shape has XLA's default
layout, written as no layout (memory space 0), as XLA assigns it; a tuple
element keeps its layout.
"""

from __future__ import annotations

from hloscope.hlo.attributes import AttributeError_, parse_attribute_list
from hloscope.hlo.model import Instruction, Module
from hloscope.hlo.shape import Shape

_UNARY = frozenset({
    "abs", "negate", "tanh", "copy", "sqrt", "rsqrt", "cbrt", "exponential", "exponential-minus-one",
    "log", "log-plus-one", "logistic", "sine", "cosine", "tan", "floor", "ceil", "sign", "not",
    "round-nearest-afz", "round-nearest-even", "popcnt", "count-leading-zeros", "erf", "reduce-precision",
    "opt-barrier", "cholesky",
})
_BINARY = frozenset({
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "remainder", "and", "or",
    "xor", "shift-left", "shift-right-arithmetic", "shift-right-logical", "atan2",
})
#: Opcodes whose shape is the root shape of the computation they call.
CALLING = frozenset({"call", "conditional"})


def _array_like(shape: Shape, element_type: str | None = None) -> Shape:
    return Shape(element_type or shape.element_type, shape.dims, shape.dynamic)


def _dims(value: str) -> list[int] | None:
    body = value.strip().strip("{}").strip()
    if not body:
        return []
    parts = [p.strip() for p in body.split(",")]
    return [int(p) for p in parts] if all(p.isdigit() for p in parts) else None


def _dot(lhs: Shape, rhs: Shape, attrs: dict[str, str]) -> Shape | None:
    lb, lc = _dims(attrs.get("lhs_batch_dims", "")), _dims(attrs.get("lhs_contracting_dims", ""))
    rb, rc = _dims(attrs.get("rhs_batch_dims", "")), _dims(attrs.get("rhs_contracting_dims", ""))
    if lb is None or lc is None or rb is None or rc is None or lhs.is_tuple or rhs.is_tuple:
        return None
    if any(d >= len(lhs.dims) for d in lb + lc) or any(d >= len(rhs.dims) for d in rb + rc):
        return None
    keep_l = [d for d in range(len(lhs.dims)) if d not in lb and d not in lc]
    keep_r = [d for d in range(len(rhs.dims)) if d not in rb and d not in rc]
    dims = [lhs.dims[d] for d in lb] + [lhs.dims[d] for d in keep_l] + [rhs.dims[d] for d in keep_r]
    dyn = [lhs.dynamic[d] for d in lb] + [lhs.dynamic[d] for d in keep_l] + [rhs.dynamic[d] for d in keep_r]
    return Shape(lhs.element_type, tuple(dims), tuple(dyn))


def infer_shape(opcode: str, operands: list[Shape], attr_text: str, called_roots: list[Shape]) -> Shape | None:
    """The result shape of ``opcode`` applied to ``operands``, or None.

    called_roots: root shapes of the computations the instruction calls, in
    attribute order (used by ``call`` and ``conditional``).
    """
    if opcode == "tuple":
        return Shape("tuple", tuple_shapes=tuple(operands))
    if opcode == "after-all":
        return Shape("token")
    if opcode in CALLING:
        return called_roots[0] if called_roots else None
    if not operands:
        return None
    first = operands[0]
    if opcode == "while":
        return first
    if opcode == "get-tuple-element":
        try:
            index = parse_attribute_list(attr_text).get("index", "")
        except AttributeError_:
            return None
        return first.tuple_element(int(index)) if index.isdigit() else None
    if first.is_tuple and opcode != "opt-barrier":
        return None
    if opcode == "opt-barrier":
        return first
    if opcode in _UNARY or opcode in _BINARY:
        return _array_like(first)
    if opcode == "compare":
        return _array_like(first, "pred")
    if opcode in ("select", "clamp") and len(operands) >= 2 and not operands[1].is_tuple:
        return _array_like(operands[1])
    if opcode == "dot" and len(operands) >= 2:
        try:
            attrs = parse_attribute_list(attr_text)
        except AttributeError_:
            return None
        return _dot(first, operands[1], attrs)
    return None


def resolve_shapes(module: Module, pending: list[tuple[Instruction, int]],
                   placeholder: Shape) -> tuple[str, int] | None:
    """Give each instruction of ``pending`` (its shape ``placeholder``, with the offset an error about it
    points at) its inferred shape, in as many rounds as shapes depend on shapes still left out;
    (message, offset) for the first that cannot be inferred, None once all are."""
    while pending:
        left: list[tuple[Instruction, int]] = []
        for ins, off in pending:
            comp = module.computations[ins.computation]
            shapes = [comp.by_name[o].shape for o in ins.operands]
            roots: list[Shape] = []
            if ins.opcode in CALLING:
                for callee in ins.called_computations:
                    called = module.computations.get(callee)
                    root = called.root if called is not None else None
                    if root is not None:
                        roots.append(root.shape)
            if any(s is placeholder for s in shapes + roots):
                left.append((ins, off))
                continue
            shape = infer_shape(ins.opcode, shapes, ins.attr_text, roots)
            if shape is None:
                return (f"cannot infer the result shape of '{ins.name}' ({ins.text_opcode}); "
                        "write it before the opcode", off)
            ins.shape = shape
        if len(left) == len(pending):
            ins, off = left[0]
            return f"cannot infer the result shape of '{ins.name}': it depends on itself", off
        pending = left
    return None
