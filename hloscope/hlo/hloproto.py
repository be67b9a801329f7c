"""Read a serialized ``HloProto`` / ``HloModuleProto`` (``*.hlo.pb``, ``.hlo.pb.xz``) into the model.

Contract: :func:`parse_hlo_proto` takes the bytes of an ``HloProto`` (XLA's dump
``*.hlo.pb``: field 1 the module, field 3 its buffer assignment), a bare
``HloModuleProto`` (``compiled.as_serialized_hlo_module_proto()``) or an
``HloSnapshot``, and returns the same :class:`~hloscope.hlo.model.Module` the text
parser builds for the module's text. It does so by writing the module in XLA's text
form (instructions in ``HloScheduleProto`` order where the module has a schedule, which
is what the text printer does) and handing that to the text parser: one model, one set
of checks. Attributes the analyses read are written in the printer's spelling (calls,
``index``, ``dimensions``, ``slice``, replica groups in both forms, ``channel_id``,
``custom_call_target``, ``backend_config``, ``metadata``, ``frontend_attributes``,
control predecessors, dot dimensions); others (shardings, windows, literals of arrays)
are left out. The debug sections come from ``stack_frame_index``. Field numbers are
those of XLA's ``xla/service/hlo.proto`` and ``xla/xla_data.proto``.

Malformed bytes are one :class:`~hloscope.errors.HloscopeError` naming the file and the
byte offset (exit 2). ``.xz`` input is read with :mod:`lzma`.
"""

from __future__ import annotations

import json
import lzma
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.model import Module
from hloscope.hlo.parser import parse_hlo
from hloscope.hlo.protowire import (
    FIXED32,
    LEN,
    VARINT,
    WireError,
    as_bytes,
    as_double,
    as_text,
    fields,
    packed_ints,
    signed64,
)

__all__ = ["ProtoText", "hlo_proto_to_text", "looks_like_hlo_proto", "parse_hlo_proto", "read_maybe_xz"]

#: xla_data.proto PrimitiveType -> the name the text uses.
_PRIMITIVE = {
    1: "pred", 2: "s8", 3: "s16", 4: "s32", 5: "s64", 6: "u8", 7: "u16", 8: "u32", 9: "u64", 10: "f16",
    11: "f32", 12: "f64", 13: "tuple", 14: "opaque", 15: "c64", 16: "bf16", 17: "token", 18: "c128",
    19: "f8e5m2", 20: "f8e4m3fn", 21: "s4", 22: "u4", 23: "f8e4m3b11fnuz", 24: "f8e5m2fnuz", 25: "f8e4m3fnuz",
    26: "s2", 27: "u2", 28: "f8e4m3", 29: "f8e3m4", 30: "s1", 31: "u1", 32: "f4e2m1fn", 33: "f8e8m0fnu",
}
_XZ_MAGIC = b"\xfd7zXZ\x00"


def read_maybe_xz(data: bytes, source: str) -> bytes:
    """``data``, decompressed when it is an xz stream."""
    if not data.startswith(_XZ_MAGIC):
        return data
    try:
        return lzma.decompress(data)
    except lzma.LZMAError as e:
        raise HloscopeError(f"{source}: a broken .xz stream ({e}); is the file truncated?", EXIT_BAD_INPUT) from None


def looks_like_hlo_proto(data: bytes) -> bool:
    """True when ``data`` opens like a serialized HloProto or HloModuleProto (or is xz)."""
    if data.startswith(_XZ_MAGIC):
        return True
    # HloModuleProto starts with field 1 (name, a string) or HloProto with field 1 (the
    # module, a message): either way the first byte is tag 0x0A.
    return len(data) > 2 and data[0] == 0x0A


