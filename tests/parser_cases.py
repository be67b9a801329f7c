"""Modules XLA's parser (jaxlib 0.10.2, 0.12) accepts or rejects that hloscope once read the other way.

Each case is a module as a user meets it (issue 28's held-out set: an async call with
its computation written in place, an all-reduce over global device ids with no
channel, XLA's docs pasted with no-break-space indentation, an unclosed brace; issue 34's:
XLA 0.12's compact tuple-element operands and late-bound async-update inputs) and where
each supported XLA's parser stops (None: it accepts). hloscope reads a case when one of
them does, unless the case says why it refuses it on purpose. tests/hlo/test_parser_rejects.py
checks hloscope's side without jaxlib; tests/xla/test_parser_rejects_vs_xla.py asks the
installed jaxlib.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.xla_corpus import REJECTED_ON_PURPOSE

_ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"


#: ``Case.xla_012_at`` when jaxlib 0.12's parser stops where 0.10.2's does.
SAME = "as jaxlib 0.10.2"


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    xla_at: tuple[int, int] | None  # where XLA's parser (jaxlib 0.10.2) reports the error; None if it accepts
    ours_at: tuple[int, int] | None  # where hloscope reports it
    words: str = ""  # in hloscope's message
    xla_012_at: tuple[int, int] | str | None = SAME  # where jaxlib 0.12's parser reports it
    on_purpose: str = ""  # why hloscope refuses a module one of them reads

    def xla_at_for(self, jaxlib: str) -> tuple[int, int] | None:
        """Where the parser of jaxlib ``jaxlib`` (a version) stops; None if it reads the case."""
        if jaxlib.startswith("0.12.") and not isinstance(self.xla_012_at, str):
            return self.xla_012_at
        return self.xla_at

    @property
    def some_xla_reads(self) -> bool:
        return self.xla_at is None or self.xla_012_at is None


_TUPLE = "HloModule m\n\nENTRY main {\n  p = (f32[8], (f32[8], s32[])) parameter(0)\n"
_FOO = ("HloModule m\n\n%foo (p0: f32[], p1: f32[]) -> f32[] {\n  %p0 = f32[] parameter(0)\n  %p1 = f32[] parameter(1)\n"
        "  ROOT %add = f32[] add(%p0, %p1)\n}\n\nENTRY %main (a: f32[], b: f32[]) -> f32[] {\n"
        "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n")
_NOT_CHAINED = REJECTED_ON_PURPOSE[0][1]

#: An async dynamic-update-slice to host memory (S(5)) started before a while loop, whose context the loop's
#: state carries through every iteration: each iteration's dynamic-update-slice-update reads it from the
#: loop parameter, and the done after the loop from the while result (the form of issue 46 item 7).
_CTX = "((f32[4,8]{1,0:S(5)}, f32[1,8]{1,0}, s32[], s32[]), f32[4,8]{1,0:S(5)}, u32[])"
_STATE = f"(s32[], {_CTX}, f32[1,8]{{1,0}})"
LOOP_CROSSING_DUS = (
    "HloModule loop_crossing_dus, is_scheduled=true\n\n"
    "cond {\n"
    f"  p = {_STATE} parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  n = s32[] constant(4)\n"
    "  ROOT lt = pred[] compare(i, n), direction=LT\n"
    "}\n\n"
    "body {\n"
    f"  p = {_STATE} parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    f"  ctx = {_CTX} get-tuple-element(p), index=1\n"
    "  x = f32[1,8]{1,0} get-tuple-element(p), index=2\n"
    "  one = s32[] constant(1)\n"
    "  next = s32[] add(i, one)\n"
    f"  upd = {_CTX} dynamic-update-slice-update(ctx)\n"
    "  y = f32[1,8]{1,0} negate(x)\n"
    "  z = f32[1,8]{1,0} exponential(y)\n"
    f"  ROOT t = {_STATE} tuple(next, upd, z)\n"
    "}\n\n"
    "ENTRY main {\n"
    "  buf = f32[4,8]{1,0:S(5)} parameter(0)\n"
    "  x = f32[1,8]{1,0} parameter(1)\n"
    "  zero = s32[] constant(0)\n"
    f"  start = {_CTX} dynamic-update-slice-start(buf, x, zero, zero)\n"
    f"  init = {_STATE} tuple(zero, start, x)\n"
    f"  loop = {_STATE} while(init), condition=cond, body=body\n"
    f"  ctx = {_CTX} get-tuple-element(loop), index=1\n"
    "  ROOT done = f32[4,8]{1,0:S(5)} dynamic-update-slice-done(ctx)\n"
    "}\n")


CASES = [
    Case("async call-start with an inline computation",
         "HloModule m\n\nENTRY main {\n  p = s32[] parameter(0)\n"
         "  start = ((s32[]), s32[], s32[]) call-start(p), to_apply={ arg.0 = s32[] parameter(0) "
         "ROOT abs.0 = s32[] abs(arg.0) }\n  ROOT done = s32[] call-done(start)\n}\n", None, None),
    Case("inline computation over several lines",
         "HloModule m\n\nENTRY main {\n  p = s32[] parameter(0)\n  ROOT c = s32[] call(p), to_apply={\n"
         "    x = s32[] parameter(0)\n    ROOT n = s32[] negate(x)\n  }\n}\n", None, None),
    Case("all-reduce use_global_device_ids without channel_id",
         "HloModule m\n\n" + _ADD + "ENTRY main {\n  p = f32[8] parameter(0)\n  ROOT ar = f32[8] all-reduce(p), "
         "replica_groups={{0,1}}, use_global_device_ids=true, to_apply=add\n}\n", (11, 30), (11, 59),
         "use_global_device_ids=true without channel_id"),
    Case("all-reduce use_global_device_ids with channel_id",
         "HloModule m\n\n" + _ADD + "ENTRY main {\n  p = f32[8] parameter(0)\n  ROOT ar = f32[8] all-reduce(p), "
         "channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=add\n}\n", None, None),
    Case("reduce-scatter use_global_device_ids without channel_id",
         "HloModule m\n\n" + _ADD + "ENTRY main {\n  p = f32[8] parameter(0)\n  ROOT rs = f32[4] reduce-scatter(p), "
         "replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true, to_apply=add\n}\n", (11, 34), (11, 79),
         "without channel_id"),
    Case("no-break space indentation",
         "HloModule m\n\nENTRY main {\n\u00a0\u00a0p = f32[8] parameter(0)\n\u00a0\u00a0ROOT n = f32[8] negate(p)\n}\n",
         (4, 1), (4, 1), "U+00A0 (no-break space) is not whitespace XLA reads: replace it with a plain space"),
    Case("no-break space inside a string",
         "HloModule m\n\nENTRY main {\n  p = f32[8] parameter(0)\n"
         "  ROOT n = f32[8] negate(p), metadata={op_name=\"a\u00a0b\"}\n}\n", None, None),
    Case("unclosed layout brace",
         "HloModule m\n\nENTRY main {\n  p = f32[8,4]{1,0 parameter(0)\n  ROOT n = f32[8,4]{1,0} negate(p)\n}\n",
         (4, 20), (4, 15), "'{' is not closed before the next instruction at 5:3"),
    Case("unclosed attribute brace",
         "HloModule m\n\nENTRY main {\n  p = f32[8,4] parameter(0), sharding={replicated\n"
         "  ROOT n = f32[8,4] negate(p)\n}\n", (4, 30), (4, 39), "'{' is not closed before the next instruction"),
    # XLA 0.12 prints a tuple element as %name#i in its dumps (--xla_dump_compact_gte); its parser reads
    # the operand as a get-tuple-element, jaxlib 0.10.2's does not read it.
    Case("compact tuple element used twice",
         _TUPLE + "  n = f32[8] negate(p#0)\n  ROOT s = f32[8] add(n, p#0)\n}\n", (5, 21), None, xla_012_at=None),
    Case("nested compact tuple element",
         _TUPLE + "  c = s32[] copy(p#1#1)\n  ROOT s = f32[8] add(p#1#0, p#0)\n}\n", (5, 18), None, xla_012_at=None),
    Case("compact tuple element with blanks, a comment and a line break beside '#'",
         _TUPLE + "  ROOT s = f32[8] add(p /* x */ # 0, %p#\n 0)\n}\n", (5, 23), None, xla_012_at=None),
    Case("compact tuple element with its shape",
         _TUPLE + "  ROOT n = f32[8] negate(f32[8] %p#0)\n}\n", (5, 26), None, xla_012_at=None),
    Case("compact tuple element of an undefined instruction",
         _TUPLE + "  ROOT n = f32[8] negate(q#0)\n}\n", (5, 26), (5, 26), "'q' is not defined before this instruction"),
    Case("compact tuple element of an instruction defined after it",
         _TUPLE + "  ROOT n = f32[8] negate(t#0)\n  t = (f32[8]) tuple(p#0)\n}\n", (5, 26), (5, 26),
         "'t' is not defined before this instruction"),
    Case("compact tuple element out of range",
         _TUPLE + "  ROOT n = f32[8] negate(p#2)\n}\n", (5, 26), (5, 26), "tuple index 2 is out of range"),
    Case("compact tuple element of an array",
         _TUPLE + "  n = f32[8] negate(p#0)\n  ROOT m = f32[8] negate(n#0)\n}\n", (5, 21), (6, 26),
         "'#' needs a tuple", xla_012_at=(6, 26)),
    Case("'#' without a tuple index",
         _TUPLE + "  ROOT n = f32[8] negate(p#)\n}\n", (5, 26), (5, 26), "expected an operand name, found 'p#'"),
    Case("compact tuple element as a control predecessor",
         _TUPLE + "  n = f32[8] negate(p#0)\n  ROOT m = f32[8] negate(n), control-predecessors={p#0}\n}\n",
         (5, 21), (6, 28), "control predecessor 'p#0' is not defined", xla_012_at=(6, 53)),
    # Late binding (XLA's docs/async_ops.md; XLA 0.12): an async-update binds more inputs of the async call.
    Case("call-update with a late-bound input",
         _FOO + "  %s = ((f32[]), (), s32[]) call-start(%a), to_apply=%foo\n"
         "  %u = ((f32[], f32[]), f32[], s32[]) call-update(%s, %b)\n  ROOT %d = f32[] call-done(%u)\n}\n",
         (14, 3), None, xla_012_at=None),
    Case("async-done with a second operand",
         _FOO + "  %s = ((f32[], f32[]), f32[], s32[]) async-start(%a, %b), calls=%foo\n"
         "  ROOT %d = f32[] async-done(%s, %b)\n}\n", (14, 1), (13, 9), "an async-done takes one operand",
         xla_012_at=None, on_purpose=_NOT_CHAINED),
    # issue 46 item 7: jaxlib 0.12 reads an async-update or async-done whose context is not an async op
    # (0.10.2: "AsyncUpdate and AsyncDone expect a single async op as their operand"); hloscope reads it too.
    Case("async-update whose first operand is not an async op",
         _FOO + "  %s = ((f32[], f32[]), f32[], s32[]) async-start(%a, %b), calls=%foo\n"
         "  %u = ((f32[], f32[]), f32[], s32[]) async-update(%a, %s)\n  ROOT %d = f32[] async-done(%u)\n}\n",
         (14, 3), None, xla_012_at=None),
    Case("loop-crossing async dynamic-update-slice-update of the loop state", LOOP_CROSSING_DUS, (18, 3), None,
         xla_012_at=None),
]
