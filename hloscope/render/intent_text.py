"""The "offloads asked for" section: each request of the traced step and what became of it.

``intent_lines(account)`` is the text report's first section (``render/table.py``
puts it first); ``intent_headline(account)`` is its one-line summary (the TUI's
pane title, ``print(report)``); ``intent_dict(account)`` is the JSON report's
``intent`` value (docs/json-schema.md). An account is
``hloscope.analysis.intent.outcome.IntentAccount``; None (the step was not traced, and no
unoptimized module stands in) gives no section.
"""

from __future__ import annotations

from typing import Any

from hloscope.analysis.intent.model import AskKind
from hloscope.analysis.intent.outcome import Accounted, AccountSource, Fact, IntentAccount, Why
from hloscope.analysis.kinds import Direction, VerdictKind
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.render.intent_words import (
    WHY_MEANING,
    asked_policy,
    asked_what,
    asked_words,
    detail_words,
    fact_dict,
    fact_words,
    preset_words,
)
from hloscope.render.name_words import guessed
from hloscope.units import human_bytes

#: The mark in front of each request: what a person should read first. A request that became transfers is
#: marked by how they fared, never by a word that reads as success when they wait (issue 53: "done" and
#: "ok" were read so): ``hidden`` when every one is, else the worst verdict among them in capitals.
MARK: dict[Why, str] = {
    Why.TRANSFERRED: "hidden",
    Why.SYNC_COPY: "SYNC",
    Why.PARTLY_REMOVED: "PART",
    Why.NOT_INSPECTABLE: "??",
    Why.NOT_A_TRANSFER: "--",
    Why.PRESET_NOT_TAGGED: "--",
    Why.UNKNOWN: "NONE?",
}

#: The marks of a request whose transfers are not all hidden: its worst verdict, worst first.
WORST_MARKS = {VerdictKind.SYNC: "SYNC", VerdictKind.EXPOSED: "EXPOSED", VerdictKind.PARTIAL: "PARTIAL"}
#: The widest mark: the column the request's words start at.
MARK_WIDTH = 7


def mark(a: Accounted) -> str:
    """``hidden`` (became transfers, all hidden), ``SYNC`` / ``EXPOSED`` / ``PARTIAL`` (became transfers, the
    worst of them so; also ``SYNC`` for an annotation that became a synchronous copy), ``PART`` (became
    transfers only in part), ``NONE`` (no transfer), ``NONE?`` (none found, cause unknown), ``??``, ``--``
    (none expected)."""
    if a.why is Why.TRANSFERRED:
        return next((m for k, m in WORST_MARKS.items() if k in a.by_verdict), MARK[Why.TRANSFERRED])
    return MARK.get(a.why, "NONE")


def fare_words(a: Accounted) -> str:
    """How the request's transfers fared, worst first: ``1 exposed, 2 hidden``; ``all hidden``."""
    counts = a.by_verdict
    if set(counts) == {VerdictKind.HIDDEN}:
        return "all hidden"
    return ", ".join(f"{counts[k]} {k}" for k in VerdictKind if k in counts)


def transfers_words(a: Accounted) -> str:
    """``offloaded; 3 transfer(s), 1 exposed, 2 hidden; to host 64.0 KiB/step, to device 32.0 KiB/step;
    8 execution(s)/step``: that it happened and how it fared, then what moved."""
    if not a.transfers:
        return ""
    b = a.bytes_per_step
    dirs = [f"{d.replace('_', ' ')} {human_bytes(b[d])}/step" for d in Direction if b[d]]
    return (f"offloaded; {len(a.transfers)} transfer(s), {fare_words(a)}; {', '.join(dirs)}; "
            f"{a.executions} execution(s)/step")


#: Beside a listed transfer whose name only its bytes decided (a guess).
GUESSED = "name guessed by bytes"


def transfer_words(v: Verdict) -> str:
    """``dynamic-update-slice-start.2.0 (to_host, partial)``; ``..., name guessed by bytes)`` for a guess."""
    guess = f", {GUESSED}" if guessed(v.transfer) else ""
    return f"{v.transfer.instruction.name} ({v.transfer.direction}, {v.verdict}{guess})"


