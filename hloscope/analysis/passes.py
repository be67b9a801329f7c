"""The passes of one analysis, declared once, in the order they run (:data:`PASSES`).

Every row is a :class:`~hloscope.analysis.context.Pass`: a name (the
:class:`~hloscope.analysis.report.Report` field it fills) and a function of one
:class:`~hloscope.analysis.context.StepContext` returning its typed result. A pass reads
only the rows above it (``ctx[TRANSFERS]``). ``analyze_step`` runs the table and builds the
report by keyword from it; adding a pass is one module, one row here, one Report field and
its render section (docs/passes.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from hloscope.analysis.context import Pass, StepContext
from hloscope.analysis.host_call import HostCall, price_host_call
from hloscope.analysis.inputs import int_figures
from hloscope.analysis.intent.account import account_step
from hloscope.analysis.intent.naming import find_named_transfers
from hloscope.analysis.intent.outcome import IntentAccount
from hloscope.analysis.intent.remat import RematClones, count_remat_clones
from hloscope.analysis.kinds import Direction
from hloscope.analysis.measured.compare import MeasuredComparison, compare_measured
from hloscope.analysis.measured.host_maps import measure_host_maps
from hloscope.analysis.memory import MemoryFacts, facts_from_dumps
from hloscope.analysis.simulate.drain import SerialDrain, find_serial_drains
from hloscope.analysis.simulate.overlap import judge_overlap
from hloscope.analysis.simulate.slack import Slack, find_slack
from hloscope.analysis.simulate.step import simulate_step
from hloscope.analysis.simulate.summary import Summary, summarize
from hloscope.analysis.simulate.timeline import Timeline, waits_per_step
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.analysis.simulate.xla_view import XlaEstimates, compare_with_xla
from hloscope.analysis.structure.entry_buffers import find_entry_host_buffers
from hloscope.analysis.structure.host_work import HostWork, find_host_work
from hloscope.analysis.structure.pairs import AsyncPair, pair_async_ops
from hloscope.analysis.structure.streams import StreamAssignment, assign_execution_streams, stream_model
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.analysis.structure.unread import UnreadHostWrites, find_unread_host_writes
from hloscope.hlo.xla_log import parse_xla_log


def _transfers(ctx: StepContext) -> tuple[HostTransfer, ...]:
    """Every host transfer, each built once with its one name (``hloscope.analysis.intent.naming``)."""
    i = ctx.inputs
    return tuple(find_named_transfers(ctx.index, ctx.options.host_space, i.names, i.intent, i.unoptimized))


TRANSFERS = Pass("transfers", _transfers)


def _pairs(ctx: StepContext) -> tuple[AsyncPair, ...]:
    return tuple(pair_async_ops(ctx.index))


PAIRS = Pass("pairs", _pairs)


def _streams(ctx: StepContext) -> StreamAssignment | None:
    """XLA's stream assignment of the version that compiled the step (docs/streams.md); None unscheduled,
    or on a platform whose async ops have no streams (``hloscope.analysis.platforms``)."""
    if not ctx.module.is_scheduled or not ctx.backend.xla_streams:
        return None
    return assign_execution_streams(ctx.index, model=stream_model(ctx.inputs.versions.get("jaxlib"), ctx.module))


STREAMS = Pass("streams", _streams)


def _timeline(ctx: StepContext) -> Timeline | None:
    if not (ctx.options.simulate and ctx.module.is_scheduled):
        return None
    return simulate_step(ctx.module, ctx.cost, list(ctx[PAIRS]), list(ctx[TRANSFERS]), ctx.index.callgraph,
                         streams=ctx[STREAMS])


TIMELINE = Pass("timeline", _timeline)


def _verdicts(ctx: StepContext) -> tuple[Verdict, ...]:
    """One verdict per transfer, same order, each decided once (window, then simulated wait)."""
    return tuple(judge_overlap(ctx.index, ctx[TRANSFERS], ctx.cost, ctx[PAIRS], ctx.options, ctx[TIMELINE]))


VERDICTS = Pass("verdicts", _verdicts)


def _summary(ctx: StepContext) -> Summary:
    return summarize(ctx[VERDICTS], ctx.index.callgraph.unknown_trip, ctx[TIMELINE], ctx.cost.implausible())


SUMMARY = Pass("summary", _summary)


def _remat(ctx: StepContext) -> RematClones | None:
    return count_remat_clones(ctx.index, ctx.cost, ctx.options.host_space) if ctx.module.is_scheduled else None


REMAT = Pass("remat", _remat)


def _slack(ctx: StepContext) -> tuple[Slack | None, ...]:
    return find_slack(ctx.index, ctx[VERDICTS], ctx.cost) if ctx.module.is_scheduled else ()


SLACK = Pass("slack", _slack)


def _memory(ctx: StepContext) -> MemoryFacts | None:
    """Device and host memory facts, when the compile's figures are known."""
    i = ctx.inputs
    if i.memory_figures is None or not i.has_memory:
        return None
    pool = ctx.backend.host_pool_bytes(ctx.options.host_pool_bytes)  # 0 where the runtime has no pool
    return facts_from_dumps(int_figures(i.memory_figures), ctx.target, i.dumps, ctx.index, i.vocab_size,
                            offloaded_names(ctx[TRANSFERS]), pool, i.figures,
                            on_chip=ctx.backend.on_chip_spaces)


