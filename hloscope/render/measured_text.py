"""The words and numbers of the model beside a measured profile (``Report.measured``).

``measured_lines`` is the text report's section; ``measured_dict`` the JSON report's
``measured`` object (docs/json-schema.md). Names from the profile are data: the text is
plain (no markup), the JSON escapes them by construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hloscope.analysis.measured.compare import (
    AsyncOverlap,
    ClassComparison,
    MeasuredComparison,
    TransferComparison,
)
from hloscope.analysis.measured.match import ProfileMatch, Refusal
from hloscope.units import human_bytes, human_us
from hloscope.vocab import Direction

_LINK = {Direction.TO_HOST: "D->H", Direction.TO_DEVICE: "H->D"}


def _ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _run_us(us: float) -> str:
    """A run's time: milliseconds to two decimals (a transfer's rate is read from them)."""
    return f"{us / 1e3:.2f} ms" if us >= 1e3 else human_us(us)


def _gbps(bandwidth: float | None) -> str:
    return "-" if bandwidth is None else f"{bandwidth / 1e9:.1f}"


def transfer_lines(transfers: Sequence[TransferComparison]) -> list[str]:
    """Each host transfer's measured time per run and the compute's wait at its done, beside the model's."""
    if not transfers:
        return []
    rows = [["transfer", "dir", "bytes", "runs", "measured", "GB/s", "wait at done", "verdict", "model: runs", "time",
             "simulated wait", "verdict"]]
    for t in transfers:
        wait = t.measured_wait_per_call_us
        # A run that ended before its done was reached is timed to the done: an upper bound.
        bound = "<= " if t.waited_calls is not None and t.waited_calls < t.measured_calls else ""
        rows.append([t.start, _LINK[t.direction], human_bytes(t.bytes), str(t.measured_calls),
                     bound + _run_us(t.measured_per_call_us), (">= " if bound else "") + _gbps(t.measured_bandwidth),
                     "-" if wait is None else _run_us(wait), str(t.measured_verdict or "-"),
                     str(t.predicted_calls), _run_us(t.predicted_us),
                     _run_us(t.predicted_wait_per_call_us), str(t.predicted_verdict or "-")])
    lines = ["  host transfers, per run (measured: the async op from its start to its done's end, <= where some "
             "runs ended before their done was reached; wait at done: the time the compute waited there; model: runs "
             "per step, time alone on the link, simulated wait):"]
    lines += ["  " + line for line in _columns(rows)]
    waited = [t.measured_wait_us for t in transfers if t.measured_wait_us is not None]
    if waited:
        lines.append(f"  waiting at these dones: measured {human_us(sum(waited))} per step; "
                     f"simulated {human_us(sum(t.predicted_wait_us for t in transfers))} per step")
    return lines


#: What "<- disagree" flags, said once under the list that shows it.
DISAGREE = ("  <- disagree: the simulation and the profile judge it differently: hidden in the model (its "
            "simulated wait at the done under half its modeled time) and not as measured (by the rule above), "
            "or the other way")


def _hidden(h: bool) -> str:
    return "hidden" if h else "exposed"


