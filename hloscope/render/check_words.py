"""How every check format words a violation: which tensor, which source line, what the
schedule put beside it and how much stays exposed, from the verdict's facts through
``render.why`` (nobody has to open the HLO). Shared by the format modules (``check_*``).
"""

from __future__ import annotations

import os
from typing import Any

from hloscope.analysis.report import Report
from hloscope.analysis.verdict import Verdict
from hloscope.check.baseline import BaselineDiff, Change
from hloscope.check.keys import TransferRecord
from hloscope.check.rules import Violation
from hloscope.render.why import explain, exposed_clause
from hloscope.render.xla_text import xla_clause
from hloscope.units import human_bytes


def _dims(leaf: Any) -> str:
    return f"{leaf.element_type}[{','.join(str(d) for d in leaf.dims)}]"


def tensor_text(v: Verdict) -> str:
    """``bf16[1,1,256,8,64] slice of host buffer bf16[2,1,256,8,64]`` from the transfer's shapes."""
    t = v.transfer
    leaves = [leaf for leaf in t.instruction.shape.leaves() if leaf.dims]
    host = next((leaf for leaf in leaves if leaf.memory_space == t.host_space), None)
    moved = next((leaf for leaf in leaves if leaf.memory_space != t.host_space and leaf.byte_size == t.bytes), None)
    parts = [_dims(moved)] if moved is not None else []
    if host is not None and (moved is None or host.byte_size != moved.byte_size):
        parts.append(f"{'slice of ' if moved is not None else ''}host buffer {_dims(host)}")
    return " ".join(parts)


def user_source(full: str) -> str:
    """The source path relative to the working folder when it lies under it (CI annotations want that)."""
    if not full:
        return ""
    file, _, line = full.rpartition(":")
    try:
        rel = os.path.relpath(file)
    except ValueError:
        return full
    return f"{rel}:{line}" if not rel.startswith("..") else full


def _record_head(r: TransferRecord) -> str:
    name = f"'{r.checkpoint}'" if r.checkpoint else (f"op {r.key.name}" if r.key.name else "")
    where = f" at {user_source(r.full_source)}" if r.full_source else ""
    detail = f"{r.key.direction} {r.op}, {human_bytes(r.bytes)} x{r.executions}/step"
    return f"{r.instruction} ({detail}{', ' + name if name else ''}){where}"


def _window_text(v: Verdict) -> str:
    ops = [(w.name, w.est_us) for w in (*v.compute, *v.collectives)]
    if not ops:
        return "nothing that does work"
    top = sorted(ops, key=lambda o: -o[1])[:3]
    more = f" and {len(ops) - len(top)} more" if len(ops) > len(top) else ""
    return (f"{len(v.compute)} compute op(s) ~{v.est_compute_us:.1f} us, {len(v.collectives)} collective(s) "
            f"~{v.est_collective_us:.1f} us (largest: {', '.join(f'{n} ~{us:.1f} us' for n, us in top)}{more})")


def violation_lines(v: Violation, report: Report | None = None) -> list[str]:
    """The first line says what broke; the next ones, for a transfer, what the schedule did with it
    (and, given the ``report``, what XLA's scheduler assumed for it, when its log is known)."""
    rec = v.record
    head = f"{_record_head(rec)}: {v.message}" if rec is not None else v.message
    lines = [head]
    verdict = v.verdict
    if verdict is not None and verdict.transfer.instruction.name == (rec.instruction if rec else "") \
            and not verdict.transfer.is_annotation:
        tensor = tensor_text(verdict)
        if tensor:
            lines.append(f"tensor: {tensor}")
        if verdict.pair is not None:
            lines.append(f"overlapped by: {_window_text(verdict)}; {exposed_clause(verdict)}")
        lines.append(f"why: {explain(verdict)}")
        if report is not None and (clause := xla_clause(report, verdict)):
            lines.append(f"xla: {clause}")
    return lines


def change_text(c: Change) -> str:
    rec = c.new or c.base
    what = _record_head(rec) if rec is not None else "step"
    arrow = f"{c.before} -> {c.after}" if c.before and c.after else (c.before or c.after)
    return f"{c.kind}: {what}: {arrow}"


def diff_lines(diff: BaselineDiff) -> list[str]:
    lines = [f"baseline {diff.base.label}: {len(diff.pairs)} transfer(s) matched, "
             f"{len(diff.regressions)} regression(s); exposed {diff.base.exposed_us_per_step:.1f} -> "
             f"{diff.new.exposed_us_per_step:.1f} us/step (estimates)"]
    lines += [("  REGRESSION " if c.regression else "  ") + change_text(c) for c in diff.changes]
    return lines