MEMORY = Pass("memory", _memory)


def _intent(ctx: StepContext) -> IntentAccount | None:
    i = ctx.inputs
    return account_step(i.intent, ctx[VERDICTS], ctx.module, i.unoptimized, ctx.index)


INTENT = Pass("intent", _intent)


def _xla(ctx: StepContext) -> XlaEstimates | None:
    """What XLA's scheduler believed about each async transfer, when its log is known."""
    text = ctx.inputs.dumps.scheduler_log
    if not text:
        return None
    log = parse_xla_log(text, ctx.module.name)
    return compare_with_xla(log, ctx[VERDICTS], {s.computation: ctx.index.executions(s.computation) for s in log.stats})


XLA = Pass("xla", _xla)


def _measured(ctx: StepContext) -> MeasuredComparison | None:
    profile = ctx.options.compare_with
    if profile is None:
        return None
    timeline, pairs = ctx[TIMELINE], ctx[PAIRS]
    return compare_measured(ctx.index, ctx.cost, pairs, ctx[TRANSFERS], profile,
                            timeline.step_us if timeline else None, waits_per_step(timeline, pairs),
                            {v.transfer.instruction.name: v.verdict for v in ctx[VERDICTS]},
                            ctx.options.thresholds.verdict)


MEASURED = Pass("measured", _measured)


def _host_work(ctx: StepContext) -> HostWork:
    return find_host_work(ctx.index, ctx.options.host_space)


HOST_WORK = Pass("host_work", _host_work)


def _drains(ctx: StepContext) -> tuple[SerialDrain, ...]:
    timeline = ctx[TIMELINE]
    return find_serial_drains(timeline) if timeline is not None else ()


DRAINS = Pass("drains", _drains)

def _unread(ctx: StepContext) -> UnreadHostWrites:
    """Per write to host, the bytes nothing reads back, priced on the target's D->H link."""
    cost = ctx.cost
    return find_unread_host_writes(ctx.index, ctx[TRANSFERS], ctx.options.host_space,
                                   lambda n: cost.transfer_us(n, Direction.TO_HOST) if n else 0.0)


UNREAD = Pass("unread", _unread)


def _host_call(ctx: StepContext) -> HostCall:
    """The host buffers the runtime maps on every call, priced on the target, beside the simulated step."""
    timeline, lines = ctx[TIMELINE], ctx.options.host_lines
    return price_host_call(find_entry_host_buffers(ctx.module, ctx.options.host_space), ctx.target,
                           timeline.step_us if timeline is not None else None,
                           measure_host_maps(lines, ctx.module.name) if lines is not None else None)


HOST_CALL = Pass("host_call", _host_call)

#: Every pass, in the order it runs.
PASSES: tuple[Pass[object], ...] = (TRANSFERS, PAIRS, STREAMS, TIMELINE, VERDICTS, SUMMARY, REMAT, SLACK, MEMORY,
                                    INTENT, XLA, MEASURED, HOST_WORK, DRAINS, UNREAD, HOST_CALL)


def offloaded_names(transfers: Sequence[HostTransfer]) -> tuple[str, ...]:
    """The checkpoint names (else instruction names) of the step's transfers to host, sorted."""
    names = {t.checkpoint_name or t.instruction.name for t in transfers if t.direction is Direction.TO_HOST}
    return tuple(sorted(names))
