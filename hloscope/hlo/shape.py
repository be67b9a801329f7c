"""HLO shapes: element type, dimensions, layout and memory space, with byte sizes.

``parse_shape`` accepts the textual shapes XLA prints (``bf16[4,8]{1,0:S(5)}``,
tuples, ``/*index=N*/`` comments, tiled layouts, dynamic dims ``<=N`` / ``?``)
and returns an interned, immutable :class:`Shape`. Sizes are in bytes; a
dynamic dimension counts at its bound. Results are cached by text, because a
large module repeats the same few hundred shapes many thousands of times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

#: Pinned host memory in XLA GPU layouts.
HOST_MEMORY_SPACE = 5

# Bits per element of each primitive type XLA prints.
_ELEMENT_BITS: dict[str, int] = {
    "pred": 8, "s1": 1, "u1": 1, "s2": 2, "u2": 2, "s4": 4, "u4": 4,
    "s8": 8, "u8": 8, "s16": 16, "u16": 16, "s32": 32, "u32": 32, "s64": 64, "u64": 64,
    "f16": 16, "bf16": 16, "f32": 32, "f64": 64, "c64": 64, "c128": 128,
    "f4e2m1fn": 4, "f8e3m4": 8, "f8e4m3": 8, "f8e4m3fn": 8, "f8e4m3b11fnuz": 8,
    "f8e4m3fnuz": 8, "f8e5m2": 8, "f8e5m2fnuz": 8, "f8e8m0fnu": 8, "f6e2m3fn": 6, "f6e3m2fn": 6,
    "tf32": 32, "token": 0, "opaque": 0,
}


class ShapeError(ValueError):
    """Raised with the 0-based offset into the shape text that could not be read."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True, slots=True)
class Shape:
    """An array shape or a tuple of shapes.

    element_type: primitive type name (``bf16``), or ``"tuple"``.
    dims: dimension sizes (bounds for dynamic dims); empty for scalars and tuples.
    dynamic: per-dimension flag, True where the dimension is ``<=N`` or ``?``.
    layout: the text inside ``{...}`` after the dims, or "" when absent.
    memory_space: the ``S(n)`` of the layout; 0 (device) when absent.
    tuple_shapes: element shapes when ``element_type == "tuple"``.
    """

    element_type: str
    dims: tuple[int, ...] = ()
    dynamic: tuple[bool, ...] = ()
    layout: str = ""
    memory_space: int = 0
    tuple_shapes: tuple[Shape, ...] = ()

    @property
    def is_tuple(self) -> bool:
        return self.element_type == "tuple"

    @property
    def num_elements(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def byte_size(self) -> int:
        """Bytes of this array (sum over leaves for a tuple; pointers not counted)."""
        if self.is_tuple:
            return sum(s.byte_size for s in self.tuple_shapes)
        bits = _ELEMENT_BITS.get(self.element_type, 0)
        return (self.num_elements * bits + 7) // 8

    def leaves(self) -> tuple[Shape, ...]:
        if not self.is_tuple:
            return (self,)
        out: list[Shape] = []
        for s in self.tuple_shapes:
            out.extend(s.leaves())
        return tuple(out)

    def in_memory_space(self, space: int) -> bool:
        """True if this array, or any leaf of this tuple, lives in ``space``."""
        if self.element_type != "tuple":
            return self.memory_space == space
        return any(s.in_memory_space(space) for s in self.tuple_shapes)

    def tuple_element(self, index: int) -> Shape | None:
        if self.is_tuple and 0 <= index < len(self.tuple_shapes):
            return self.tuple_shapes[index]
        return None

    def __str__(self) -> str:
        if self.is_tuple:
            return "(" + ", ".join(str(s) for s in self.tuple_shapes) + ")"
        dims = ",".join(("<=" if dyn else "") + str(d) for d, dyn in zip(self.dims, self.dynamic, strict=True))
        lay = "{" + self.layout + "}" if self.layout else ""
        return f"{self.element_type}[{dims}]{lay}"


_ARRAY_RE = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\]")
_SPACE_RE = re.compile(r"S\((\d+)\)")


def _parse_at(text: str, pos: int) -> tuple[Shape, int]:
    n = len(text)
    while pos < n and text[pos] == " ":
        pos += 1
    if pos >= n:
        raise ShapeError("expected a shape", pos)
    if text[pos] == "(":
        pos += 1
        elems: list[Shape] = []
        while True:
            while pos < n and text[pos] in " ,":
                pos += 1
            if text.startswith("/*", pos):
                end = text.find("*/", pos)
                if end < 0:
                    raise ShapeError("unterminated comment", pos)
                pos = end + 2
                continue
            if pos < n and text[pos] == ")":
                return Shape("tuple", tuple_shapes=tuple(elems)), pos + 1
            if pos >= n:
                raise ShapeError("unterminated tuple shape", pos)
            elem, pos = _parse_at(text, pos)
            elems.append(elem)
    m = _ARRAY_RE.match(text, pos)
    if m is None:
        raise ShapeError("expected a shape like f32[4,8]{1,0}", pos)
    etype = m.group(1)
    if etype not in _ELEMENT_BITS:
        raise ShapeError(f"unknown element type '{etype}'", pos)
    dims: list[int] = []
    dyn: list[bool] = []
    body = m.group(2).strip()
    if body:
        for part in body.split(","):
            part = part.strip()
            is_dyn = part.startswith("<=") or part == "?"
            digits = part[2:] if part.startswith("<=") else part
            if digits == "?":
                digits = "0"
            if not (digits.isascii() and digits.isdigit()):
                raise ShapeError(f"bad dimension '{part[:20]}'", m.start(2))
            if len(digits) > 19 or int(digits) >= 1 << 63:  # XLA's dimensions are int64
                raise ShapeError(f"dimension '{part[:20]}' does not fit in 64 bits", m.start(2))
            dims.append(int(digits))
            dyn.append(is_dyn)
    pos = m.end()
    layout = ""
    if pos < n and text[pos] == "{":
        depth = 0
        start = pos
        while pos < n:
            c = text[pos]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            pos += 1
        if pos >= n:
            raise ShapeError("unterminated layout", start)
        layout = text[start + 1 : pos]
        pos += 1
    space = 0
    if ":" in layout:
        sm = _SPACE_RE.search(layout, layout.index(":"))
        if sm:
            space = int(sm.group(1))
    return Shape(etype, tuple(dims), tuple(dyn), layout, space), pos


@lru_cache(maxsize=65536)
def parse_shape(text: str) -> Shape:
    """Parse one complete shape. Raises :class:`ShapeError` on malformed text."""
    shape, end = _parse_at(text, 0)
    rest = text[end:].strip()
    if rest:
        raise ShapeError(f"unexpected '{rest[:20]}' after shape", end)
    return shape


def shape_span(text: str, pos: int) -> int:
    """End offset of the shape that starts at ``pos`` in ``text`` (no parsing)."""
    if text[pos] != "(":
        end = text.find(" ", pos)
        return len(text) if end < 0 else end
    depth = 0
    i = pos
    n = len(text)
    while i < n:
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i)
            if j < 0:
                break
            i = j + 1
        i += 1
    raise ShapeError("unterminated tuple shape", pos)

