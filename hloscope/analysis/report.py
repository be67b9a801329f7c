"""The analysis pipeline and the report it returns (rendered by ``hloscope.render``).

``analyze_module(module, target) -> Report`` runs the passes in order:
``build_call_graph`` -> ``find_host_transfers`` -> ``pair_async_ops`` ->
``judge_overlap``. ``Report.to_dict()`` is the JSON contract (docs/json-schema.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hloscope.analysis.callgraph import CallGraph, build_call_graph
from hloscope.analysis.cost import CostModel
from hloscope.analysis.overlap import VERDICTS, Verdict, judge_overlap
from hloscope.analysis.pairs import AsyncPair, pair_async_ops
from hloscope.analysis.transfers import TO_DEVICE, TO_HOST, find_host_transfers
from hloscope.hlo.model import Module
from hloscope.hlo.shape import HOST_MEMORY_SPACE
from hloscope.targets import Target

SCHEMA = "hloscope.report/1"


@dataclass
class Report:
    module: Module
    target: Target
    callgraph: CallGraph
    verdicts: list[Verdict]
    pairs: list[AsyncPair]
    cost: CostModel | None = None
    host_space: int = HOST_MEMORY_SPACE
    extra: dict[str, Any] = field(default_factory=dict)

    def est_compute_us(self) -> float:
        """Estimated compute time of the whole step (entry computation, loops expanded)."""
        cost = self.cost or CostModel(self.module, self.target, self.host_space)
        return cost.computation_us(self.module.entry_name)

    def source(self, v: Verdict) -> str:
        loc = self.module.source_location(v.transfer.instruction)
        return str(loc) if loc else ""

    def transfer_dicts(self) -> list[dict[str, Any]]:
        out = []
        for v in self.verdicts:
            t = v.transfer
            out.append({
                "name": t.instruction.name,
                "done": v.done.name if v.done else None,
                "computation": t.computation,
                "direction": t.direction,
                "op": t.op,
                "bytes": t.bytes,
                "executions": t.executions,
                "async": t.is_async,
                "crosses_iteration": v.crosses_iteration,
                "overlapped_compute": v.overlapped_compute,
                "overlapped_collectives": v.overlapped_collectives,
                "overlaps_compute": bool(v.overlapped_compute),
                "overlaps_collectives": bool(v.overlapped_collectives),
                "est_transfer_us": round(v.est_transfer_us, 3),
                "est_hidden_us": round(v.est_hidden_us, 3),
                "est_compute_us": round(v.est_compute_us, 3),
                "est_collective_us": round(v.est_collective_us, 3),
                "window_size": v.window_size,
                "verdict": v.verdict,
                "why": v.why,
                "source": self.source(v),
                "op_name": t.instruction.metadata.get("op_name", ""),
                "line": t.instruction.line,
            })
        return out

    def summary(self) -> dict[str, Any]:
        to_host = sum(v.transfer.bytes * v.transfer.executions for v in self.verdicts
                      if v.transfer.direction == TO_HOST)
        to_dev = sum(v.transfer.bytes * v.transfer.executions for v in self.verdicts
                     if v.transfer.direction == TO_DEVICE)
        by_verdict = {k: 0 for k in VERDICTS}
        for v in self.verdicts:
            by_verdict[v.verdict] += 1
        exposed_us = sum((v.est_transfer_us - v.est_hidden_us) * v.transfer.executions for v in self.verdicts
                         if v.verdict != "unscheduled")
        return {
            "transfers": len(self.verdicts),
            "to_host_bytes_per_step": to_host,
            "to_device_bytes_per_step": to_dev,
            "by_verdict": by_verdict,
            "est_exposed_us_per_step": round(exposed_us, 3),
            "loops": self.loops(),
            "unknown_trip_counts": self.callgraph.unknown_trip,
        }

    def loops(self) -> list[dict[str, Any]]:
        """Per computation holding transfers: bytes offloaded and fetched per execution."""
        rows: dict[str, dict[str, Any]] = {}
        for v in self.verdicts:
            t = v.transfer
            r = rows.setdefault(t.computation, {"computation": t.computation, "executions": t.executions,
                                                "to_host_bytes": 0, "to_device_bytes": 0, "transfers": 0})
            r["to_host_bytes" if t.direction == TO_HOST else "to_device_bytes"] += t.bytes
            r["transfers"] += 1
        return list(rows.values())

    def pair_dicts(self) -> list[dict[str, Any]]:
        transfer_starts = {(v.transfer.computation, v.transfer.instruction.name) for v in self.verdicts}
        out = []
        for p in self.pairs:
            kind = "host_transfer" if (p.start.computation, p.start.name) in transfer_starts else p.kind
            out.append({
                "start": p.start.name, "done": p.done.name, "kind": kind, "op": p.op,
                "start_computation": p.start.computation, "done_computation": p.done.computation,
                "crosses_iteration": p.crosses_iteration,
                "adjacent": p.start.computation == p.done.computation and p.done.position == p.start.position + 1,
            })
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "module": self.module.name,
            "source_path": self.module.source_path,
            "scheduled": self.module.is_scheduled,
            "target": self.target.name,
            "host_memory_space": self.host_space,
            "estimates_note": "est_* figures are roofline estimates, not measurements",
            "transfers": self.transfer_dicts(),
            "async_pairs": self.pair_dicts(),
            "summary": self.summary(),
            **self.extra,
        }


def analyze_module(module: Module, target: Target, host_space: int = HOST_MEMORY_SPACE) -> Report:
    cg = build_call_graph(module)
    transfers = find_host_transfers(module, cg, host_space)
    pairs = pair_async_ops(module, cg)
    cost = CostModel(module, target, host_space)
    verdicts = judge_overlap(module, transfers, pairs, cost)
    return Report(module, target, cg, verdicts, pairs, cost, host_space)
