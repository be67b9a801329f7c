"""Words for the call as the wall clock sees it (``hloscope.analysis.host_call``): the program, the
host buffers the runtime maps on every call, and how to avoid each."""

from __future__ import annotations

from typing import Any

from hloscope.analysis.host_call import FreshOutput, HostCall, Remedy
from hloscope.analysis.structure.entry_buffers import EntryBuffer
from hloscope.units import human_bytes, human_us


def _shape(b: EntryBuffer) -> str:
    return f"{b.shape.element_type}[{','.join(str(d) for d in b.shape.dims)}]"


def _where(b: EntryBuffer) -> str:
    leaf = "".join(f"[{i}]" for i in b.leaf)
    return f"output {b.index}{leaf}" if b.output else f"argument {b.index}{leaf} ({b.name})"


def remedy_words(f: FreshOutput) -> str:
    """How to stop ``f`` costing a call."""
    a = f.argument
    if f.remedy is Remedy.DONATE and a is not None:
        return (f"if it is the new value of {a.name} (argument {a.index}, the same shape in host memory), donate "
                f"{a.name} (jax.jit donate_argnums) and return it in its place: XLA then writes it into that buffer, "
                "mapped once; else keep it on the chip (out_shardings memory_kind='device'), as gradients usually are")
    return ("keep it on the chip (out_shardings memory_kind='device') and move it to host only when needed, or update "
            "a donated host argument in place")


def fresh_line(f: FreshOutput) -> str:
    """One fresh host output, its share of the call, and its remedy."""
    cost = f", ~{human_us(f.host_us)} per call" if f.host_us is not None else ""
    return f"  {_where(f.buffer)} {_shape(f.buffer)} ({human_bytes(f.buffer.size_bytes)}{cost}): {remedy_words(f)}"


def call_summary(call: HostCall, target: str) -> str:
    """The call in one line: the program, the host work, and where the figure comes from."""
    what = (f"the runtime maps {len(call.fresh)} new pinned-host output buffer(s) ({human_bytes(call.fresh_bytes)}) "
            "for DMA on every call, before the program starts")
    if call.host_us is None:
        return (f"the call: {what}; how long that takes on {target} is not known (no measured figure for this "
                "target; docs/accuracy.md, 'Host buffers a call maps')")
    program = human_us(call.program_us) if call.program_us is not None else "not simulated"
    total = f"~{human_us(call.call_us)}" if call.call_us is not None else "the program"
    return (f"the call: {total} = the program {program} + ~{human_us(call.host_us)} of host work: {what} "
            f"(figures {call.source})")


def measured_line(call: HostCall) -> str:
    """What the profile's host lines show before each call's program, beside the model ("" without them)."""
    m = call.measured
    if m is None:
        return ""
    modeled = f"~{human_us(call.host_us)} modeled" if call.host_us is not None else "not modeled on this target"
    later = "the calls after the first" if m.calls > 1 else "its one call"
    if m.before_program_us <= 0 and m.maps_per_call == 0:
        seen = f"no buffer mapped before the program ({later}), against {modeled}"
    else:
        seen = (f"the runtime's buffer mappings held each call ~{human_us(m.before_program_us)} before its program "
                f"(median of {later}; {m.maps_per_call:g} mapping(s) a call, {human_us(m.busy_us)} over "
                f"{len(m.threads)} thread(s)), against {modeled}")
        if call.host_us == 0:
            seen += ": this run spends time outside the program that the module does not explain"
    first = (f"; the first call ~{human_us(m.first_before_program_us)} (it maps the host arguments too)"
             if m.calls > 1 and m.first_before_program_us > m.before_program_us else "")
    return (f"  measured (the profile's host lines, {m.calls} call(s), program {human_us(m.program_us)}): "
            f"{seen}{first}")


def host_call_lines(call: HostCall, target: str) -> list[str]:
    """The call's lines, when the step has host-memory outputs (or its profile shows host work); none otherwise."""
    lines = _model_lines(call, target)
    seen = measured_line(call)
    if seen and (lines or (call.measured is not None and call.measured.maps_per_call > 0)):
        lines.append(seen)
    return lines


def _model_lines(call: HostCall, target: str) -> list[str]:
    b = call.buffers
    if not b.outputs:
        return []
    if not b.aliases_known:
        size = human_bytes(sum(o.size_bytes for o in b.outputs))
        return [f"the call: {len(b.outputs)} output(s) in pinned host memory ({size}); "
                "whether they alias donated arguments is not in the module (no entry_computation_layout), so what "
                "they cost each call is not priced"]
    if not call.fresh:
        return [f"the call: the program alone: its {len(b.outputs)} host output(s) are written into donated "
                "arguments' buffers (input_output_alias), which the runtime mapped once"]
    return [call_summary(call, target), *(fresh_line(f) for f in call.fresh)]


def call_brief(call: HostCall) -> str:
    """The call in a few words, for the TUI's summary bar ("" when no host buffer costs a call)."""
    if not call.fresh:
        return ""
    what = f"{len(call.fresh)} new host output(s), {human_bytes(call.fresh_bytes)}, mapped every call"
    if call.host_us is None:
        return f"the call: + host work not known ({what})"
    total = f"~{human_us(call.call_us)}" if call.call_us is not None else "the program"
    return f"the call {total}: + ~{human_us(call.host_us)} of host work ({what}; donate, or keep them on the chip)"


def _buffer_dict(b: EntryBuffer) -> dict[str, Any]:
    alias = b.aliased_with
    return {"index": b.index, "leaf": list(b.leaf), "name": b.name, "element_type": b.shape.element_type,
            "dims": list(b.shape.dims), "bytes": b.size_bytes,
            "aliased_with": ({"parameter": alias[0], "leaf": list(alias[1])} if isinstance(alias, tuple)
                             else alias)}


def _r(x: float | None) -> float | None:
    return round(x, 3) if x is not None else None


def host_call_dict(call: HostCall) -> dict[str, Any]:
    """The JSON form (docs/json-schema.md, ``host_call``)."""
    return {
        "program_us": _r(call.program_us), "host_us": _r(call.host_us), "call_us": _r(call.call_us),
        "fresh_bytes": call.fresh_bytes, "aliases_known": call.buffers.aliases_known, "source": call.source,
        "arguments": [_buffer_dict(b) for b in call.buffers.arguments],
        "outputs": [_buffer_dict(b) for b in call.buffers.outputs],
        "fresh": [{"output": f.buffer.index, "leaf": list(f.buffer.leaf), "bytes": f.buffer.size_bytes,
                   "host_us": _r(f.host_us), "remedy": f.remedy.value,
                   "argument": f.argument.index if f.argument is not None else None} for f in call.fresh],
        "measured": _measured_dict(call),
    }


def _measured_dict(call: HostCall) -> dict[str, Any] | None:
    m = call.measured
    if m is None:
        return None
    return {"calls": m.calls, "maps_per_call": m.maps_per_call, "before_program_us": _r(m.before_program_us),
            "busy_us": _r(m.busy_us), "first_before_program_us": _r(m.first_before_program_us),
            "threads": list(m.threads), "program_us": _r(m.program_us)}