@dataclass
class _Ins:
    name: str = ""
    opcode: str = ""
    shape: str = ""
    id: int = 0
    operand_ids: list[int] = field(default_factory=list)
    control_ids: list[int] = field(default_factory=list)
    called_ids: list[int] = field(default_factory=list)
    attrs: list[str] = field(default_factory=list)
    literal: str = ""
    parameter_number: int = 0
    tuple_index: int = 0
    dimensions: list[int] = field(default_factory=list)


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _ints(xs: Iterable[int]) -> str:
    return "{" + ",".join(str(x) for x in xs) + "}"


class _Reader:
    def __init__(self) -> None:
        self.shape_cache: dict[bytes, str] = {}

    # -- shapes -------------------------------------------------------------------
    def shape(self, buf: memoryview) -> str:
        key = bytes(buf)
        got = self.shape_cache.get(key)
        if got is None:
            got = self.shape_cache[key] = self._shape(buf)
        return got

    def _shape(self, buf: memoryview) -> str:
        etype = 0
        dims: list[int] = []
        dynamic: list[int] = []
        tuples: list[str] = []
        layout = ""
        has_layout = False
        for n, w, v in fields(buf):
            if n == 2:
                etype = int(v) if isinstance(v, int) else 0
            elif n == 3:
                dims += packed_ints(w, v)
            elif n == 4:
                tuples.append(self.shape(as_bytes(v)))
            elif n == 5:
                layout = self._layout(as_bytes(v))
                has_layout = True
            elif n == 6:
                dynamic += packed_ints(w, v)
        name = _PRIMITIVE.get(etype)
        if name is None:
            raise WireError(f"unknown element type {etype} in a shape", 0)
        if name == "tuple":
            return "(" + ", ".join(tuples) + ")"
        shown = ",".join(("<=" if i < len(dynamic) and dynamic[i] else "") + str(d) for i, d in enumerate(dims))
        return f"{name}[{shown}]" + ("{" + layout + "}" if has_layout and (dims or ":" in layout) else "")

    @staticmethod
    def _layout(buf: memoryview) -> str:
        m2m: list[int] = []
        tiles: list[str] = []
        bits = 0
        space = 0
        for n, w, v in fields(buf):
            if n == 1:
                m2m += packed_ints(w, v)
            elif n == 6:
                tdims: list[int] = []
                for tn, tw, tv in fields(as_bytes(v)):
                    if tn == 1:
                        tdims += packed_ints(tw, tv)
                tiles.append("(" + ",".join("*" if d == -9223372036854775808 else str(d) for d in tdims) + ")")
            elif n == 7 and isinstance(v, int):
                bits = v
            elif n == 8 and isinstance(v, int):
                space = v
        extra = ("T" + "".join(tiles) if tiles else "") + (f"E({bits})" if bits else "") + \
            (f"S({space})" if space else "")
        return ",".join(str(x) for x in m2m) + (":" + extra if extra else "")

    # -- instructions ---------------------------------------------------------------
    def instruction(self, buf: memoryview) -> _Ins:
        ins = _Ins()
        attrs = ins.attrs
        dot: dict[int, list[int]] = {}
        slices: list[tuple[int, int, int]] = []
        groups: list[str] = []  # replica groups, explicit (field 49)
        pairs: list[str] = []  # source_target_pairs
        for n, w, v in fields(buf):
            if n == 1:
                ins.name = as_text(v)
            elif n == 2:
                ins.opcode = as_text(v)
            elif n == 3:
                ins.shape = self.shape(as_bytes(v))
            elif n == 35 and isinstance(v, int):
                ins.id = signed64(v)
            elif n == 36:
                ins.operand_ids += packed_ints(w, v)
            elif n == 37:
                ins.control_ids += packed_ints(w, v)
            elif n == 38:
                ins.called_ids += packed_ints(w, v)
            elif n == 9 and isinstance(v, int):
                ins.parameter_number = v
            elif n == 13 and isinstance(v, int):
                ins.tuple_index = v
            elif n == 14:
                ins.dimensions += packed_ints(w, v)
            elif n == 8:
                ins.literal = self._literal(as_bytes(v))
            elif n == 11:
                attrs.append(f"kind={as_text(v)}")
            elif n == 17:
                s = {1: 0, 2: 0, 3: 1}
                for sn, _sw, sv in fields(as_bytes(v)):
                    if isinstance(sv, int):
                        s[sn] = signed64(sv)
                slices.append((s[1], s[2], s[3]))
            elif n == 20:
                attrs.append(f"dynamic_slice_sizes={_ints(packed_ints(w, v))}")
            elif n == 26 and isinstance(v, int) and v:
                attrs.append(f"channel_id={v}")
            elif n == 28:
                attrs.append(f'custom_call_target="{_escape(as_text(v))}"')
            elif n == 30:
                for dn, dw, dv in fields(as_bytes(v)):
                    dot.setdefault(dn, []).extend(packed_ints(dw, dv))
            elif n == 63:
                attrs.append(f"direction={as_text(v)}")
            elif n == 49:
                groups.append(self._group(as_bytes(v)))
            elif n == 87:
                attrs.append("replica_groups=" + self._device_list(as_bytes(v)))
            elif n == 93:
                attrs.append("replica_groups=" + _mesh_groups(as_bytes(v)))
            elif n == 71 and v:
                attrs.append("use_global_device_ids=true")
            elif n == 47 and v:
                attrs.append("is_host_transfer=true")
            elif n == 52:
                pair = {1: 0, 2: 0}
                for pn, _pw, pv in fields(as_bytes(v)):
                    if isinstance(pv, int):
                        pair[pn] = signed64(pv)
                pairs.append(f"{{{pair[1]},{pair[2]}}}")
            elif n == 79:
                thread = as_text(v)
                if thread and thread != "main":
                    attrs.append(f'async_execution_thread="{_escape(thread)}"')
            elif n == 43:
                cfg = bytes(as_bytes(v)).decode("utf-8", errors="replace")
                if cfg:
                    attrs.append("backend_config=" + _backend_config(cfg))
            elif n == 7:
                md = self._metadata(as_bytes(v))
                if md:
                    attrs.append("metadata={" + md + "}")
            elif n == 68:
                fa = _frontend_attributes(as_bytes(v))
                if fa:
                    attrs.append("frontend_attributes=" + fa)
            elif n == 80 and isinstance(v, int):
                attrs.append(f"cross_program_prefetch_index={v}")
        if groups:
            attrs.append("replica_groups={" + ",".join(groups) + "}")
        if pairs:
            attrs.append("source_target_pairs={" + ",".join(pairs) + "}")
        if slices:
            attrs.append("slice={" + ", ".join(
                f"[{a}:{b}" + (f":{c}]" if c != 1 else "]") for a, b, c in slices) + "}")
        for key, num in (("lhs_batch_dims", 3), ("lhs_contracting_dims", 1), ("rhs_batch_dims", 4),
                         ("rhs_contracting_dims", 2)):
            if dot.get(num):
                attrs.append(f"{key}={_ints(dot[num])}")
        return ins

    @staticmethod
    def _group(buf: memoryview) -> str:
        ids: list[int] = []
        for n, w, v in fields(buf):
            if n == 1:
                ids += packed_ints(w, v)
        return _ints(ids)

    def _device_list(self, buf: memoryview) -> str:
        groups: list[str] = []
        iota = ""
        for n, _w, v in fields(buf):
            if n == 1:
                groups.append(self._group(as_bytes(v)))
            elif n == 2:
                iota = _iota_list(as_bytes(v))
        return iota or "{" + ",".join(groups) + "}"

    @staticmethod
    def _metadata(buf: memoryview) -> str:
        parts: list[str] = []
        for n, _w, v in fields(buf):
            if n == 1:
                parts.append(f'op_type="{_escape(as_text(v))}"')
            elif n == 2:
                parts.append(f'op_name="{_escape(as_text(v))}"')
            elif n == 3:
                parts.append(f'source_file="{_escape(as_text(v))}"')
            elif n == 4 and isinstance(v, int):
                parts.append(f"source_line={signed64(v)}")
            elif n == 12:
                parts.append(f'deduplicated_name="{_escape(as_text(v))}"')
            elif n == 15 and isinstance(v, int):
                parts.append(f"stack_frame_id={v}")
            elif n == 16:
                parts.append(f'scheduling_name="{_escape(as_text(v))}"')
        return " ".join(parts)

    def _literal(self, buf: memoryview) -> str:
        shape = ""
        values: list[str] = []
        for n, w, v in fields(buf):
            if n == 1:
                shape = self.shape(as_bytes(v))
            elif n == 2:
                values += ["true" if x else "false" for x in packed_ints(w, v)]
            elif n in (4, 5, 6, 7):
                values += [str(x) for x in packed_ints(w, v)]
            elif n in (8, 9):
                values += _floats(w, v, 4 if n == 8 else 8)
        if shape.endswith("[]") and len(values) == 1:
            return values[0]
        return "{...}"