def _overlap_lines(overlaps: Sequence[AsyncOverlap]) -> list[str]:
    """One line per async start; a start run several times in one execution (a loop) reads once,
    with its runs' median time and their range of overlap."""
    waits = any(o.measured_wait_us is not None for o in overlaps)
    lines = ["  " + ("other async ops (host transfers: the table above)" if any(o.transfer for o in overlaps)
                    else "async ops") + ", measured "
             + ("from the start's issue to its done's end and the wait at the done (hidden: under half the run)"
                if waits else "overlap (share of the kernel's time other ops ran beside it; hidden: half or more)")
             + ", beside the simulation:"]
    by_start: dict[str, list[AsyncOverlap]] = {}
    for o in overlaps:
        if not o.transfer:  # a transfer's verdicts are its row's: one word per transfer
            by_start.setdefault(o.start, []).append(o)
    if not by_start:
        return []
    flagged = False
    for start, runs in by_start.items():
        o = runs[0]
        flag = "  <- disagree" if any(r.disagree for r in runs) else ""
        flagged = flagged or bool(flag)
        hidden = sum(r.hidden_measured for r in runs)
        seen = "hidden" if hidden == len(runs) else "exposed" if hidden == 0 else f"hidden in {hidden} of {len(runs)}"
        model = f"simulated wait {human_us(o.simulated_wait_us)} per step ({_hidden(o.hidden_by_model)})"
        times = sorted(r.measured_us for r in runs)
        each = f"measured {human_us(times[len(times) // 2])}" + (" each (median)" if len(runs) > 1 else "")
        if o.measured_wait_us is not None:
            wait = sum(r.measured_wait_us or 0.0 for r in runs)
            what = f"waited {human_us(wait)} at its done{' in all' if len(runs) > 1 else ''} ({seen})"
        else:
            lo, hi = min(r.measured_overlap for r in runs), max(r.measured_overlap for r in runs)
            share = f"{100 * lo:.0f}%" if round(100 * lo) == round(100 * hi) else f"{100 * lo:.0f}-{100 * hi:.0f}%"
            what = f"{share} overlapped ({seen})"
        count = f" x{len(runs)}" if len(runs) > 1 else ""
        lines.append(f"    {start} ({o.op}){count}: {each}, {what}; {model}{flag}")
    return lines + ([DISAGREE] if flagged else [])


def _class_lines(m: MeasuredComparison) -> list[str]:
    """The compute classes (predicted time against measured) and, apart, the async work beside the
    compute (overlap, not compute: judged by the waits at its dones)."""
    lines: list[str] = []
    compute = [c for c in m.classes if not c.overlap]
    if compute:
        lines.append("  compute per class, per step (predicted/measured: how far the model is):")
        rows = [["class", "ops", "predicted", "measured", "predicted/measured"]]
        rows += [[str(c.name), str(c.ops), human_us(c.predicted_us), human_us(c.measured_us), _ratio(c.ratio)]
                 for c in compute]
        lines += _columns(rows)
    overlap = [c for c in m.classes if c.overlap]
    if overlap:
        lines.append("  async work beside the compute, per class, per step (overlap, not compute: its span from start "
                     "to done is set by the schedule, not by its work; what costs the step is the wait at its done):")
        rows = [["class", "ops", "model time", "measured start->done", "simulated wait", "measured wait",
                 "simulated/measured wait"]]
        rows += [[str(c.name), str(c.ops), human_us(c.predicted_us), human_us(c.measured_us),
                  human_us(c.predicted_wait_us), "-" if c.measured_wait_us is None else human_us(c.measured_wait_us),
                  _ratio(c.wait_ratio)] for c in overlap]
        lines += _columns(rows)
    return lines


def measured_lines(m: MeasuredComparison) -> list[str]:
    p = m.profile
    lines = ["", f"measured ({p.kind}): {p.source}" + (f", module {p.module}" if p.module else "")
             + (f", on {p.device}" if p.device else "")]
    if p.step_us:
        runs = ", ".join(f"{u / 1e3:.2f}" for u in p.step_us)
        med = p.median_step_us or 0.0
        sim = "-" if m.predicted_step_us is None else human_us(m.predicted_step_us)
        ratio = _ratio(m.predicted_step_us / med if m.predicted_step_us is not None and med else None)
        lines.append(f"  step: measured median {human_us(med)} over {len(p.step_us)} executions ({runs} ms); "
                     f"simulated {sim} ({ratio} of measured)")
    lines.append(f"  coverage: {m.matched_ops} of {m.measured_ops} measured ops name an instruction of this module "
                 f"({100 * m.matched_fraction:.1f}%)" + (f"; not: {', '.join(m.unmatched)}" if m.unmatched else ""))
    lines += _class_lines(m)
    lines += transfer_lines(m.transfers)
    if m.overlaps:
        lines += _overlap_lines(m.overlaps)
    worst = sorted((op for op in m.ops if op.measured_us > 0 and not op.overlap),
                   key=lambda op: -abs(op.predicted_us - op.measured_us))
    if worst:
        lines.append("  largest misses (predicted vs measured, per step: all its runs in one execution; "
                     "async work aside):" if any(op.overlap for op in m.ops) else
                     "  largest misses (predicted vs measured, per step: all its runs in one execution):")
        for op in worst[:5]:
            runs = f", {op.calls} runs" if op.calls > 1 else ""
            lines.append(f"    {op.name} ({op.op_class}{runs}): {human_us(op.predicted_us)} vs "
                         f"{human_us(op.measured_us)} ({_ratio(op.ratio)})")
    return lines


