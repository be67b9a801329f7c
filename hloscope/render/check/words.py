"""How every check format words a violation: which tensor, which source line, what the
schedule put beside it and how much stays exposed, from the verdict's facts through
``render.verdict_words`` (nobody has to open the HLO). Shared by the format modules (``check_*``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Any

from hloscope.analysis.kinds import VerdictKind
from hloscope.analysis.report import Report
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.check.baseline import BaselineDiff, Change, Snapshot
from hloscope.check.keys import TransferRecord
from hloscope.check.rules import Emptiness, Finding, NothingToJudge, Reading, StepWait, Violation
from hloscope.render.intent_words import intent_message
from hloscope.render.margin_text import flip_words, margin_line
from hloscope.render.memory_text import room_of
from hloscope.render.name_words import GUESS_MARK, name_text
from hloscope.render.unread_text import unread_clause
from hloscope.render.verdict_words import explain, exposed_clause
from hloscope.render.xla_words import xla_clause
from hloscope.units import human_bytes, human_us


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


def _record_name(r: TransferRecord) -> str:
    """``'key_proj'``, or ``'key_proj' (a guess: by bytes only)`` when only its bytes decided it."""
    return name_text(r.checkpoint, r.name_guessed)


def _record_head(r: TransferRecord) -> str:
    name = _record_name(r) or (f"op {r.key.name}" if r.key.name else "")
    where = f" at {user_source(r.full_source)}" if r.full_source else ""
    detail = f"{r.key.direction} {r.op}, {human_bytes(r.bytes)} x{r.executions}/step"
    return f"{r.instruction} ({detail}{', ' + name if name else ''}){where}"


def _window_text(v: Verdict) -> str:
    ops = [(w.name, w.est_us) for w in (*v.compute, *v.collectives)]
    if not ops:
        return "nothing that does work"
    top = sorted(ops, key=lambda o: -o[1])[:3]
    more = f" and {len(ops) - len(top)} more" if len(ops) > len(top) else ""
    return (f"{len(v.compute)} compute op(s) ~{human_us(v.est_compute_us)}, {len(v.collectives)} collective(s) "
            f"~{human_us(v.est_collective_us)} (largest: {', '.join(f'{n} ~{human_us(us)}' for n, us in top)}{more})")


def _named(r: TransferRecord) -> str:
    """``dynamic-slice-start.1 ('mlp_act' at mlp.py:40)``: the instruction, and the checkpoint name and
    the user's line where the report knows them."""
    said = [_record_name(r)] if r.checkpoint else []
    if r.full_source:
        said.append(f"at {user_source(r.full_source)}")
    return f"{r.instruction} ({' '.join(said)})" if said else r.instruction


def _worst(v: Violation) -> str:
    return "; ".join(f"{_named(r)} ~{human_us(r.exposed_us_per_step)}" for r in v.worst)


def _annotation(v: Violation) -> str:
    assert v.verdict is not None
    a = v.verdict.transfer
    return f"placement annotation {a.instruction.name} ({a.direction}, {human_bytes(a.bytes)} x{a.executions})"


def _fit_words(v: Violation) -> str:
    margin = v.arg("margin")
    room = room_of(v.arg("allocator_bytes"), v.arg("hbm_bytes"))
    less = f" less a {margin:.0%} margin ({human_bytes(v.limit or 0.0)})" if margin else ""
    return (f"device allocation {human_bytes(v.actual or 0.0)} does not fit in {room}{less}; a step over its "
            "memory limit also closes overlap windows")