def _floats(wire: int, value: int | memoryview, width: int) -> list[str]:
    if wire == LEN and not isinstance(value, int):
        kind = FIXED32 if width == 4 else 1
        raw = bytes(value)
        return [_num(as_double(kind, int.from_bytes(raw[i:i + width], "little")))
                for i in range(0, len(raw) - width + 1, width)]
    return [_num(as_double(wire, value))]


def _num(x: float) -> str:
    if x != x:
        return "nan"
    if x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


def _mesh_groups(buf: memoryview) -> str:
    """Replica groups as mesh axes (field 93): ``mesh['a'=8,'b'=1] {'a'}``, as the printer writes them."""
    axes: list[tuple[str, int]] = []
    chosen: list[int] = []
    for n, _w, v in fields(buf):
        if n == 1:
            for an, _aw, av in fields(as_bytes(v)):
                if an == 1:
                    name, size = "", 0
                    for xn, _xw, xv in fields(as_bytes(av)):
                        if xn == 1:
                            name = as_text(xv)
                        elif xn == 2 and isinstance(xv, int):
                            size = xv
                    axes.append((name, size))
        elif n == 2:
            index = 0
            for rn, _rw, rv in fields(as_bytes(v)):
                if rn == 1 and isinstance(rv, int):
                    index = rv
            chosen.append(index)
    mesh = ",".join(f"'{a}'={size}" for a, size in axes)
    picked = ",".join(f"'{axes[i][0]}'" for i in chosen if 0 <= i < len(axes))
    return f"mesh[{mesh}] {{{picked}}}"


