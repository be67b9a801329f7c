"""Words for host writes that nothing reads back (``hloscope.analysis.structure.unread``)."""

from __future__ import annotations

from typing import Any

from hloscope.analysis.report import Report
from hloscope.analysis.structure.unread import UnreadHostWrites, UnreadReason, UnreadWrite
from hloscope.units import human_bytes, human_us


def _slots(slots: tuple[tuple[int, ...], ...]) -> str:
    words = [",".join(str(i) for i in s) for s in slots]
    shown = ", ".join(words[:6]) + (f" and {len(words) - 6} more" if len(words) > 6 else "")
    return ("slot " if len(words) == 1 else "slots ") + shown


def _dims(dims: tuple[int, ...]) -> str:
    return ("dim " if len(dims) == 1 else "dims ") + ",".join(str(d) for d in dims)


def unread_clause(w: UnreadWrite) -> str:
    """What one write puts on host that nothing reads, and why (no transfer name: the caller says it)."""
    size = human_bytes(w.unread_bytes)
    cost = f"~{human_us(w.link_us)} of D->H link time and {size} of host memory per step"
    if w.reason is UnreadReason.DEAD_COPY:
        return f"copies {size} per step to host and nothing reads the copy ({w.buffer}) back: {cost} for nothing"
    if w.reason is UnreadReason.NEVER_READ:
        return f"writes {size} per step into host buffer {w.buffer}, which nothing reads: {cost} for nothing"
    reads = _slots(w.read_slots) + " only" if w.read_slots else "other slots only"
    return (f"writes {size} per step into {_slots(w.slots)} ({_dims(w.sliced_dims)}) of host buffer {w.buffer}; "
            f"its reads ({', '.join(w.readers)}) index {reads}: {cost} for nothing")


def unread_summary(u: UnreadHostWrites) -> str:
    """The step's one line: how much of what goes to host never comes back, and which writes."""
    names = ", ".join(f"{w.transfer.instruction.name} ({human_bytes(w.unread_bytes)})" for w in u.writes)
    return (f"written to host and never read: {human_bytes(u.unread_bytes)} per step of "
            f"{human_bytes(u.written_bytes)} written ({human_bytes(u.read_bytes)} read back), "
            f"~{human_us(u.link_us)} of D->H link time per step: {names}")


def unread_lines(report: Report) -> list[str]:
    """The step's summary line (none when every write is read); each write's clause follows its
    transfer's explanation."""
    return [unread_summary(report.unread)] if report.unread.writes else []


def unread_dict(u: UnreadHostWrites) -> dict[str, Any]:
    """The JSON form (docs/json-schema.md, ``unread_host_writes``)."""
    return {
        "bytes_per_step": u.unread_bytes, "link_us_per_step": round(u.link_us, 3),
        "written_bytes_per_step": u.written_bytes, "read_bytes_per_step": u.read_bytes,
        "writes": [{
            "transfer": w.transfer.instruction.name, "computation": w.transfer.computation,
            "reason": w.reason.value, "buffer": w.buffer, "sliced_dims": list(w.sliced_dims),
            "slots": [list(s) for s in w.slots], "read_slots": [list(s) for s in w.read_slots],
            "readers": list(w.readers), "bytes_per_step": w.unread_bytes, "link_us_per_step": round(w.link_us, 3),
        } for w in u.writes],
    }
