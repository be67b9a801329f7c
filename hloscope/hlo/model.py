"""The typed model of an HLO module that the parser builds and analyses read.

Contract: a :class:`Module` holds computations callees first, in one order that
does not depend on how XLA printed them (:mod:`hloscope.hlo.async_sugar`); each
:class:`Computation` holds its instructions in text order, which for a
scheduled module (``is_scheduled=true``) *is* the schedule. ``position`` is the
0-based index in that order. Opcodes are canonical XLA opcodes: an async-wrapped
op has one shape whichever printing it came from (the sugared
``fusion-start`` is an ``async-start`` calling a computation whose root is the
fusion, with ``wrapped_opcode="fusion"``, as the dump's ``async-start`` is),
and ``text_opcode`` keeps what the text said. Attributes are kept as raw text and
parsed on first access, so unknown attributes from newer XLA survive untouched.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from hloscope.errors import HloParseError
from hloscope.hlo.attributes import AttributeError_, parse_attribute_list, parse_braced_map
from hloscope.hlo.shape import Shape


class Instruction:
    """One HLO instruction.

    name: instruction name without the leading ``%``.
    opcode: canonical opcode (``async-start``, ``copy-start``, ``fusion`` ...).
    text_opcode: opcode as written (``fusion-start``).
    wrapped_opcode: for an async start, update or done, the op it wraps (``fusion``), however
        it was printed; else "".
    shape: result shape.
    operands: operand instruction names, in order.
    literal: the text inside the parentheses for ``parameter``/``constant``/``iota`` etc.
    attr_text: raw attribute text after the operand list (no leading comma).
    is_root: marked ROOT.
    line: 1-based line number in the source text.
    position: 0-based index within its computation (the schedule order).
    computation: name of the enclosing computation.
    """

    __slots__ = (
        "name", "opcode", "text_opcode", "wrapped_opcode", "shape", "operands", "literal",
        "attr_text", "is_root", "line", "position", "computation", "_attrs", "_called", "attr_column", "path",
    )

    def __init__(
        self, name: str, opcode: str, text_opcode: str, wrapped_opcode: str, shape: Shape,
        operands: tuple[str, ...], literal: str, attr_text: str, is_root: bool, line: int,
        position: int, computation: str,
    ) -> None:
        self.name = name
        self.opcode = opcode
        self.text_opcode = text_opcode
        self.wrapped_opcode = wrapped_opcode
        self.shape = shape
        self.operands = operands
        self.literal = literal
        self.attr_text = attr_text
        self.is_root = is_root
        self.line = line
        self.position = position
        self.computation = computation
        self._attrs: dict[str, str] | None = None
        self._called: tuple[str, ...] | None = None
        self.attr_column = 0  # 1-based column where attr_text starts (for errors)
        self.path: str | None = None  # source file, for errors found after parsing

    def __repr__(self) -> str:
        return f"Instruction({self.name!r}, {self.opcode!r}, line={self.line})"

    @property
    def attrs(self) -> dict[str, str]:
        """Attribute name to raw value text (``calls`` -> ``%f``); parsed lazily."""
        if self._attrs is None:
            try:
                self._attrs = parse_attribute_list(self.attr_text) if self.attr_text else {}
            except AttributeError_ as e:
                # Attributes are split lazily; misnested brackets surface here.
                raise HloParseError(str(e), self.line, self.attr_column + e.offset, self.path) from None
        return self._attrs

    def attr(self, key: str, default: str = "") -> str:
        if self.attr_text and key not in self.attr_text:
            return default
        return self.attrs.get(key, default)

    @property
    def called_computations(self) -> tuple[str, ...]:
        """Computations this instruction calls, via any of XLA's call attributes."""
        if self._called is None:
            self._called = _called_computations(self)
        return self._called

    @property
    def tuple_index(self) -> int:
        """``index=`` of a get-tuple-element (0 when absent)."""
        m = _INDEX_RE.search(self.attr_text)
        return int(m.group(1)) if m else 0

    @property
    def control_predecessors(self) -> tuple[str, ...]:
        v = self.attr("control-predecessors")
        return tuple(_name_list(v)) if v else ()

    @property
    def backend_config(self) -> dict[str, Any]:
        """``backend_config`` as JSON; {} when absent or not JSON (older proto text)."""
        v = self.attr("backend_config")
        if not v:
            return {}
        if v.startswith('"') and v.endswith('"'):
            v = json.loads(v)
        try:
            parsed = json.loads(v)
        except (ValueError, TypeError):
            return {}
        return parsed if isinstance(parsed, dict) else {}

    @property
    def metadata(self) -> dict[str, str]:
        v = self.attr("metadata")
        return parse_braced_map(v) if v else {}

    @property
    def frontend_attributes(self) -> dict[str, str]:
        v = self.attr("frontend_attributes")
        return parse_braced_map(v) if v else {}

    @property
    def known_trip_count(self) -> int | None:
        """``known_trip_count.n`` from a while loop's backend_config, if XLA proved it."""
        if "known_trip_count" not in self.attr_text:
            return None
        n = self.backend_config.get("known_trip_count", {}).get("n")
        return int(n) if n is not None else None


_CALL_KEYS = ("calls", "to_apply", "condition", "body", "branch_computations", "true_computation",
              "false_computation")
_CALL_RE = re.compile(r"(?:^|, )(" + "|".join(_CALL_KEYS) + r")=(\{[^}]*\}|%?[^\s,{}]+)")
_CALL_TAIL_RE = re.compile(r", (?:" + "|".join(_CALL_KEYS) + r")=")
_INDEX_RE = re.compile(r"(?:^|, )index=(\d+)")
_CALL_STARTS = tuple(k + "=" for k in _CALL_KEYS)