def _iota_list(buf: memoryview) -> str:
    groups = per = 0
    reshape: list[int] = []
    perm: list[int] = []
    for n, w, v in fields(buf):
        if n == 1 and isinstance(v, int):
            groups = v
        elif n == 2 and isinstance(v, int):
            per = v
        elif n == 3:
            reshape += packed_ints(w, v)
        elif n == 4:
            perm += packed_ints(w, v)
    out = f"[{groups},{per}]<=[{','.join(str(d) for d in reshape)}]"
    if perm and perm != sorted(perm):
        out += "T(" + ",".join(str(p) for p in perm) + ")"
    return out


def _frontend_attributes(buf: memoryview) -> str:
    items: list[str] = []
    for n, _w, v in fields(buf):
        if n != 1:
            continue
        key = val = ""
        for en, _ew, ev in fields(as_bytes(v)):
            if en == 1:
                key = as_text(ev)
            elif en == 2:
                val = as_text(ev)
        items.append(f'{key}="{_escape(val)}"')
    return "{" + ",".join(items) + "}" if items else ""


def _backend_config(cfg: str) -> str:
    """JSON as the printer writes it (bare braces); anything else as a quoted string."""
    try:
        parsed = json.loads(cfg)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return json.dumps(parsed, separators=(",", ":"))
    return f'"{_escape(cfg)}"'