def violation_message(v: Violation) -> str:
    """One line for a person: what the rule found, from the violation's facts."""
    r, f = v.record, v.finding
    actual, limit = v.actual or 0.0, v.limit or 0.0
    if f is Finding.FAIL_ON and v.verdict is not None:
        return f"{v.verdict.transfer.instruction.name} is {v.verdict.verdict}"
    if f is Finding.SYNC and r is not None:
        return (f"synchronous transfer of {human_bytes(r.bytes)} x{r.executions}/step: the stream waits for it, "
                f"~{human_us(r.exposed_us_per_step)} per step")
    if f is Finding.EXPOSED and r is not None:
        return (f"exposed: async, but nothing hides it; ~{human_us(r.exposed_us_per_step)} per step "
                f"(~{human_us(r.est_exposed_us)} x{r.executions})")
    if f is Finding.EXPOSED_US:
        return (f"~{human_us(actual)} of exposed transfer time per step > {human_us(limit)} allowed "
                f"(largest: {_worst(v)})")
    if f is Finding.EXPOSED_FRACTION:
        loosen = f"; {loosen_words(v)}" if v.arg("default_gate") else ""
        return (f"the step waits on host transfers {actual:.1%} of its estimated time "
                f"(~{human_us(v.arg('exposed_us'))} of ~{human_us(v.arg('step_us'))}) > {limit:.1%} allowed "
                f"(largest: {_worst(v)}){loosen}")
    if f is Finding.HIDDEN_FRACTION:
        return (f"{actual:.1%} of transfer time hidden (~{human_us(v.arg('hidden_us'))} of "
                f"~{human_us(v.arg('transfer_us'))} per step) < {limit:.1%} required (largest exposed: {_worst(v)})")
    if f is Finding.NOT_OFFLOADED:
        guessed = v.arg("guessed") or ()
        names = ", ".join(n + (GUESS_MARK if n in guessed else "") for n in v.arg("names"))
        guess = (f"; {', '.join(guessed)}: a guess (only the bytes of the placement annotations decided which "
                 "request those transfers belong to), so the expected offload may be among them") if guessed else ""
        return (f"expected offload '{v.arg('pattern')}' not found among {v.arg('offloads')} transfer(s) to host "
                f"(names: {names or 'none'}){guess}; was its checkpoint_name lost or the policy changed?")
    if f is Finding.OFFLOADED_BYTES:
        return f"{human_bytes(actual)} per step offloaded to host < {human_bytes(limit)} expected; an offload was lost"
    if f is Finding.ANNOTATION_REMOVED and v.verdict is not None:
        return (f"{_annotation(v)} was removed: the optimized module moves fewer bytes {v.verdict.transfer.direction} "
                "than it annotates")
    if f is Finding.ANNOTATION_SYNC:
        return f"{_annotation(v)} became a synchronous copy ({', '.join(v.arg('became'))})"
    if f is Finding.INTENT_UNACCOUNTED:
        prefix = "no trace, judged from the unoptimized module's annotations: " if v.arg("from_annotations") else ""
        return prefix + intent_message(v.arg("accounted"))
    if f is Finding.PRESET_NOT_TAGGED:
        return intent_message(v.arg("accounted"))
    if f is Finding.DOES_NOT_FIT:
        return _fit_words(v)
    if f is Finding.NOT_IN_HOST_POOL:
        return (f"host memory {human_bytes(actual)} per GPU does not fit in PJRT's pinned-host pool of "
                f"{human_bytes(limit)} (XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB): the step's host buffers fail to "
                "allocate; raise the variable or offload less")
    if f is Finding.MARGIN and v.verdict is not None:
        m = v.arg("margin")
        got, wanted = _apart(actual, limit)
        return (f"{v.verdict.verdict} with a margin of only {got}x < {wanted}x required: "
                f"{flip_words(m, v.verdict.transfer.direction)}")
    if f is Finding.MARGINAL_US and v.verdict is not None:
        return (f"costs the simulated step ~{human_us(actual)} per step (the step without it is that much shorter) "
                f"> {human_us(limit)} allowed; the largest marginal cost of the step: fix it first")
    if f is Finding.UNREAD_WRITE:
        return str(unread_clause(v.arg("write")))
    if f is Finding.CALL_HOST_US:
        call = v.arg("call")
        names = ", ".join(f"output {x.buffer.index} ({human_bytes(x.buffer.size_bytes)})" for x in call.fresh)
        return (f"~{human_us(actual)} of host work per call > {human_us(limit)} allowed: the runtime maps "
                f"{human_bytes(call.fresh_bytes)} of new pinned-host outputs for DMA before the program starts "
                f"({names}); donate the host argument each replaces, or keep them on the chip")
    if f is Finding.BASELINE:
        c = v.arg("change")
        return f"{c.kind}: {c.before} -> {c.after}".strip(" ->:")
    return str(f)


def fail_on_passed_words(wait: StepWait, fail_on: Iterable[VerdictKind], bound: float) -> str:
    """``--fail-on`` passed a step that waits on partial transfers longer than the default gate allows."""
    asked = ",".join(sorted(str(k) for k in fail_on))
    return (f"--fail-on {asked} passed, but the step waits on host transfers {wait.fraction:.1%} of its estimated "
            f"time (~{human_us(wait.exposed_us)} of ~{human_us(wait.step_us)}; {wait.partial} partial transfer(s)): "
            f"`hloscope check` fails on it (its default gate allows {bound:.0%}), and so does --fail-on with partial")


def default_gate_words(bound: float) -> str:
    """The line that says no rule was configured, so the default gate ran (``bound``: its wait fraction)."""
    return ("rules: the default gate (no rule given by a flag or [tool.hloscope]): no sync, no exposed, and the step "
            f"waits on host transfers at most {bound:.0%} of its time (docs/ci.md)")


def loosen_words(v: Violation) -> str:
    """How to loosen the default gate's bound on waiting, with a setting that would pass this step."""
    passes = math.ceil((v.actual or 0.0) * 100) / 100
    return (f"the default gate's bound (docs/ci.md): loosen it with --max-exposed-fraction {passes:g} or "
            f"max-exposed-fraction = {passes:g} in [tool.hloscope] (naming a rule replaces the default gate: name "
            "no-sync and no-exposed too to keep them)")


def _apart(actual: float, limit: float) -> tuple[str, str]:
    """Two factors with 2 decimals, or more until they read apart (1.0556 against 1.06: '1.056' < '1.060')."""
    for digits in (2, 3, 4):
        a, b = f"{actual:.{digits}f}", f"{limit:.{digits}f}"
        if a != b:
            return a, b
    return a, b