def intent_headline(account: IntentAccount | None) -> str:
    """One line: how many requests, how many produced no transfer. "" when there is no account."""
    if account is None:
        return ""
    if account.source is AccountSource.ANNOTATIONS:
        lost = len(account.unaccounted)
        return (f"offloads asked for (no trace: from the unoptimized module's {len(account.items)} placement "
                f"annotation(s)): {lost} produced no transfer" if lost else
                f"offloads asked for (no trace: from the unoptimized module's {len(account.items)} placement "
                "annotation(s)): every one became transfers")
    preset = account.preset_untagged
    asked = [a for a in account.items if a.why not in (Why.NOT_A_TRANSFER, Why.PRESET_NOT_TAGGED)]
    if not asked and not preset:
        return "offloads asked for: none (no offload policy, host placement or host copy in the traced step)"
    gone = account.unaccounted
    partly = account.partly
    unread = account.not_inspectable
    parts = [f"{len(asked)} request(s)"]
    if gone:
        names = ", ".join(asked_words(a.asked) for a in gone)
        parts.append(f"{len(gone)} produced NO transfer ({names})")
    if partly:
        names = ", ".join(asked_words(a.asked) for a in partly)
        parts.append(f"{len(partly)} became transfers only in PART ({names})")
    if not gone and not partly:
        parts.append("every readable one became transfers")
    if unread:
        parts.append(f"{len(unread)} policy(ies) not inspectable")
    for setting, items in _by_preset(preset).items():
        names = ", ".join(a.asked.what for a in items)
        parts.append(f"{len(items)} name(s) listed by {setting} never tagged by this model ({names})")
    return "offloads asked for: " + "; ".join(parts)


def _by_preset(items: tuple[Accounted, ...]) -> dict[str, list[Accounted]]:
    out: dict[str, list[Accounted]] = {}
    for a in items:
        out.setdefault(preset_words(a.asked.preset), []).append(a)
    return out


#: Where a request's detail lines start: under its words, after the mark.
_INDENT = " " * (2 + MARK_WIDTH + 1)


def intent_lines(account: IntentAccount | None) -> list[str]:
    """The section, ending with a blank line; [] when there is no account."""
    if account is None:
        return []
    lines = [intent_headline(account)]
    for a in account.items:
        where = f" at {a.asked.where}" if a.asked.where is not None else ""
        said = asked_policy(a.asked)
        policy = f" [{said}]" if said and a.asked.kind is not AskKind.POLICY else ""
        lines.append(f"  {mark(a):{MARK_WIDTH}} {asked_words(a.asked)}{where}{policy}")
        if a.transfers:
            lines.append(f"{_INDENT}{transfers_words(a)}")
            shown = a.transfers[:6]
            lines.append(f"{_INDENT}" + ", ".join(transfer_words(v) for v in shown)
                         + (" ..." if len(a.transfers) > len(shown) else ""))
        if a.why is not Why.TRANSFERRED:
            lines.append(f"{_INDENT}{a.why}: {detail_words(a.detail)}")
        elif a.detail and a.detail[-1].fact is not Fact.CARRY_THE_NAME:
            lines.append(f"{_INDENT}{detail_words(a.detail)}")
    explained = (*account.unaccounted, *account.partly, *account.preset_untagged)
    if explained:
        reasons = dict.fromkeys(a.why for a in explained)
        lines.append("  reasons: " + "; ".join(f"{w}: {WHY_MEANING[w]}" for w in reasons))
    lines.append("")
    return lines


def _accounted_dict(a: Accounted) -> dict[str, Any]:
    w = a.asked.where
    b = a.bytes_per_step
    return {
        "kind": str(a.asked.kind),
        "what": asked_what(a.asked),
        "policy": asked_policy(a.asked),
        "memory": a.asked.memory,
        "source": str(w) if w is not None else "",
        "source_file": w.file if w is not None else "",
        "source_line": w.line if w is not None else None,
        "preset": preset_words(a.asked.preset),
        "why": str(a.why),
        "mark": mark(a),
        "produced_transfers": not a.produced_no_transfer and a.why not in (Why.NOT_INSPECTABLE, Why.NOT_A_TRANSFER,
                                                                          Why.PRESET_NOT_TAGGED),
        "detail": detail_words(a.detail),
        "facts": [fact_dict(d) for d in a.detail],
        "suggestions": list(a.suggestions),
        "transfers": [v.transfer.instruction.name for v in a.transfers],
        "guessed_transfers": [v.transfer.instruction.name for v in a.transfers if guessed(v.transfer)],
        "to_host_bytes_per_step": b[Direction.TO_HOST],
        "to_device_bytes_per_step": b[Direction.TO_DEVICE],
        "executions_per_step": a.executions,
        "by_verdict": {str(k): n for k, n in sorted(a.by_verdict.items())},
    }


def intent_dict(account: IntentAccount) -> dict[str, Any]:
    """The JSON report's ``intent`` value."""
    return {
        "source": account.source,
        "headline": intent_headline(account),
        "requests": [_accounted_dict(a) for a in account.items],
        "unaccounted": len(account.unaccounted),
        "partly": len(account.partly),
        "preset_untagged": len(account.preset_untagged),
        "checked": [fact_words(c) for c in account.checked],
        "checked_facts": [fact_dict(c) for c in account.checked],
    }
