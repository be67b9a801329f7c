"""The protobuf wire format, read without a protobuf library: varints, fixed 32/64, length-delimited.

Contract: :func:`fields` walks one message's bytes and yields ``(field number, wire type,
value)``: an ``int`` for varint and fixed fields, a ``memoryview`` slice (no copy) for
length-delimited ones. What a field *means* is the caller's business (field numbers come
from the ``.proto`` files, facts read there; none is vendored). Malformed bytes raise
:class:`WireError` with the byte offset where reading failed: a truncated message, a
varint of more than ten bytes, a length past the end, a group or a wire type that does not
exist. Unknown fields are yielded like known ones, so newer writers' additions are skipped
by the caller, as protobuf does.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

VARINT, FIXED64, LEN, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5


class WireError(ValueError):
    """Bytes that are not a protobuf message; ``offset`` is where reading failed (0-based)."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    """(value, next offset) of the varint at ``pos``."""
    result = 0
    shift = 0
    n = len(buf)
    start = pos
    while True:
        if pos >= n:
            raise WireError("message ends inside a varint (truncated?)", start)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise WireError("varint longer than 10 bytes", start)


def fields(data: bytes | memoryview, base: int = 0) -> Iterator[tuple[int, int, int | memoryview]]:
    """Each field of one message, in wire order. ``base`` is added to offsets in errors
    (the message's place in the outer buffer)."""
    buf = memoryview(data)
    pos = 0
    n = len(buf)
    while pos < n:
        tag_at = pos
        # A one-byte tag and a one-byte varint are by far the most common: read them inline.
        b = buf[pos]
        if b < 0x80:
            key = b
            pos += 1
        else:
            key, pos = read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError("field number 0 (not a protobuf message)", base + tag_at)
        if wire == VARINT:
            if pos < n and buf[pos] < 0x80:
                yield number, wire, buf[pos]
                pos += 1
            else:
                try:
                    v, pos = read_varint(buf, pos)
                except WireError as e:
                    raise WireError(str(e), base + e.offset) from None
                yield number, wire, v
        elif wire == LEN:
            try:
                length, pos = read_varint(buf, pos)
            except WireError as e:
                raise WireError(str(e), base + e.offset) from None
            end = pos + length
            if end > n:
                raise WireError(f"field {number}: length {length} runs past the end of the message (truncated?)",
                                base + tag_at)
            yield number, wire, buf[pos:end]
            pos = end
        elif wire == FIXED64:
            if pos + 8 > n:
                raise WireError(f"field {number}: message ends inside a 64-bit value (truncated?)", base + tag_at)
            yield number, wire, int.from_bytes(buf[pos:pos + 8], "little")
            pos += 8
        elif wire == FIXED32:
            if pos + 4 > n:
                raise WireError(f"field {number}: message ends inside a 32-bit value (truncated?)", base + tag_at)
            yield number, wire, int.from_bytes(buf[pos:pos + 4], "little")
            pos += 4
        else:
            raise WireError(f"field {number}: wire type {wire} (groups are not used by these messages)",
                            base + tag_at)


def signed64(v: int) -> int:
    """An ``int64`` field's value (negative numbers are ten-byte varints)."""
    return v - (1 << 64) if v >= 1 << 63 else v


def packed_ints(wire: int, value: int | memoryview) -> list[int]:
    """A repeated integer field's values: one unpacked element, or a packed run."""
    if wire == VARINT:
        assert isinstance(value, int)
        return [signed64(value)]
    if wire != LEN or isinstance(value, int):
        raise WireError(f"a repeated integer field has wire type {wire}", 0)
    out: list[int] = []
    pos = 0
    n = len(value)
    while pos < n:
        b = value[pos]
        if b < 0x80:
            out.append(b)
            pos += 1
        else:
            v, pos = read_varint(value, pos)
            out.append(signed64(v))
    return out


def as_double(wire: int, value: int | memoryview) -> float:
    """A ``double`` field (FIXED64) or a ``float`` field (FIXED32)."""
    if wire == FIXED64 and isinstance(value, int):
        return float(struct.unpack("<d", value.to_bytes(8, "little"))[0])
    if wire == FIXED32 and isinstance(value, int):
        return float(struct.unpack("<f", value.to_bytes(4, "little"))[0])
    raise WireError(f"a floating-point field has wire type {wire}", 0)


def as_text(value: int | memoryview) -> str:
    """A ``string`` field (UTF-8; an undecodable byte becomes U+FFFD, never an error)."""
    if isinstance(value, int):
        raise WireError("a string field holds a varint", 0)
    return bytes(value).decode("utf-8", errors="replace")


def as_bytes(value: int | memoryview) -> memoryview:
    """A ``bytes`` or sub-message field."""
    if isinstance(value, int):
        raise WireError("a message field holds a varint", 0)
    return value