def violation_lines(v: Violation, report: Report | None = None) -> list[str]:
    """The first line says what broke; the next ones, for a transfer, what the schedule did with it
    (and, given the ``report``, what XLA's scheduler assumed for it, when its log is known)."""
    rec = v.record
    message = violation_message(v)
    head = f"{_record_head(rec)}: {message}" if rec is not None else message
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
        if report is not None and (margin := margin_line(report, verdict)):
            lines.append(f"margin: {margin}")
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


def emptiness_words(nothing: NothingToJudge) -> str:
    """Why there is nothing to judge, in a clause: ``no host transfer in the module (...)``."""
    if nothing.why is Emptiness.NOT_SCHEDULED:
        return "the module is not scheduled (before optimizations): there is no order to judge"
    if nothing.why is Emptiness.NOT_GPU:
        return ("the module was compiled for neither a GPU nor a TPU (no XLA:GPU stream assignments in it, nothing "
                "showing XLA:TPU)")
    return f"no host transfer in the module (nothing lives in memory space S({nothing.host_space}))"


def empty_words(nothing: NothingToJudge | None) -> str:
    """``check``'s words for a step with nothing to check (its label first), "" for None."""
    if nothing is None:
        return ""
    why = emptiness_words(nothing)
    if nothing.why is Emptiness.NO_TRANSFER:
        why += "; is the offload policy applied?"
    return f"{nothing.label}: {why}" if nothing.label else why


def nothing_to_check_words(nothing: NothingToJudge) -> str:
    """The one line of a check that stops on a step with nothing to check (exit 8)."""
    return f"nothing to check: {empty_words(nothing)} (--allow-empty to pass anyway)"


def describe_snapshot(s: Snapshot) -> str:
    """``9 transfer(s), exposed 17.1 us/step, 28.7 MiB device allocation (fits)``: what a baseline holds."""
    text = f"{len(s.records)} transfer(s), exposed {human_us(s.exposed_us_per_step)}/step"
    if s.device_bytes is None:
        return text + ", no memory figures"
    fits = "" if s.fits is None else (" (fits)" if s.fits else " (does NOT fit)")
    return f"{text}, {human_bytes(s.device_bytes)} device allocation{fits}"



#: What each rule counts, for ``N of M <what>`` (the rules whose measurement is a count).
_COUNTED = {
    "no-sync": "transfers synchronous",
    "no-exposed": "transfers exposed",
    "expect-offloaded": "names offloaded",
    "annotations-accounted": "annotations became async transfers",
    "intent-accounted": "requests produced transfers",
}


def _us(x: float) -> str:
    """Microseconds as the settings are written (one decimal; small values keep their digits)."""
    return f"{x:.1f} us" if x == 0 or abs(x) >= 0.1 else f"{x:.3f} us"


def _fraction(x: float) -> str:
    """``0.0118, 1.2%``: the fraction as the setting is written, and in percent."""
    return f"{x:.3g}, {x:.1%}"


def reading_words(rule: str, m: Reading | None) -> str:
    """What ``rule`` read on the step, beside its setting: ``8.4 us``, ``0 of 9 transfers exposed``,
    ``28.7 MiB of 75.3 GiB allowed``; "" when the rule read nothing (it was not evaluated)."""
    if m is None:
        return ""
    if rule in _COUNTED:
        return f"{m.value:.0f} of {m.of} {_COUNTED[rule]}" if m.value is not None else ""
    if rule in ("max-exposed-us", "max-marginal-us"):
        if m.value is None:
            return "no transfer judged by the simulated step"
        where = f", {m.record.instruction}" if m.record is not None and rule == "max-marginal-us" else ""
        return ("largest " if rule == "max-marginal-us" else "") + _us(m.value) + where
    if rule in ("max-exposed-fraction", "min-hidden-fraction"):
        return _fraction(m.value) if m.value is not None else ""
    if rule == "min-offloaded-bytes":
        return f"{m.value:.0f}, {human_bytes(m.value)}" if m.value is not None else ""
    if rule == "min-margin":
        if m.value is None:
            return ("no transfer judged by the simulated step" if not m.of
                    else f"no verdict of {m.of} flips between 0.105x and 9.51x")
        return f"smallest {m.value:.2f}x, {m.record.instruction}" if m.record is not None else f"{m.value:.2f}x"
    if rule == "fits-hbm" and m.value is not None:
        return f"device allocation {human_bytes(m.value)} of {human_bytes(m.limit or 0.0)} allowed"
    if rule == "max-call-host-us" and m.value is not None:
        return f"{_us(m.value)} per call, {m.of} new host output buffer(s)"
    if rule == "no-unread-host-writes" and m.value is not None:
        return f"{human_bytes(m.value)} per step never read, of {human_bytes(m.limit or 0.0)} written to host"
    if rule == "fits-host-pool" and m.value is not None:
        return f"host {human_bytes(m.value)} per GPU of a {human_bytes(m.limit or 0.0)} pool"
    return f"{m.value:g}" if m.value is not None else ""
