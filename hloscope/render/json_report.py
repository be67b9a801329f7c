"""The JSON report (schema in docs/json-schema.md): a pure function of the :class:`Report`."""

from __future__ import annotations

import json
from dataclasses import asdict, is_dataclass
from typing import Any, TextIO

from hloscope.analysis.intent.outcome import account_of
from hloscope.analysis.report import Report
from hloscope.analysis.simulate.margin import TransferMargin
from hloscope.analysis.simulate.slack import Slack
from hloscope.analysis.simulate.timeline import TransferTiming
from hloscope.analysis.simulate.verdict import FirstUse, InputReady, Verdict
from hloscope.analysis.way_forward import find_way_forward
from hloscope.render.drain_text import drain_dicts
from hloscope.render.host_call_text import host_call_dict
from hloscope.render.implausible_text import implausible_line
from hloscope.render.intent_text import intent_dict
from hloscope.render.measured_text import measured_dict
from hloscope.render.memory_text import memory_dict
from hloscope.render.next_steps_text import next_steps_dict
from hloscope.render.options import RenderOptions
from hloscope.render.platforms import platform_words
from hloscope.render.scheduler_text import scheduler_dict
from hloscope.render.slice_words import slice_facts
from hloscope.render.unread_text import unread_dict
from hloscope.render.verdict_words import explain
from hloscope.targets import target_for_tpu

SCHEMA = "hloscope.report/5"


