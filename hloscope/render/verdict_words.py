"""Sentences from verdict facts: the one place where a :class:`Verdict` becomes words.

``explain(verdict)`` is the ``why`` of the table and the JSON; the TUI, check
messages and diagrams call the same functions, so every view says the same.
"""

from __future__ import annotations

from hloscope.analysis.kinds import Direction, Reason, VerdictKind
from hloscope.analysis.simulate.contention import MEMORY_BOUND_HINT_AT, memory_bound_share
from hloscope.analysis.simulate.slack import Slack
from hloscope.analysis.simulate.timeline import HeldUp, HoldKind
from hloscope.analysis.simulate.verdict import FirstUse, InputReady, Verdict
from hloscope.render.platforms import PlatformWords
from hloscope.units import human_us

_REASONS = {
    Reason.NOT_SCHEDULED: "module is not scheduled (before optimizations): no order to judge; "
                          "compile it to see the schedule",
    Reason.SYNCHRONOUS: "synchronous: the stream waits for the whole transfer",
    Reason.NO_DONE: "no matching done found: cannot place the transfer's window",
    Reason.UNKNOWN_WINDOW: "start and done are in computations hloscope cannot relate; window unknown",
    Reason.EMPTY_WINDOW: "done placed directly after start: nothing scheduled in between",
}


#: The words of a step whose platform is not given.
_NO_PLATFORM = PlatformWords()


def reason_text(v: Verdict, words: PlatformWords = _NO_PLATFORM) -> str:
    """What decided the verdict, in one clause; ``words``: the platform's
    (``hloscope.render.platforms.platform_words``)."""
    core = words.core
    if v.reason in _REASONS:
        return _REASONS[v.reason]
    if v.reason is Reason.ONLY_FREE_OPS:
        text = f"window holds {v.window_size} instruction(s) but no compute and no collective"
        hidden = hidden_without_window_work(v, words)
        return f"{text}; {hidden}" if hidden else text
    window = (f"window: {len(v.compute)} compute op(s) ~{human_us(v.est_compute_us)}, "
              f"{len(v.collectives)} collective(s) ~{human_us(v.est_collective_us)}, "
              f"vs transfer ~{human_us(v.est_transfer_us)}")
    if v.reason in (Reason.SIMULATED, Reason.HELD_UP) and v.timing is not None:
        t = v.timing
        wait = (f"the {core} waits ~{human_us(t.mean_wait_us)} at its done" if t.mean_wait_us > 0
                else f"the {core} never waits at its done")
        shared = (f", the link shared with {len(t.beside_transfers)} other transfer(s) in flight"
                  if t.beside_transfers else "")
        if slowed_by_link(v):
            by = (f"{len(t.beside_transfers)} other transfer(s) in flight on the {_link(v)} link"
                  if t.beside_transfers else f"transfers queued ahead of it on the {_link(v)} link")
            wait += (f", longer than the transfer alone (~{human_us(v.est_transfer_us)}): {by} slowed it to "
                     f"~{human_us(t.duration_us)}")
            shared = ""
        hidden = hidden_without_window_work(v, words)
        if hidden:
            wait += f" ({hidden})"
        if v.reason is Reason.HELD_UP:
            wait += (f", but ~{human_us(t.blame_per_execution_us)} per execution of the step's waits are charged to "
                     "it (it held other transfers up)")
        return f"simulated step: {wait}{shared}; {window} (estimates)"
    hidden = hidden_without_window_work(v, words)
    return window + (f"; {hidden}" if hidden else "") + " (estimates)"


_WHERE = {HoldKind.ENGINE: "on the {link} {engine}", HoldKind.STREAM: "issued ahead of it on the same XLA stream",
          HoldKind.LINK: "sharing the {link} link"}


def _where(h: HeldUp, link: str, words: PlatformWords) -> str:
    return _WHERE[h.where].format(link=link, engine=words.engine)


def held_up_clause(v: Verdict, words: PlatformWords = _NO_PLATFORM) -> str | None:
    """Whom the transfer held up and for how long (None when it held no one up)."""
    t = v.timing
    if t is None or not t.held_up:
        return None
    parts = [f"{h.other} ~{human_us(h.per_execution_us)} per execution at its done ({_where(h, _link(v), words)})"
             for h in t.held_up[:3]]
    more = f" and {len(t.held_up) - 3} more" if len(t.held_up) > 3 else ""
    return (f"it held {', '.join(parts)}{more}: ~{human_us(t.held_up_us)} per step of their waits are charged to it "
            f"(its blame: ~{human_us(t.blame_us)} per step)")