def measured_clause(m: MeasuredComparison, instruction: str) -> str:
    """One instruction's measured time beside the model's ("" when the profile has none): the
    TUI's detail pane shows it under the estimate."""
    ops = [o for o in m.ops if o.instruction == instruction]
    if not ops:
        return ""
    meas = sum(o.measured_us for o in ops)
    pred = sum(o.predicted_us for o in ops)
    spread = sum(o.spread_us for o in ops)
    calls = sum(o.calls for o in ops)
    ratio = _ratio(pred / meas if meas > 0 else None)
    return (f"measured {human_us(meas)} per step ({calls} run(s), spread {human_us(spread)}); model {human_us(pred)}, "
            f"{ratio} of measured")


def measured_dict(m: MeasuredComparison) -> dict[str, Any]:
    p = m.profile
    med = p.median_step_us
    return {
        "source": p.source,
        "kind": p.kind,
        "module": p.module,
        "step_us": None if med is None else round(med, 1),
        "step_us_runs": [round(u, 1) for u in p.step_us],
        "device": p.device,
        "simulated_step_us": None if m.predicted_step_us is None else round(m.predicted_step_us, 1),
        "measured_ops": m.measured_ops,
        "matched_ops": m.matched_ops,
        "matched_fraction": round(m.matched_fraction, 4),
        "unmatched": list(m.unmatched),
        "classes": [_class_dict(c) for c in m.classes],
        "ops": [{"name": o.name, "instruction": o.instruction, "class": str(o.op_class), "calls": o.calls,
                 "predicted_us": round(o.predicted_us, 2), "measured_us": round(o.measured_us, 2),
                 "spread_us": round(o.spread_us, 2), "overlap": o.overlap,
                 "simulated_wait_us_per_step": round(o.predicted_wait_us, 1) if o.overlap else None,
                 "measured_wait_us_per_step": _round(o.measured_wait_us, 1)} for o in m.ops],
        "async": [{"start": o.start, "op": o.op, "measured_us": round(o.measured_us, 1),
                   "measured_overlap": round(o.measured_overlap, 3), "simulated_wait_us": round(o.simulated_wait_us, 1),
                   "measured_wait_us": _round(o.measured_wait_us, 2), "transfer": o.transfer,
                   "hidden_by_model": o.hidden_by_model, "hidden_measured": o.hidden_measured,
                   "disagree": o.disagree} for o in m.overlaps],
        "transfers": [_transfer_dict(t) for t in m.transfers],
    }