def _input_ready(r: InputReady | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {"producer": r.producer.name, "from_top": r.from_top, "ops_before_start": r.ops_before_start,
            "work_ops_between": r.work_ops_between}


def _first_use(u: FirstUse | None) -> dict[str, Any] | None:
    if u is None:
        return None
    return {"user": u.user.name, "element": list(u.element), "is_loop_state": u.is_loop_state,
            "ops_after_done": u.ops_after_done, "work_ops_between": u.work_ops_between}


def _timing(t: TransferTiming | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"issue_us": round(t.issue_us, 3), "finish_us": round(t.finish_us, 3), "done_us": round(t.done_us, 3),
            "wait_us": round(t.wait_us, 3), "mean_wait_us": round(t.mean_wait_us, 3),
            "wait_us_per_step": round(t.wait_us_per_step, 3), "transfer_us": round(t.transfer_us, 3),
            "duration_us": round(t.duration_us, 3), "executions": t.executions,
            "compute_beside_us": round(t.compute_beside_us, 3), "beside_compute": len(t.beside_compute),
            "beside_collectives": list(t.beside_collectives), "beside_transfers": list(t.beside_transfers),
            "matched": t.matched, "queued_us": round(t.queued_us, 3), "queued_behind": list(t.queued_behind),
            "engine_wait_us": round(t.engine_wait_us, 3), "engine_behind": list(t.engine_behind),
            "blame_us": round(t.blame_us, 3),
            "held_up": [{"transfer": h.other, "us_per_step": round(h.us, 3), "where": str(h.where)} for h in t.held_up],
            "held_back_by": [{"transfer": h.other, "us_per_step": round(h.us, 3), "where": str(h.where)}
                             for h in t.held_back_by]}


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(x, nd)


def margin_dict(m: TransferMargin | None) -> dict[str, Any] | None:
    """A transfer's marginal cost, flips and exposure range (None: not judged by the simulation)."""
    if m is None:
        return None
    return {"marginal_us": round(m.marginal_us, 3), "flip_link_gbps": _r(m.flip_link_gbps),
            "flip_link_factor": _r(m.flip_link_factor, 4),
            "flip_link_verdict": str(m.flip_link_verdict) if m.flip_link_verdict else None,
            "flip_compute_factor": _r(m.flip_compute_factor, 4),
            "flip_compute_verdict": str(m.flip_compute_verdict) if m.flip_compute_verdict else None,
            "margin": _r(m.margin, 4), "exposed_range_us": [round(m.exposed_low_us, 3), round(m.exposed_high_us, 3)]}


def transfer_dict(report: Report, v: Verdict) -> dict[str, Any]:
    t = v.transfer
    loc = report.source(v)
    return {
        "name": t.instruction.name,
        "done": v.done.name if v.done else None,
        "computation": t.computation,
        "direction": str(t.direction),
        "op": t.op,
        "bytes": t.bytes,
        "executions": t.executions,
        "async": t.is_async,
        "crosses_iteration": v.crosses_iteration,
        "overlapped_compute": v.overlapped_compute,
        "overlapped_collectives": v.overlapped_collectives,
        "overlaps_compute": bool(v.compute),
        "overlaps_collectives": bool(v.collectives),
        "est_transfer_us": round(v.est_transfer_us, 3),
        "est_hidden_us": round(v.est_hidden_us, 3),
        "est_compute_us": round(v.est_compute_us, 3),
        "est_collective_us": round(v.est_collective_us, 3),
        "window_size": v.window_size,
        "verdict": str(v.verdict),
        "why": explain(v, platform_words(report.platform)),
        "checkpoint_name": t.checkpoint_name,
        "name_basis": str(t.name_basis) if t.name_basis is not None else None,
        "name_guessed": t.name_guessed,
        "unrequested_name": t.unrequested_name,
        "role": t.role,
        "source": str(loc) if loc else "",
        "source_function": t.source.function if t.source else "",
        "op_name": t.instruction.metadata.get("op_name", ""),
        "line": t.instruction.line,
        "reason": str(v.reason),
        "window": [{"computation": s.computation, "first": s.first, "end": s.end, "kind": str(s.kind)}
                   for s in v.window],
        "other_transfers": [i.name for i in v.other_transfers],
        "input_ready": _input_ready(v.input_ready),
        "first_use": _first_use(v.first_use),
        "simulated": _timing(v.timing),
        "blame_us": round(v.timing.blame_us, 3) if v.timing is not None else None,
        **_margin_fields(report, v),
        "xla_stream": _stream(report, v),
        "slack": _slack(report.slack_for(v)),
        **_xla_transfer(report, v),
    }


def _margin_fields(report: Report, v: Verdict) -> dict[str, Any]:
    m = report.margin_for(v) if v.timing is not None else None
    d = margin_dict(m)
    keys = ("marginal_us", "flip_link_gbps", "flip_compute_factor", "margin", "exposed_range_us")
    out: dict[str, Any] = {k: (d[k] if d is not None else None) for k in keys}
    out["margins"] = d
    return out


def _slack(s: Slack | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"ready_after": s.ready_after, "needed_by": s.needed_by, "possible_ops": s.possible_ops,
            "possible_compute_us": round(s.possible_compute_us, 3), "got_ops": s.got_ops,
            "got_compute_us": round(s.got_compute_us, 3), "could_hide": s.could_hide,
            "segments": [{"computation": g.computation, "first": g.first, "end": g.end, "kind": str(g.kind)}
                         for g in s.segments]}


def _stream(report: Report, v: Verdict) -> str | None:
    """XLA's execution stream for the transfer's start (``compute:N``), None for a synchronous one."""
    if report.streams is None:
        return None
    s = report.streams.stream_of(v.transfer.computation, v.transfer.instruction.name)
    return s.label if s is not None else None


def _xla_transfer(report: Report, v: Verdict) -> dict[str, Any]:
    """What XLA's scheduler assumed for this transfer; keys present only when its log is known."""
    if report.xla is None:
        return {}
    x = report.xla.for_transfer(v.transfer.instruction.name)
    sol = report.xla.estimator == "sol"
    return {
        "xla_estimate_us": round(x.latency_us, 3) if x is not None and x.latency_us is not None and sol else None,
        "xla_estimate_default": x.default if x is not None else None,
        "xla_window_us": round(x.window_us, 3) if x is not None and x.window_us is not None and sol else None,
    }


def _plain(x: Any) -> Any:
    """Dataclasses and enums to JSON-ready values."""
    if is_dataclass(x) and not isinstance(x, type):
        return _plain(asdict(x))
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    return x


def report_to_dict(report: Report) -> dict[str, Any]:
    s = report.summary
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "module": report.module.name,
        "source_path": report.module.source_path,
        "scheduled": report.module.is_scheduled,
        "bytes_are": "per_device" if report.module.is_scheduled else "logical",
        "target": report.target.name,
        "platform": str(report.platform),
        "compiled_for": {"backend": str(report.compiled_for.backend), "evidence": str(report.compiled_for.evidence),
                         "where": report.compiled_for.where,
                         **({"chip": chip} if (chip := _chip(report)) is not None else {})},
        "host_memory_space": report.host_space,
        "estimates_note": "est_* figures are roofline estimates, not measurements",
        "transfers": [transfer_dict(report, v) for v in report.verdicts],
        "async_pairs": [{
            "start": p.start.name, "done": p.done.name, "kind": str(report.pair_kind(p)), "op": p.op,
            "start_computation": p.start.computation, "done_computation": p.done.computation,
            "crosses_iteration": p.crosses_iteration,
            "adjacent": p.start.computation == p.done.computation and p.done.position == p.start.position + 1,
        } for p in report.pairs],
        "summary": {
            "transfers": s.transfers,
            "to_host_bytes_per_step": s.to_host_bytes_per_step,
            "to_device_bytes_per_step": s.to_device_bytes_per_step,
            "by_verdict": {str(k): n for k, n in s.by_verdict.items()},
            "est_exposed_us_per_step": round(s.est_exposed_us_per_step, 3),
            "loops": [_plain(lp) for lp in s.loops],
            "unknown_trip_counts": list(s.unknown_trip_counts),
            "simulated_step": _plain(s.step) if s.step is not None else None,
            "blame_us": (round(sum(t.blame_us for t in report.timeline.transfers.values()), 3)
                         if report.timeline is not None else None),
            "margins": _margins_summary(report),
        },
        "notes": list(report.notes),
    }
    if s.implausible is not None:  # estimates that cannot be: absent when there are none
        out["summary"]["implausible"] = {
            "ops": [{"instruction": x.instruction, "computation": x.computation, "est_us": round(x.us, 3),
                     "ceiling_us": round(x.ceiling_us, 3), "flops": x.flops, "flops_ceiling": x.flops_ceiling,
                     "hbm_bytes": x.hbm_bytes} for x in s.implausible.ops],
            "step_us": _r(s.implausible.step_us), "line": implausible_line(s.implausible)}
    account = account_of(report)
    if account is not None:
        out["intent"] = intent_dict(account)
    if report.scheduler is not None:
        out["scheduler"] = scheduler_dict(report.scheduler)
    if report.xla is not None:
        out["xla_scheduler"] = {"estimator": report.xla.estimator, "profile": report.xla.profile,
                                "step_us": None if report.xla.step_us is None else round(report.xla.step_us, 1)}
    if report.host_work.accesses:
        out["in_place_host_accesses"] = [{
            "instruction": a.instruction.name, "computation": a.computation, "op": a.op,
            "read_bytes": a.read_bytes, "written_bytes": a.written_bytes, "executions": a.executions,
        } for a in report.host_work.accesses]
    if report.host_work.compute:
        out["host_compute"] = [{
            "computation": None if c.wrapped else c.computation, "thread": c.thread, "instructions": c.instructions,
            "start": c.start.name if c.start is not None else None, "done": c.done.name if c.done is not None else None,
            "caller": c.caller or None, "operand_bytes": c.operand_bytes, "result_bytes": c.result_bytes,
        } for c in report.host_work.compute]
    if report.memory is not None:
        out["memory"] = _plain(memory_dict(report.memory))
    if report.remat is not None:
        r = report.remat
        out["remat"] = {"clones": r.clones, "clones_per_step": r.clones_per_step,
                        "flops_per_step": r.flops_per_step, "collectives": r.collectives,
                        "host_buffers": r.host_buffers, "names": list(r.names)}
    if report.drains:
        out["serial_drains"] = drain_dicts(report)
    if report.unread.writes:
        out["unread_host_writes"] = unread_dict(report.unread)
    if (forward := find_way_forward(report)) is not None:  # transfers no placement hides: what each way out costs
        out["next_steps"] = next_steps_dict(forward)
    if (tpu_slice := slice_facts(report)) is not None:  # the slice as Cloud TPU names it (v5p-128)
        out["tpu_slice"] = _plain(tpu_slice)
    hc = report.host_call
    if hc.buffers.outputs or (hc.measured is not None and hc.measured.maps_per_call > 0):
        out["host_call"] = host_call_dict(hc)
    if report.compile is not None:
        out["compile"] = _plain(report.compile)
    if report.measured is not None:
        out["measured"] = measured_dict(report.measured)
    return out


def _chip(report: Report) -> str | None:
    """The built-in target of the TPU chip a dump names (``tpu-v5e`` for XLA's ``TPU_VERSION_VIPERFISH`` /
    ``lite``), else None."""
    found = target_for_tpu(report.compiled_for.tpu_version, report.compiled_for.tpu_variant)
    return found.name if found is not None else None


def _margins_summary(report: Report) -> dict[str, Any] | None:
    m = report.margins
    if m is None:
        return None
    return {"simulations": m.simulations, "calibrated_errors": m.calibrated,
            "error_factors": {str(c): round(f, 4) for c, f in m.error_factors},
            "corner_step_us": [round(x, 3) for x in m.corner_step_us],
            "grid": [round(x, 4) for x in m.grid],
            "fix_first": [{"transfer": x.start, "computation": x.computation, "marginal_us": round(x.marginal_us, 3)}
                          for x in m.fix_first()]}


class JsonRenderer:
    name = "json"
    extension = ".json"

    def render(self, report: Report, out: TextIO, options: RenderOptions) -> None:
        json.dump(report_to_dict(report), out, indent=2)
        out.write("\n")