def _called_attrs(opcode: str, names: list[str]) -> list[str]:
    if not names:
        return []
    ref = ["%" + n for n in names]
    if opcode == "while" and len(ref) == 2:
        return [f"condition={ref[1]}", f"body={ref[0]}"]  # called_computations: body, then condition
    if opcode == "conditional":
        return ["branch_computations={" + ", ".join(ref) + "}"]
    if opcode == "select-and-scatter" and len(ref) == 2:
        return [f"select={ref[0]}", f"scatter={ref[1]}"]
    if opcode == "custom-call":
        return ["called_computations={" + ", ".join(ref) + "}"]
    if opcode in ("fusion", "call", "async-start", "async-update", "async-done") or opcode.endswith("-start"):
        return [f"calls={ref[0]}" if len(ref) == 1 else "calls={" + ", ".join(ref) + "}"]
    return [f"to_apply={ref[0]}"]


def _module_bytes(buf: memoryview, depth: int = 0) -> memoryview:
    """The HloModuleProto inside an HloProto or HloSnapshot (field 1 of each), or ``buf`` itself.

    A module's field 1 is its name, text; a wrapper's field 1 is a message, whose first byte is
    a tag (0x0A), never a character of a name."""
    for n, w, v in fields(buf):
        if n == 1 and w == LEN:
            inner = as_bytes(v)
            if depth < 2 and _NAME_RE.fullmatch(bytes(inner)) is None:
                return _module_bytes(inner, depth + 1)
            return buf
    return buf


_NAME_RE = re.compile(rb"[A-Za-z0-9_.\-]*")


@dataclass(frozen=True)
class ProtoText:
    """A module proto written as text. sections: the debug sections (``files``, ``functions``,
    ``locations``, ``frames``, keyed by 1-based ids). async_wrapped: the name of each op a
    sugared async start wraps (what XLA names its thunk) -> the start's name."""

    text: str
    sections: dict[str, dict[int, object]]
    async_wrapped: dict[str, str]


def hlo_proto_to_text(data: bytes, source: str = "<proto>") -> ProtoText:
    """The module's HLO text, with its debug sections."""
    try:
        return _to_text(memoryview(data))
    except WireError as e:
        raise HloscopeError(f"{source}: not a readable HloProto: byte {e.offset}: {e}", EXIT_BAD_INPUT) from None


def _to_text(buf: memoryview) -> ProtoText:
    reader = _Reader()
    mod = _module_bytes(buf)
    name = "module"
    entry_id = -1
    entry_name = ""
    comps: list[tuple[int, str, list[_Ins], int]] = []  # id, name, instructions, root id
    schedule: dict[int, list[int]] = {}
    partitions = 0
    sections: dict[str, dict[int, object]] = {}
    for n, _w, v in fields(mod):
        if n == 1:
            name = as_text(v)
        elif n == 2:
            entry_name = as_text(v)
        elif n == 6 and isinstance(v, int):
            entry_id = signed64(v)
        elif n == 3:
            comps.append(_computation(reader, as_bytes(v)))
        elif n == 7:
            schedule = _schedule(as_bytes(v))
        elif n == 15:
            for dn, _dw, dv in fields(as_bytes(v)):
                if dn == 2 and isinstance(dv, int):
                    partitions = dv
        elif n == 17:
            sections = _stack_frames(as_bytes(v))
    if not comps:
        raise WireError("no computations (is this an HloProto or HloModuleProto?)", 0)
    names = {cid: cname for cid, cname, _, _ in comps}
    by_id = {i.id: i.name for _, _, instrs, _ in comps for i in instrs}
    _link_async_halves(comps)
    sugar = _sugared(comps)
    callers: dict[int, list[_Ins]] = {}
    for _, _, instrs, _ in comps:
        for i in instrs:
            for c in i.called_ids:
                callers.setdefault(c, []).append(i)
    # A sugared async op's computation is not printed (the printer writes the op inline).
    hidden = {cid for cid in sugar if all(_is_async(i.opcode) and i.called_ids[:1] == [cid]
                                          for i in callers.get(cid, []))}
    wrapped = {sugar[cid].name: i.name for cid in hidden for i in callers.get(cid, []) if i.opcode == "async-start"}
    header = [f"HloModule {name}"]
    if schedule:
        header.append("is_scheduled=true")
    if partitions > 1:
        header.append(f"num_partitions={partitions}")
    lines = [", ".join(header), ""]
    for cid, cname, instrs, root_id in comps:
        if cid in hidden:
            continue
        is_entry = cid == entry_id or (entry_id < 0 and cname == entry_name)
        order = schedule.get(cid)
        if order is not None and len(order) == len(instrs):
            pos = {iid: k for k, iid in enumerate(order)}
            if all(i.id in pos for i in instrs):
                instrs = sorted(instrs, key=lambda i: pos[i.id])
        lines.append(("ENTRY " if is_entry else "") + f"%{cname} {{")
        for i in instrs:
            inner = sugar.get(i.called_ids[0]) if _is_async(i.opcode) and i.called_ids else None
            lines.append("  " + _line(i, i.id == root_id, by_id, names, inner if i.called_ids[:1] and
                                      i.called_ids[0] in hidden else None))
        lines.append("}")
        lines.append("")
    return ProtoText("\n".join(lines), sections, wrapped)


