"""Modules XLA's parser (jaxlib 0.10.2) accepts or rejects that hloscope once read the other way.

Each case is a module as a user meets it (issue 28's held-out set: an async call with
its computation written in place, an all-reduce over global device ids with no
channel, XLA's docs pasted with no-break-space indentation, an unclosed brace) and
where XLA's parser stops (None: it accepts). tests/unit/test_parser_rejects.py checks
hloscope's side without jaxlib; tests/xla/test_parser_rejects_vs_xla.py asks jaxlib.
"""

from __future__ import annotations

from dataclasses import dataclass

_ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    xla_at: tuple[int, int] | None  # where XLA's parser reports the error; None if it accepts
    ours_at: tuple[int, int] | None  # where hloscope reports it
    words: str = ""  # in hloscope's message


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
]