def held_back_clause(v: Verdict, words: PlatformWords = _NO_PLATFORM) -> str | None:
    """Who held the transfer up and how much of its wait is theirs (None when no one did)."""
    t = v.timing
    if t is None or not t.held_back_by or t.wait_us_per_step <= 0:
        return None
    parts = [f"~{human_us(h.us / t.executions if t.executions else 0.0)} per execution to {h.other} "
             f"({_where(h, _link(v), words)})" for h in t.held_back_by[:3]]
    more = f" and {len(t.held_back_by) - 3} more" if len(t.held_back_by) > 3 else ""
    return (f"its wait is charged {', '.join(parts)}{more}, "
            f"~{human_us(t.blame_per_execution_us)} per execution to itself")


def stream_queue_clause(v: Verdict) -> str | None:
    """The ops ahead of the transfer on its XLA execution stream and the time it lost behind them
    (None when it did not wait there)."""
    t = v.timing
    if t is None or t.stream is None or t.queued_us < 0.05 or not t.queued_behind:
        return None
    ahead = ", ".join(t.queued_behind[:3]) + (f" and {len(t.queued_behind) - 3} more" if len(t.queued_behind) > 3
                                               else "")
    label = t.stream.label  # compute:1, or memcpy_d2h (one stream of its kind)
    where = label.replace(":", " stream ") if ":" in label else f"{label} stream"
    return (f"it shares XLA's {where} with {ahead}, issued ahead of it "
            f"and still running: it waited ~{human_us(t.queued_us)} behind them before its bytes moved")


def engine_wait_clause(v: Verdict, words: PlatformWords = _NO_PLATFORM) -> str | None:
    """The copies the transfer waited behind for its direction's copy engine, and how long (None
    when it took an engine as soon as it was ready)."""
    t = v.timing
    if t is None or t.engine_wait_us < 0.05 or not t.engine_behind:
        return None
    ahead = ", ".join(t.engine_behind[:3]) + (f" and {len(t.engine_behind) - 3} more" if len(t.engine_behind) > 3
                                               else "")
    return (f"it waited ~{human_us(t.engine_wait_us)} behind {ahead} for a {_link(v)} {words.engine} before its bytes "
            "moved")


def slack_clause(s: Slack) -> str:
    """The window a transfer could have had beside the one it got, and whether it would hide it."""
    after = f"its input ({s.ready_after})" if s.ready_after else "the top of its computation (inputs ready there)"
    until = (f"its first real use ({s.needed_by})" if s.needed_by
             else "the end of its computation (only the loop state or the result reads it)")
    verdict = (f"enough to hide its ~{human_us(s.transfer_us)}" if s.could_hide
               else f"not enough for its ~{human_us(s.transfer_us)}: no placement of its start and done hides it")
    return (f"could have had {s.possible_ops} compute op(s) ~{human_us(s.possible_compute_us)} between {after} and "
            f"{until}, against {s.got_ops} op(s) ~{human_us(s.got_compute_us)} in the window it got: {verdict}")


def _link(v: Verdict) -> str:
    return "D->H" if v.transfer.direction is Direction.TO_HOST else "H->D"


def slowed_by_link(v: Verdict) -> bool:
    """The simulated wait at the done is longer than the transfer alone would take: the host link,
    shared with other transfers in flight, stretched it (a fact of the timing, not a guess)."""
    t = v.timing
    return (t is not None and t.matched and v.est_exposed_us > v.est_transfer_us + 0.05
            and t.duration_us > t.transfer_us + 0.05)


def exposed_clause(v: Verdict) -> str:
    """``exposed ~0.4 of ~1.2 us per execution``; when the exposed time is longer than the transfer
    itself, the reason beside it: ``exposed ~2.1 us per execution, longer than the transfer alone
    (~1.2 us): slowed to ~2.1 us by 1 other transfer on the D->H link``."""
    exposed, alone = v.est_exposed_us, v.est_transfer_us
    if not slowed_by_link(v):
        return f"exposed ~{human_us(exposed)} of ~{human_us(alone)} per execution"
    t = v.timing
    assert t is not None
    n = len(t.beside_transfers)
    by = (f"by {n} other transfer(s) on the {_link(v)} link" if n else
          f"by transfers queued ahead of it on the {_link(v)} link")
    return (f"exposed ~{human_us(exposed)} per execution, longer than the transfer alone (~{human_us(alone)}): "
            f"slowed to ~{human_us(t.duration_us)} {by}")