def _link_async_halves(comps: list[tuple[int, str, list[_Ins], int]]) -> None:
    """Give an async update or done that lists no called computation (newer XLA) its start's."""
    ins = {i.id: i for _, _, instrs, _ in comps for i in instrs}
    for _, _, instrs, _ in comps:
        for i in instrs:
            if i.opcode in ("async-update", "async-done") and not i.called_ids:
                prev = ins.get(i.operand_ids[0]) if i.operand_ids else None
                while prev is not None and not prev.called_ids and prev.opcode == "async-update" and prev.operand_ids:
                    prev = ins.get(prev.operand_ids[0])
                if prev is not None and _is_async(prev.opcode) and prev.called_ids:
                    i.called_ids = prev.called_ids[:1]


def _is_async(opcode: str) -> bool:
    return opcode in ("async-start", "async-update", "async-done")


def _sugared(comps: list[tuple[int, str, list[_Ins], int]]) -> dict[int, _Ins]:
    """Computation id -> its root, for computations the printer writes inline as ``op-start``:
    parameters and one op on them, in order (XLA's ``CanExpandIntoSingleInstruction``)."""
    out: dict[int, _Ins] = {}
    for cid, _, instrs, root_id in comps:
        ops = [i for i in instrs if i.opcode != "parameter"]
        if len(ops) != 1 or ops[0].id != root_id:
            continue
        params = {i.id: i.parameter_number for i in instrs if i.opcode == "parameter"}
        if [params.get(o) for o in ops[0].operand_ids] == list(range(len(params))):
            out[cid] = ops[0]
    return out


_OWN_ATTRS = ("metadata=", "backend_config=", "frontend_attributes=", "async_execution_thread=")


def _line(i: _Ins, root: bool, by_id: dict[int, str], comps: dict[int, str], inner: _Ins | None = None) -> str:
    """One instruction's text; ``inner``: the op a sugared async op wraps (its attributes are written)."""
    if i.opcode == "parameter":
        inside = str(i.parameter_number)
    elif i.opcode == "constant":
        inside = i.literal or "{...}"
    else:
        inside = ", ".join("%" + by_id[o] if o in by_id else f"%<missing id {o}>" for o in i.operand_ids)
    opcode = i.opcode
    if inner is not None:
        opcode = inner.opcode + i.opcode.removeprefix("async")
        # The start carries the wrapped op's attributes; an update or done only its own.
        own = [a for a in _attrs(inner, comps) if not a.startswith(_OWN_ATTRS)] if i.opcode == "async-start" else []
        attrs = own + i.attrs
    else:
        attrs = _attrs(i, comps)
    if i.control_ids:
        attrs.append("control-predecessors={" + ", ".join("%" + by_id.get(c, "?") for c in i.control_ids) + "}")
    tail = (", " + ", ".join(attrs)) if attrs else ""
    return f"{'ROOT ' if root else ''}%{i.name} = {i.shape} {opcode}({inside}){tail}"