def _round(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def _class_dict(c: ClassComparison) -> dict[str, Any]:
    return {"name": str(c.name), "ops": c.ops, "predicted_us": round(c.predicted_us, 1),
            "measured_us": round(c.measured_us, 1), "ratio": _round(c.ratio, 3), "overlap": c.overlap,
            "simulated_wait_us": round(c.predicted_wait_us, 1) if c.overlap else None,
            "measured_wait_us": _round(c.measured_wait_us, 1), "wait_ratio": _round(c.wait_ratio, 3)}


def _transfer_dict(t: TransferComparison) -> dict[str, Any]:
    wait = t.measured_wait_per_call_us
    bandwidth = t.measured_bandwidth
    return {"start": t.start, "done": t.done, "direction": str(t.direction), "bytes": t.bytes,
            "predicted_calls": t.predicted_calls, "measured_calls": t.measured_calls,
            "predicted_us": round(t.predicted_us, 2), "measured_us": round(t.measured_per_call_us, 2),
            "measured_us_per_step": round(t.measured_us, 1),
            "measured_bandwidth": None if bandwidth is None else round(bandwidth),
            "simulated_wait_us": round(t.predicted_wait_per_call_us, 2),
            "simulated_wait_us_per_step": round(t.predicted_wait_us, 1),
            "measured_wait_us": None if wait is None else round(wait, 2),
            "measured_wait_us_per_step": None if t.measured_wait_us is None else round(t.measured_wait_us, 1),
            "waited_calls": t.waited_calls}


def _data(name: str) -> str:
    """A name read from a profile, on one line: control characters as escapes."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def _coverage(p: ProfileMatch) -> str:
    return f"{p.matched_ops} of {p.measured_ops} measured ops ({100 * p.coverage:.1f}%) name an instruction of it"


def refusal_line(source: str, p: ProfileMatch) -> str | None:
    """The one line refusing a profile of another program, naming the evidence (None: accepted)."""
    if p.refusal is None:
        return None
    where = _data(source)
    if p.refusal is Refusal.MODULE:
        return (f"{where}: the profile measured module '{_data(p.profile_module)}', not this module "
                f"('{_data(p.module)}'): give the HLO that ran")
    if p.refusal is Refusal.NOTHING:
        return (f"{where}: none of its {p.measured_ops} op names is an instruction of module '{_data(p.module)}' "
                "(a profile of another compile?); nothing to compare")
    untimed = (f"; it times none of the module's {p.transfers} host transfer(s)"
               if p.transfers and p.untimed_transfers == p.transfers else "")
    if p.refusal is Refusal.SHAPES:
        shown = "; ".join(f"{_data(x.op)} is {x.profiled} in the profile, {x.module} here" for x in p.mismatches)
        return (f"{where}: a profile of another program than module '{_data(p.module)}': {p.mismatched} of the "
                f"{p.shapes_compared} ops named like its instructions have other shapes ({shown}); "
                f"{_coverage(p)}{untimed}; give the HLO that ran")
    missing = ", ".join(_data(n) for n in p.unmatched[:5])
    return (f"{where}: a profile of another program than module '{_data(p.module)}': only {_coverage(p)} "
            f"(the program that ran names them all; not: {missing}){untimed}; give the HLO that ran")


def summary_phrases(m: MeasuredComparison) -> list[tuple[str, int]]:
    """The measured step and the waits at the host transfers' dones, as whole phrases for the TUI's
    totals, each with its rank there (``hloscope.tui.widgets.summary.lay_out``)."""
    p = m.profile
    out: list[tuple[str, int]] = []
    med = p.median_step_us
    if med:
        ratio = f" (simulated {m.predicted_step_us / med:.2f}x)" if m.predicted_step_us is not None else ""
        out.append((f"measured step {human_us(med)}{ratio}", 8))
    waited = [t.measured_wait_us for t in m.transfers if t.measured_wait_us is not None]
    if waited:
        out.append((f"host waits measured {human_us(sum(waited))}/step, simulated "
                    f"{human_us(sum(t.predicted_wait_us for t in m.transfers))}", 7))
    return out


def transfer_clause(m: MeasuredComparison, start: str) -> str:
    """One host transfer's measured figures beside the model's, for the TUI's detail pane ("" when
    the profile does not time it): the verdict words are the report's table's."""
    t = next((t for t in m.transfers if t.start == start), None)
    if t is None:
        return ""
    bound = "<= " if t.waited_calls is not None and t.waited_calls < t.measured_calls else ""
    wait = t.measured_wait_per_call_us
    seen = ("" if wait is None else f", waited {_run_us(wait)} at its done") + (
        f" ({t.measured_verdict})" if t.measured_verdict is not None else "")
    return (f"measured: {t.measured_calls} run(s) of {bound}{_run_us(t.measured_per_call_us)} "
            f"({(('>= ' if bound else '') + _gbps(t.measured_bandwidth))} GB/s){seen}; "
            f"{human_us(t.measured_wait_us or 0.0)} per step waited; model: {_run_us(t.predicted_us)} a run, "
            f"simulated wait {_run_us(t.predicted_wait_per_call_us)} a run"
            + (f" ({t.predicted_verdict})" if t.predicted_verdict is not None else ""))
