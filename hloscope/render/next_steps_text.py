"""The report's next steps for transfers no placement of start and done hides, in words: what saving the
values on the device and recomputing them would cost here, and the command that searches both
(facts: ``hloscope.analysis.way_forward``)."""

from __future__ import annotations

from typing import Any

from hloscope.analysis.report import Report
from hloscope.analysis.way_forward import WayForward, find_way_forward
from hloscope.units import human_bytes, human_us

#: How many producers the remat line names.
_NAMED = 3


def _step(w: WayForward, delta: float) -> str:
    """`` (step ~81.8 ms instead of ~180.3 ms)``, or "" when the step was not simulated."""
    if w.step_us is None:
        return ""
    return f" (simulated step ~{human_us(w.step_us + delta)} instead of ~{human_us(w.step_us)})"


def _fit(w: WayForward) -> str:
    fits = w.fits_on_device
    if fits is None or w.device_bytes is None or w.limit_bytes is None:
        return "; whether that fits is not known (this input has no memory figures)"
    total = w.device_bytes + w.to_host_bytes
    return (f"; device allocation {human_bytes(w.device_bytes)} + {human_bytes(w.to_host_bytes)} = "
            f"{human_bytes(total)}, {'fits in' if fits else 'does NOT fit in'} {human_bytes(w.limit_bytes)}")


def _tune(report: Report, w: WayForward) -> str:
    if w.tune is not None:
        return f"hloscope tune {' '.join(w.tune)} (compiles remat / device / offload per name; docs/tune.md)"
    return (f"hloscope tune --fn MODULE:FUNCTION --args-from MODULE:FUNCTION --target {report.target.name} "
            "--devices N, with your step's function and arguments (this input does not say how the step was "
            "built; docs/tune.md)")


def next_steps_lines(report: Report) -> list[str]:
    """The block under the totals; none when every transfer could be hidden by some placement."""
    w = find_way_forward(report)
    if w is None:
        return []
    names = ", ".join(v.transfer.instruction.name for v in w.stuck)
    lines = [f"next steps: no placement of start and done hides {len(w.stuck)} transfer(s) ({names}), which "
             f"wait ~{human_us(w.wait_us)} per step; rescheduling cannot help, a different policy can:",
             f"  - keep the values on the device (save, not offload): ~{human_bytes(w.to_host_bytes)} more in HBM per "
             f"device{_fit(w)}; their wait goes{_step(w, -w.wait_us)}"]
    if w.recompute:
        shown = ", ".join(f"{r.producer} ~{human_us(r.us)} x{r.executions}" for r in w.recompute[:_NAMED])
        more = f" and {len(w.recompute) - _NAMED} more" if len(w.recompute) > _NAMED else ""
        lines.append(f"  - recompute them (remat): their producers run again, ~{human_us(w.recompute_us)} per step "
                     f"({shown}{more}), in place of the wait{_step(w, w.recompute_us - w.wait_us)}; it frees "
                     f"the ~{human_bytes(w.to_host_bytes)} on the host; a first-order figure: more when a "
                     "producer's own inputs are not kept, nothing where the backward recomputes the value anyway")
    lines.append(f"  - search both per name with compiles: {_tune(report, w)}")
    return lines


def next_steps_dict(w: WayForward) -> dict[str, Any]:
    """The JSON report's ``next_steps`` (docs/json-schema.md)."""
    return {"transfers": [v.transfer.instruction.name for v in w.stuck], "wait_us_per_step": round(w.wait_us, 3),
            "step_us": None if w.step_us is None else round(w.step_us, 3),
            "kept_on_device_bytes_per_step": w.to_host_bytes, "fits_on_device": w.fits_on_device,
            "recompute_us_per_step": round(w.recompute_us, 3),
            "recompute": [{"transfer": r.transfer, "producer": r.producer, "computation": r.computation,
                           "us": round(r.us, 3), "executions": r.executions} for r in w.recompute],
            "tune": f"hloscope tune {' '.join(w.tune)}" if w.tune is not None else None}