def _called_computations(ins: Instruction) -> tuple[str, ...]:
    text = ins.attr_text
    if not text:
        return ()
    # Most instructions call nothing: every call attribute either starts the text or follows
    # ", ", and one search for ", <key>=" (a literal prefix: fast) rules both out.
    if _CALL_TAIL_RE.search(text) is None and not text.startswith(_CALL_STARTS):
        return ()
    # XLA prints call attributes before the attributes that hold quoted strings
    # (metadata, backend_config), so a regex over the text before the first quote
    # is exact; a call attribute after a quote falls back to the full split.
    quote = text.find('"')
    if quote >= 0 and _CALL_TAIL_RE.search(text, quote):
        out: list[str] = []
        for key in _CALL_KEYS:
            v = ins.attrs.get(key, "")
            if v:
                out.extend(_name_list(v))
        return tuple(out)
    found = _CALL_RE.findall(text, 0, quote if quote >= 0 else len(text))
    if not found:
        return ()
    by_key = {k: _name_list(v) for k, v in found}
    return tuple(n for key in _CALL_KEYS for n in by_key.get(key, ()))


def _name_list(v: str) -> list[str]:
    v = v.strip()
    if v.startswith("{"):
        v = v[1:-1]
    return [p.strip().lstrip("%") for p in v.split(",") if p.strip()]


@dataclass(slots=True)
class Computation:
    """A named computation; ``instructions`` in text (= schedule) order.

    execution_thread: the thread XLA runs it on (``}, execution_thread="host"`` after
    its closing brace: host compute offload); ``"main"`` when the text names none."""

    name: str
    is_entry: bool
    line: int
    instructions: list[Instruction] = field(default_factory=list)
    by_name: dict[str, Instruction] = field(default_factory=dict)
    execution_thread: str = "main"

    @property
    def root(self) -> Instruction | None:
        for ins in reversed(self.instructions):
            if ins.is_root:
                return ins
        return self.instructions[-1] if self.instructions else None


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """A user source position from the StackFrames sections (1-based line)."""

    file: str
    function: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(slots=True)
class Module:
    """A parsed HLO module.

    attrs: module header attributes as raw text (``is_scheduled`` -> ``true``).
    computations: name -> computation, callees before callers (hlo/async_sugar.py order_computations).
    file_names / function_names / file_locations / stack_frames: the debug
    sections, keyed by their 1-based ids; locations map to (file id, function id,
    line, column) and frames to (location id, parent frame id).
    calling: the instructions that call a computation (``called_computations`` not
    empty: while, call, fusion, reduce ...), computation by computation in the
    order of ``computations``, each in text order; the parser lists them while checking the
    calls, so the call graph need not walk every instruction.
    async_wrapped: for a module read from an HloProto, the name of each op a sugared async
    start (``reduce-scatter-start``) wraps -> the start's name: XLA names that op's thunk in a
    profile after the wrapped op, which the text form does not print. Empty for text.
    """

    name: str
    attrs: dict[str, str]
    computations: dict[str, Computation]
    entry_name: str
    file_names: dict[int, str] = field(default_factory=dict)
    function_names: dict[int, str] = field(default_factory=dict)
    file_locations: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)
    stack_frames: dict[int, tuple[int, int]] = field(default_factory=dict)
    source_path: str | None = None
    calling: list[Instruction] = field(default_factory=list)
    async_wrapped: dict[str, str] = field(default_factory=dict)

    @property
    def entry(self) -> Computation:
        return self.computations[self.entry_name]

    @property
    def is_scheduled(self) -> bool:
        return self.attrs.get("is_scheduled", "false") == "true"

    @property
    def num_partitions(self) -> int:
        return int(self.attrs.get("num_partitions", "1") or 1)

    @property
    def frontend_attributes(self) -> dict[str, str]:
        v = self.attrs.get("frontend_attributes", "")
        return parse_braced_map(v) if v else {}

    def self_check(self) -> None:
        """Assert the model's invariants (used by tests): positions follow text order,
        names resolve, operands and called computations exist, one entry."""
        assert self.entry_name in self.computations and self.computations[self.entry_name].is_entry
        assert sum(c.is_entry for c in self.computations.values()) == 1
        for comp in self.computations.values():
            assert len(comp.by_name) == len(comp.instructions), comp.name
            last_line = comp.line
            for i, ins in enumerate(comp.instructions):
                assert ins.position == i and ins.computation == comp.name, ins.name
                assert comp.by_name[ins.name] is ins and ins.line >= last_line, ins.name  # lines may be shared
                last_line = ins.line
                assert all(o in comp.by_name for o in ins.operands), ins.name
                assert all(c in self.computations for c in ins.called_computations), ins.name
            assert comp.root is not None or not comp.instructions
        assert self.calling == [i for c in self.computations.values() for i in c.instructions if i.called_computations]

    def instruction_count(self) -> int:
        return sum(len(c.instructions) for c in self.computations.values())

    def instruction(self, computation: str, name: str) -> Instruction:
        return self.computations[computation].by_name[name]

    def source_location(self, ins: Instruction) -> SourceLocation | None:
        """The innermost user frame of ``ins``, from ``stack_frame_id`` or source_file/line."""
        md = ins.metadata
        fid = md.get("stack_frame_id")
        if fid and fid.isdigit() and int(fid) in self.stack_frames:
            loc_id, _parent = self.stack_frames[int(fid)]
            loc = self.file_locations.get(loc_id)
            if loc:
                f, fn, line, col = loc
                return SourceLocation(self.file_names.get(f, "?"), self.function_names.get(fn, "?"), line, col)
        if "source_file" in md and md.get("source_line", "").isdigit():
            return SourceLocation(md["source_file"], "", int(md["source_line"]), 0)
        return None