def _attrs(i: _Ins, comps: dict[int, str]) -> list[str]:
    attrs: list[str] = []
    if i.opcode == "get-tuple-element":
        attrs.append(f"index={i.tuple_index}")
    elif i.opcode == "iota" and i.dimensions:
        attrs.append(f"iota_dimension={i.dimensions[0]}")
    elif i.dimensions or i.opcode == "broadcast":  # the printer writes a scalar's broadcast as dimensions={}
        attrs.append(f"dimensions={_ints(i.dimensions)}")
    attrs += _called_attrs(i.opcode, [comps.get(c, f"<missing computation {c}>") for c in i.called_ids])
    return attrs + i.attrs


def _computation(reader: _Reader, buf: memoryview) -> tuple[int, str, list[_Ins], int]:
    cid = root = 0
    cname = ""
    instrs: list[_Ins] = []
    for n, _w, v in fields(buf):
        if n == 1:
            cname = as_text(v)
        elif n == 2:
            instrs.append(reader.instruction(as_bytes(v)))
        elif n == 5 and isinstance(v, int):
            cid = signed64(v)
        elif n == 6 and isinstance(v, int):
            root = signed64(v)
    return cid, cname, instrs, root


def _schedule(buf: memoryview) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for n, _w, v in fields(buf):
        if n != 1:
            continue
        key = 0
        ids: list[int] = []
        for en, _ew, ev in fields(as_bytes(v)):
            if en == 1 and isinstance(ev, int):
                key = signed64(ev)
            elif en == 2:
                for sn, sw, sv in fields(as_bytes(ev)):
                    if sn == 1:
                        ids += packed_ints(sw, sv)
        out[key] = ids
    return out


def _stack_frames(buf: memoryview) -> dict[str, dict[int, object]]:
    files: dict[int, object] = {}
    funcs: dict[int, object] = {}
    locs: dict[int, object] = {}
    frames: dict[int, object] = {}
    for n, _w, v in fields(buf):
        if n == 1:
            files[len(files) + 1] = as_text(v)
        elif n == 2:
            funcs[len(funcs) + 1] = as_text(v)
        elif n == 3:
            f = {1: 0, 2: 0, 3: 0, 4: 0}
            for fn, fw, fv in fields(as_bytes(v)):
                if fw == VARINT and isinstance(fv, int):
                    f[fn] = signed64(fv)
            locs[len(locs) + 1] = (f[1], f[2], f[3], f[4])
        elif n == 4:
            f = {1: 0, 2: 0}
            for fn, fw, fv in fields(as_bytes(v)):
                if fw == VARINT and isinstance(fv, int):
                    f[fn] = signed64(fv)
            frames[len(frames) + 1] = (f[1], f[2])
    return {"files": files, "functions": funcs, "locations": locs, "frames": frames}


def parse_hlo_proto(data: bytes, source: str = "<proto>") -> Module:
    """The model of a serialized HloProto / HloModuleProto / HloSnapshot (xz or not)."""
    raw = read_maybe_xz(data, source)
    if not raw:
        raise HloscopeError(f"{source}: empty file; expected an HloProto", EXIT_BAD_INPUT)
    got = hlo_proto_to_text(raw, source)
    sections = got.sections
    module = parse_hlo(got.text, source)
    module.async_wrapped = got.async_wrapped
    module.file_names = {k: str(v) for k, v in sections.get("files", {}).items()}
    module.function_names = {k: str(v) for k, v in sections.get("functions", {}).items()}
    module.file_locations = {k: v for k, v in sections.get("locations", {}).items()
                             if isinstance(v, tuple)}
    module.stack_frames = {k: v for k, v in sections.get("frames", {}).items()
                           if isinstance(v, tuple)}
    return module