def hidden_without_window_work(v: Verdict, words: PlatformWords = _NO_PLATFORM) -> str | None:
    """Why a transfer with no compute and no collective in its own window is still hidden:
    what the simulated step ran while it was in flight (None when that is not the case)."""
    if v.verdict is not VerdictKind.HIDDEN or v.compute or v.pair is None:
        return None
    if v.collectives:
        return (f"hidden behind {len(v.collectives)} collective(s) (~{human_us(v.est_collective_us)}) in its window; "
                "no compute op runs in it")
    t = v.timing
    if t is not None and t.matched and (t.beside_compute or t.beside_collectives):
        coll = f" and {len(t.beside_collectives)} collective(s)" if t.beside_collectives else ""
        return (f"hidden although its window holds no compute: in the simulated step "
                f"{len(t.beside_compute)} compute op(s) (~{human_us(t.compute_beside_us)}){coll} ran while it "
                "was in flight (its done waits on them, not on work between start and done)")
    if t is not None and t.matched:
        return (f"hidden although its window holds no compute: in the simulated step the {words.core} "
                "reaches its done only after the transfer has finished (it was busy elsewhere)")
    return None


def input_hint(r: InputReady) -> str:
    """When the start's input was ready, and whether an earlier start had room."""
    if r.from_top:
        return ("its inputs are available from the top of the computation, "
                f"{r.ops_before_start} op(s) before the start")
    if r.ops_before_start > 0 and r.work_ops_between > 0:
        return f"its input {r.producer.name} is produced {r.ops_before_start} op(s) before the start"
    if r.ops_before_start > 0:
        return (f"the start follows the op producing its input ({r.producer.name}) with no compute between "
                f"({r.ops_before_start} op(s))")
    return f"the start follows the op producing its input ({r.producer.name}) directly"


def use_hint(u: FirstUse) -> str:
    """Who first needs the result, and whether a later done had room."""
    what = "the loop state for the next iteration" if u.is_loop_state else u.user.name
    if u.ops_after_done > 0 and u.work_ops_between > 0:
        return (f"nothing forced the early done: the first real use of its result ({what}) "
                f"comes {u.ops_after_done} op(s) later")
    if u.ops_after_done > 0:
        return f"its result is needed by {what} {u.ops_after_done} op(s) later, with no compute between"
    return f"its result is needed at once by {what}"


def explain(v: Verdict, words: PlatformWords = _NO_PLATFORM) -> str:
    """The full ``why`` of a verdict: reason, shared link, and (for exposed/partial) the hints;
    ``words``: the step's platform's (``hloscope.render.platforms.platform_words``)."""
    text = reason_text(v, words)
    simulated = v.reason in (Reason.SIMULATED, Reason.HELD_UP)
    if v.other_transfers and not simulated:  # the simulated clause says it, with timing
        text += f"; shares the host link with {len(v.other_transfers)} other transfer(s) in its window"
    if not simulated and slowed_by_link(v):
        text += f"; {exposed_clause(v)}"
    if queue := stream_queue_clause(v):
        text += f"; {queue}"
    if engine := engine_wait_clause(v, words):
        text += f"; {engine}"
    if held := held_up_clause(v, words):
        text += f"; {held}"
    if back := held_back_clause(v, words):
        text += f"; {back}"
    if v.verdict in (VerdictKind.EXPOSED, VerdictKind.PARTIAL) and v.pair is not None:
        hints = []
        if v.input_ready is not None:
            hints.append(input_hint(v.input_ready))
        if v.first_use is not None:
            hints.append(use_hint(v.first_use))
        share = memory_bound_share(v.timing)
        if share is not None and share.fraction >= MEMORY_BOUND_HINT_AT:
            hints.append(f"{share.fraction:.0%} of the compute beside it (~{human_us(share.memory_bound_us)} of "
                         f"~{human_us(share.compute_us)}) is memory-bound kernels, which share HBM with the copy")
        if hints:
            text += "; " + "; ".join(hints)
    return text
