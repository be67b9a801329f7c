"""What became of each request of the step ("did my offload happen?"): the accounting pass.

Pass: ``account_intent(intent, verdicts, module, unoptimized, index) -> IntentAccount``: each
request (``hloscope.analysis.intent.model.Asked``) matched with the transfers it became, or given
one reason from :class:`~hloscope.analysis.intent.outcome.Why` (docs/offload-happened.md), with
the facts behind it as :class:`~hloscope.analysis.intent.outcome.Detail` values (a ``Fact`` and its
names and figures); ``hloscope.render.intent_words`` words them. A name request lists exactly the
transfers that carry its name: the naming pass (``hloscope.analysis.intent.naming``) decided each
transfer's name once, by data flow or, where only bytes told requests apart, as a guess the facts
mark; the accounting never names a transfer itself. ``account_annotations_only`` is the fallback
for a plain HLO file (no trace): the unoptimized module's placement annotations stand in for the
requests. No JAX.

Never an unmarked guess: where the cause cannot be known the reason is ``unknown`` and the
detail says what was checked; transfers whose name only bytes decided carry the
``named-by-bytes`` fact.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence

from hloscope.analysis.intent.annotations import AnnotationMatch, Fate, match_annotations, placement_annotations
from hloscope.analysis.intent.model import (
    Asked,
    AskKind,
    Intent,
    Placement,
    PlacementKind,
    Preset,
    Tag,
    Where,
    copy_lines,
    requested_names,
    requests,
)
from hloscope.analysis.intent.outcome import (
    Accounted,
    AccountSource,
    Arg,
    Detail,
    Fact,
    IntentAccount,
    Why,
    account_of,
    fact,
)
from hloscope.analysis.kinds import Direction, VerdictKind
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.analysis.structure.callgraph import CallGraph, enclosing_loops
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.transfer_names import host_writers
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.hlo.model import Instruction, Module

# Preset, Fact, IntentAccount, Why and account_of stay importable from here while the TUI and
# compile/maxtext.py, which other work is moving, still import them so.
__all__ = ["Fact", "IntentAccount", "Preset", "Why", "account_annotations_only", "account_intent", "account_of",
           "account_step", "annotation_owners", "loops_run_once"]


def _line_of(module: Module | None, t: HostTransfer) -> list[tuple[str, int]]:
    out = []
    if t.source is not None:
        out.append((t.source.file, t.source.line))
    if module is not None:
        own = module.source_location(t.instruction)
        if own is not None:
            out.append((own.file, own.line))
    return out


#: Opcodes an annotation's operand is followed through to the instruction that computed it.
_THROUGH = frozenset({"bitcast", "reshape", "copy", "convert", "reduce-precision", "transpose", "get-tuple-element",
                      "opt-barrier", "optimization-barrier"})


def _operand_lines(module: Module, a: HostTransfer) -> list[tuple[str, int]]:
    """The annotation's own line and the line of the value it places (through reshapes and casts)."""
    out = _line_of(module, a)
    table = module.computations[a.computation].by_name
    cur = table.get(a.instruction.operands[0]) if a.instruction.operands else None
    for _ in range(16):
        if cur is None:
            break
        loc = module.source_location(cur)
        if loc is not None:
            out.append((loc.file, loc.line))
            break
        if cur.opcode not in _THROUGH or not cur.operands:
            break
        cur = table.get(cur.operands[0])
    return out


def _sync(vs: Sequence[Verdict]) -> bool:
    return any(v.verdict is VerdictKind.SYNC for v in vs)


def _became(asked: Asked, vs: Sequence[Verdict], *detail: Detail, removed: Sequence[Detail] = ()) -> Accounted:
    """A request that became the transfers ``vs``; ``removed``: the facts of its placement annotations
    XLA removed (:meth:`_Lowered.part_removed`), which make it ``partly-removed``."""
    why = Why.PARTLY_REMOVED if removed else Why.TRANSFERRED
    if _sync(vs):
        n = sum(1 for v in vs if v.verdict is VerdictKind.SYNC)
        return Accounted(asked, why if removed else Why.SYNC_COPY, (*detail, fact(Fact.SOME_SYNC, n=n), *removed),
                         tuple(vs))
    return Accounted(asked, why, (*detail, *removed), tuple(vs))


class _Lowered:
    """What the unoptimized module says about host placements, and what became of each.

    Every placement annotation is matched with optimized transfers of its bytes by
    ``hloscope.analysis.intent.annotations.match_annotations`` (the ``annotations-accounted``
    rule's matching): ``fate`` is the match of each, by ``id`` of the annotation.
    """

    def __init__(self, unoptimized: Module | None, transfers: Sequence[HostTransfer], partitions: int) -> None:
        self.unoptimized = unoptimized
        self.known = unoptimized is not None
        # One index of the unoptimized module: its annotations now, its call graph if one is removed.
        self.unoptimized_index = ModuleIndex(unoptimized) if unoptimized is not None else None
        self.annotations = (placement_annotations(self.unoptimized_index) if self.unoptimized_index is not None
                            else [])
        self.to_host = [a for a in self.annotations if a.direction is Direction.TO_HOST]
        parts = max(partitions, unoptimized.num_partitions if unoptimized is not None else 1, 1)
        self.fate: dict[int, AnnotationMatch] = {
            id(m.annotation): m for m in match_annotations(self.annotations, transfers, parts)}

    def removed(self) -> list[HostTransfer]:
        return [a for a in self.annotations if self.fate[id(a)].fate is Fate.REMOVED]

    def loops_run_once(self, annotations: Sequence[HostTransfer]) -> Detail | None:
        """:func:`loops_run_once` of the unoptimized module (its index builds the call graph once)."""
        if self.unoptimized_index is None:
            return None
        return loops_run_once(self.unoptimized_index.callgraph, annotations, self.annotations)

    def part_removed(self, annotations: Sequence[HostTransfer],
                     carried: Sequence[HostTransfer] | None = None) -> list[Detail]:
        """A request some of whose placement ``annotations`` became transfers and some were removed
        (a DeepSeek of 1 dense + 2 MoE layers: the dense scan's loop runs once, XLA removes it and
        its offload, the MoE scan's stays): the removed ones, and the loops that run once among
        theirs. ``carried``: the transfers that carry the request's name; its annotations are then
        those whose transfers are among them (a line can place several names: MaxText's MLA
        normalizes ``mla_q`` and ``mla_kv`` at one line). A removed annotation counts only when it
        has the bytes of one that became the request's transfers. [] when none was removed, or none
        became transfers."""
        ids = None if carried is None else {id(t) for t in carried}
        became = [a for a in annotations if self.fate[id(a)].became
                  and (ids is None or any(id(t) in ids for t in self.fate[id(a)].became))]
        sizes = {a.bytes for a in became}
        removed = [a for a in annotations if self.fate[id(a)].fate is Fate.REMOVED and a.bytes in sizes]
        if not became or not removed:
            return []
        once = self.loops_run_once(removed)
        return [fact(Fact.PART_REMOVED, n=len(removed), of=len(became) + len(removed),
                     names=", ".join(a.instruction.name for a in removed)), *((once,) if once is not None else ())]

    def facts(self) -> Detail:
        if not self.known:
            return fact(Fact.LOWERED_UNKNOWN)
        return fact(Fact.LOWERED, to_host=len(self.to_host), removed=len(self.removed()),
                    annotations=len(self.annotations))


def loops_run_once(graph: CallGraph, annotations: Sequence[HostTransfer],
                   every: Sequence[HostTransfer]) -> Detail | None:
    """Which of ``annotations`` (removed placement annotations of the unoptimized module ``graph``
    was built from) sit in while loops whose trip count is 1, each annotation's loops counted on
    their own: ``loop-runs-once`` when every one does, ``some-loops-run-once`` (naming them) when
    only some do, None when none does. XLA inlines such a loop (WhileLoopSimplifier), the scan's
    one-slot stack of the value folds away, the copy to host meets the copy back, and the pair is
    removed (docs/offload-happened.md#a-loop-that-runs-once). ``every``: all placement annotations
    of the module; an annotation whose loop also holds one of the other direction (a round trip
    within one iteration, removed however often the loop runs: xla#20373) does not count."""
    loops: dict[str, Instruction] = {}
    once: list[HostTransfer] = []
    for a in annotations:
        found = enclosing_loops(graph, a.computation)
        if not found or any(graph.trip_count(lp) != 1 for lp in found):
            continue
        mine = {lp.name for lp in found}
        if any(b.direction is not a.direction and any(lp.name in mine for lp in enclosing_loops(graph, b.computation)
                                                       or ()) for b in every):
            continue
        once.append(a)
        loops.update((lp.name, lp) for lp in found)
    if not once:
        return None
    if len(once) == len(annotations):
        return fact(Fact.LOOP_RUNS_ONCE, loops=", ".join(sorted(loops)), trip=1)
    return fact(Fact.SOME_LOOPS_RUN_ONCE, n=len(once), of=len(annotations),
                names=", ".join(a.instruction.name for a in once), loops=", ".join(sorted(loops)), trip=1)


def _through_annotations(asked: Asked, annotations: Sequence[HostTransfer], lowered: _Lowered,
                         by_id: Mapping[int, Verdict], what: Detail, how: Detail,
                         readers: Mapping[int, list[Verdict]], claimed: frozenset[int]) -> Accounted:
    """A request whose placement annotations are known: what became of them (the transfers that
    wrote its host buffer, and those that read it back). ``claimed``: transfers (by ``id``) that
    carry a requested name: a name request's own are listed by name, never here, and no other
    request lists them."""
    names = ", ".join(a.instruction.name for a in annotations)
    moved = [by_id[id(t)] for a in annotations for t in lowered.fate[id(a)].became if id(t) in by_id]
    if asked.kind is AskKind.OFFLOAD_NAME and moved:
        others = sorted({v.transfer.checkpoint_name or v.transfer.unrequested_name or v.transfer.instruction.name
                         for v in moved})
        return Accounted(asked, Why.UNKNOWN, (what, fact(Fact.BYTES_CLAIMED, names=names, how=how, moved=len(moved),
                                                           others=", ".join(others))))
    moved = [v for v in moved if id(v.transfer) not in claimed]
    back = [r for v in moved for r in readers.get(id(v.transfer), []) if id(r.transfer) not in claimed]
    if moved:
        said = [fact(Fact.ANNOTATIONS_BECAME, names=names, how=how, moved=len(moved))]
        if back:
            said.append(fact(Fact.READ_BACK, n=len(back)))
        twins = [b for b in lowered.to_host if b not in annotations
                 and any(b.bytes == a.bytes and b.direction is a.direction for a in annotations)]
        if twins:
            said.append(fact(Fact.SAME_BYTES, names=", ".join(b.instruction.name for b in twins)))
        return _became(asked, moved + back, what, *said, removed=lowered.part_removed(annotations))
    fates = {lowered.fate[id(a)].fate for a in annotations}
    if fates == {Fate.REMOVED}:
        once = lowered.loops_run_once(annotations)
        return Accounted(asked, Why.REMOVED_BY_XLA, (what, fact(Fact.ANNOTATIONS_REMOVED, names=names, how=how),
                                                     *((once,) if once is not None else ())))
    return Accounted(asked, Why.UNKNOWN, (what, fact(Fact.ANNOTATIONS_UNMATCHED, names=names, how=how)))


def _no_host_copy(asked: Asked, intent: Intent, tags: Sequence[Tag], at: Arg) -> Accounted:
    name = asked.what
    savers = [p for p in intent.policies if name in p.all_saved()]
    if savers:
        return Accounted(asked, Why.SAVED_ON_DEVICE, (fact(Fact.SAVED_BY_POLICY, at=at, policy=savers[0]),))
    if intent.policies and not any(p.differentiated for p in intent.policies if name in p.all_offloaded()):
        return Accounted(asked, Why.NO_GRADIENT, (fact(Fact.NOT_DIFFERENTIATED, at=at),))
    if any(t.carry for t in tags):
        return Accounted(asked, Why.NOT_A_RESIDUAL, (fact(Fact.TAGGED_CARRY, at=at),))
    if any(t.output for t in tags):
        return Accounted(asked, Why.NOT_A_RESIDUAL, (fact(Fact.TAGGED_OUTPUT, at=at),))
    return Accounted(asked, Why.NOT_A_RESIDUAL, (fact(Fact.TAGGED_NOT_SAVED, at=at),))


class _Accounting:
    def __init__(self, intent: Intent, verdicts: Sequence[Verdict], module: Module | None,
                 unoptimized: Module | None, index: ModuleIndex | None = None) -> None:
        self.intent = intent
        self.verdicts = [v for v in verdicts if not v.transfer.is_annotation]
        self.module = module
        self.by_id = {id(v.transfer): v for v in self.verdicts}
        #: to-host transfer -> the to-device transfers that read its host buffer back
        self.readers: dict[int, list[Verdict]] = {}
        if index is not None:
            by_key = {(v.transfer.computation, v.transfer.instruction.name): v for v in self.verdicts}
            for key, writer in host_writers(index, [v.transfer for v in self.verdicts]).items():
                w = by_key.get((writer.computation, writer.instruction.name))
                if w is not None and key in by_key:
                    self.readers.setdefault(id(w.transfer), []).append(by_key[key])
        partitions = module.num_partitions if module is not None else 1
        self.lowered = _Lowered(unoptimized, [v.transfer for v in self.verdicts], partitions)
        self.unnamed = sum(1 for v in self.verdicts
                           if v.transfer.direction is Direction.TO_HOST and not v.transfer.checkpoint_name)
        asked = requested_names(intent) or frozenset()
        #: transfers that carry a requested name: listed under that request, and only there
        self.claimed = frozenset(id(v.transfer) for v in self.verdicts if v.transfer.checkpoint_name in asked)
        self.asks: Sequence[Asked] = ()
        self.eliminated = -1

    def unclaimed(self, vs: Sequence[Verdict]) -> list[Verdict]:
        """``vs`` without the transfers a name request lists."""
        return [v for v in vs if id(v.transfer) not in self.claimed]

    def by_line(self, wheres: Sequence[Where]) -> list[Verdict]:
        return [v for v in self.verdicts
                if any(w.same_line(f, ln) for w in wheres for f, ln in _line_of(self.module, v.transfer))]

    def attribute(self, asks: Sequence[Asked]) -> dict[int, list[HostTransfer]]:
        """Request index -> its to-host placement annotations (:func:`annotation_owners`)."""
        self.asks = asks
        out, self.eliminated = annotation_owners(self.intent, asks, self.lowered.unoptimized, self.lowered.annotations)
        return out

    def twins(self, i: int, annotations: Mapping[int, list[HostTransfer]]) -> list[str]:
        """The other name requests whose placement annotations move as many bytes as request ``i``'s."""
        sizes = {a.bytes for a in annotations.get(i, [])}
        return sorted({self.asks[j].what for j, anns in annotations.items() if j != i
                       and self.asks[j].kind is AskKind.OFFLOAD_NAME and any(a.bytes in sizes for a in anns)})

    def lowered_part(self, asked: Asked, i: int, annotations: Mapping[int, list[HostTransfer]],
                     what: Detail) -> Accounted:
        """A request JAX copied to host in the jaxpr, with no transfer found by name or line."""
        lowered = self.lowered
        if not lowered.known:
            return Accounted(asked, Why.UNKNOWN, (what, fact(Fact.NOT_FOLLOWED, unnamed=self.unnamed)))
        if not lowered.to_host:
            return Accounted(asked, Why.DROPPED_IN_LOWERING, (what, fact(Fact.DROPPED_WHILE_LOWERING)))
        mine = annotations.get(i, [])
        if mine:
            how = fact(Fact.HOW_ELIMINATED if i == self.eliminated else Fact.HOW_BY_LINE)
            return _through_annotations(asked, mine, lowered, self.by_id, what, how, self.readers, self.claimed)
        return Accounted(asked, Why.UNKNOWN, (what, fact(Fact.NONE_TOLD, lowered=lowered.facts(),
                                                           unnamed=self.unnamed)))

    def name(self, asked: Asked, i: int, annotations: Mapping[int, list[HostTransfer]]) -> Accounted:
        name = asked.what
        # Exactly the transfers that carry the name: the naming pass decided each one's name once.
        hits = [v for v in self.verdicts if v.transfer.checkpoint_name == name]
        if hits:
            said = [fact(Fact.CARRY_THE_NAME, n=len(hits))]
            guessed = sum(1 for v in hits if v.transfer.name_guessed)
            if guessed:
                said.append(fact(Fact.NAMED_BY_BYTES, n=guessed))
                twins = self.twins(i, annotations)
                if twins:
                    said.append(fact(Fact.GUESS_TWINS, names=", ".join(twins)))
            removed = self.lowered.part_removed(annotations.get(i, []), [v.transfer for v in hits])
            return _became(asked, hits, *said, removed=removed)
        tags = [t for t in self.intent.tags if t.name == name]
        if not tags and asked.preset is not None:
            # the framework's preset lists it, the model tags nothing with it: not the user's typo
            p = asked.preset
            return Accounted(asked, Why.PRESET_NOT_TAGGED, (fact(
                Fact.PRESET_LISTS, name=name, framework=p.framework, setting=p.setting, value=p.value,
                tagged=", ".join(self.intent.tagged_names)),))
        if not tags:
            tagged = self.intent.tagged_names
            close = tuple(difflib.get_close_matches(name, tagged, n=3, cutoff=0.6))
            said = [fact(Fact.NOT_TAGGED, name=name, tagged=", ".join(tagged))]
            if close:
                said.append(fact(Fact.DID_YOU_MEAN, names=close))
            return Accounted(asked, Why.NEVER_TAGGED, tuple(said), suggestions=close)
        lines = ", ".join(sorted({str(t.where) for t in tags if t.where is not None}))
        at: Arg = lines or fact(Fact.NO_SOURCE_LINE)
        if not any(t.host_copy for t in tags):
            return _no_host_copy(asked, self.intent, tags, at)
        return self.lowered_part(asked, i, annotations, fact(Fact.TAGGED_COPIED, at=at))

    def dots(self, asked: Asked, i: int, annotations: Mapping[int, list[HostTransfer]]) -> Accounted:
        copies = [p for p in self.intent.placements if p.kind is PlacementKind.REMAT_OFFLOAD]
        if not copies:
            return Accounted(asked, Why.NOT_A_RESIDUAL, (fact(Fact.NO_DOT_COPY),))
        lines = ", ".join(sorted({str(p.where) for p in copies if p.where is not None}))
        hits = self.unclaimed(self.by_line([p.where for p in copies if p.where is not None]))
        what = fact(Fact.DOT_COPIES, n=len(copies), lines=lines)
        if hits:
            return _became(asked, hits, what)
        return self.lowered_part(asked, i, annotations, what)

    def boundary(self, asked: Asked, pl: Placement) -> Accounted:
        """An argument or output in host memory: the transfers that read the host parameter, or
        that write the output's host buffer, in the optimized module's entry computation."""
        assert self.module is not None
        kind, names = _entry_ends(self.module, pl)
        entry = self.module.entry_name
        if kind == "parameter":
            if not names:
                return Accounted(asked, Why.UNKNOWN, (fact(Fact.NO_PARAMETER, label=pl.label),))
            param = self.module.computations[entry].by_name[names[0]]
            if param.shape.memory_space != self.host_space():
                return Accounted(asked, Why.DROPPED_IN_LOWERING, (fact(Fact.PARAMETER_ON_DEVICE, param=param.name),))
            hits = [v for v in self.verdicts if v.transfer.computation == entry
                    and self.reads(v.transfer, param.name)]
            if hits:
                return _became(asked, hits, fact(Fact.PARAMETER_READ, param=param.name, n=len(hits)))
            return Accounted(asked, Why.UNKNOWN, (fact(Fact.PARAMETER_UNREAD, param=param.name),))
        hits = [v for v in self.verdicts if v.transfer.computation == entry and v.transfer.instruction.name in names]
        if hits:
            return _became(asked, hits, fact(Fact.OUTPUT_WRITTEN, label=pl.label, n=len(hits)))
        return Accounted(asked, Why.UNKNOWN, (fact(Fact.OUTPUT_UNMADE, label=pl.label, followed=", ".join(names)),))

    def compute_on(self, asked: Asked, pl: Placement) -> Accounted:
        """``compute_on("device_host")``: the host computation XLA made of it (a ``HostExecute``
        call on the host thread), found by its source line or its jit's name in ``op_name``."""
        def here(module: Module, ins: Instruction) -> bool:
            loc = module.source_location(ins)
            return ((loc is not None and pl.where is not None and pl.where.same_line(loc.file, loc.line))
                    or (bool(pl.label) and f"jit({pl.label})/" in ins.metadata.get("op_name", "")))

        calls = [] if self.module is None else [
            ins for comp in self.module.computations.values() for ins in comp.instructions
            if ("HostExecute" in ins.attr("custom_call_target") or "host" in ins.attr("async_execution_thread"))
            and here(self.module, ins)]
        if calls:
            names = ", ".join(i.name for i in calls)
            return Accounted(asked, Why.NOT_A_TRANSFER, (fact(Fact.RUNS_ON_HOST, calls=names),))
        before = self.lowered.unoptimized
        if self.module is None or before is None:
            return Accounted(asked, Why.UNKNOWN, (fact(Fact.NO_HOST_CALL),))
        marked = [ins for comp in before.computations.values() for ins in comp.instructions
                  if '_xla_compute_type="host"' in ins.attr("frontend_attributes")]
        if not marked:
            return Accounted(asked, Why.DROPPED_IN_LOWERING, (fact(Fact.NOT_MARKED_HOST),))
        return Accounted(asked, Why.REMOVED_BY_XLA, (fact(Fact.MARKED_HOST_REMOVED, n=len(marked)),))

    def host_space(self) -> int:
        return self.verdicts[0].transfer.host_space if self.verdicts else 5

    def reads(self, t: HostTransfer, param: str) -> bool:
        assert self.module is not None
        table = self.module.computations[t.computation].by_name
        todo, seen = list(t.instruction.operands), 0
        while todo and seen < 32:
            name = todo.pop()
            seen += 1
            if name == param:
                return True
            ins = table.get(name)
            if ins is not None and ins.opcode in _THROUGH:
                todo.extend(ins.operands[:1])
        return False

    def placement(self, asked: Asked, i: int, annotations: Mapping[int, list[HostTransfer]]) -> Accounted:
        pl = asked.placement
        assert pl is not None
        if pl.kind is PlacementKind.COMPUTE_ON:
            return self.compute_on(asked, pl)
        if pl.kind in (PlacementKind.ARGUMENT, PlacementKind.OUTPUT) and self.module is not None:
            return self.boundary(asked, pl)
        if pl.where is None:
            return Accounted(asked, Why.UNKNOWN, (fact(Fact.PLACEMENT_NO_LINE, lowered=self.lowered.facts()),))
        # the transfers to host that trace back to its line, and those that read their buffer back (a
        # transfer to the device that traces back to the line reads another value: an argument's)
        hits = [v for v in self.unclaimed(self.by_line([pl.where])) if v.transfer.direction is Direction.TO_HOST]
        if hits:
            back = self.unclaimed([r for v in hits for r in self.readers.get(id(v.transfer), [])])
            said = [fact(Fact.TRACE_BACK, n=len(hits), where=str(pl.where))]
            if back:
                said.append(fact(Fact.READ_BACK, n=len(back)))
            return _became(asked, hits + back, *said)
        return self.lowered_part(asked, i, annotations, fact(Fact.PLACED, memory=pl.memory, where=str(pl.where),
                                                             unused=fact(Fact.UNUSED) if pl.unused else ""))


def _entry_ends(module: Module, pl: Placement) -> tuple[str, list[str]]:
    """What the placement is in the optimized module's entry: its parameter (argument) or the
    instructions its root element is made by (output), through reshapes and copy-dones."""
    entry = module.computations[module.entry_name]
    index = int(pl.label.lstrip("#")) if pl.label.lstrip("#").isdigit() else -1
    if pl.kind is PlacementKind.ARGUMENT:
        params = [i for i in entry.instructions if i.opcode == "parameter" and i.literal.strip() == str(index)]
        return ("parameter", [params[0].name]) if params else ("parameter", [])
    root = entry.root
    if root is None:
        return ("root", [])
    cur: Instruction | None = root
    if root.opcode == "tuple":
        cur = entry.by_name.get(root.operands[index]) if 0 <= index < len(root.operands) else None
    chain: list[str] = []
    for _ in range(16):
        if cur is None:
            break
        chain.append(cur.name)
        if (cur.opcode not in _THROUGH and not cur.opcode.endswith("-done")) or not cur.operands:
            break
        cur = entry.by_name.get(cur.operands[0])
    return ("root", chain)


def account_intent(intent: Intent, verdicts: Sequence[Verdict], module: Module | None = None,
                   unoptimized: Module | None = None, index: ModuleIndex | None = None) -> IntentAccount:
    """Each request of ``intent`` with the transfers (``verdicts`` of the optimized ``module``)
    it became, or the reason it produced none. ``unoptimized``: the module before
    optimizations, when known (it tells a placement JAX dropped from one XLA removed).
    ``index``: the optimized module's index, when known (the transfers that read a host
    buffer back are then listed with the ones that wrote it)."""
    acc = _Accounting(intent, verdicts, module, unoptimized, index)
    asks = requests(intent)
    annotations = acc.attribute(asks)
    items: list[Accounted] = []
    for i, asked in enumerate(asks):
        if asked.kind is AskKind.OFFLOAD_NAME:
            items.append(acc.name(asked, i, annotations))
        elif asked.kind is AskKind.OFFLOAD_DOTS:
            items.append(acc.dots(asked, i, annotations))
        elif asked.kind is AskKind.POLICY:
            said = next((q.mentions for p in intent.policies for q in p.uninspectable() if q.callable == asked.what),
                        ())
            detail = [fact(Fact.NOT_INSPECTABLE, callable=asked.what)]
            if said:
                detail.append(fact(Fact.CLOSURE_STRINGS, strings=", ".join(said)))
            items.append(Accounted(asked, Why.NOT_INSPECTABLE, tuple(detail)))
        else:
            items.append(acc.placement(asked, i, annotations))
    checked = (fact(Fact.READ_FROM_TRACE, policies=len(intent.policies), tags=len(intent.tags),
                    placements=len(intent.placements)), acc.lowered.facts(),
               *(fact(Fact.NOTE, text=n) for n in intent.notes))
    return IntentAccount(tuple(items), AccountSource.TRACE, checked)


def account_annotations_only(verdicts: Sequence[Verdict], module: Module,
                             unoptimized: Module) -> IntentAccount:
    """No trace: each placement annotation of ``unoptimized`` stands for a request; matched with
    the optimized transfers of its bytes (as ``annotations-accounted`` does)."""
    partitions = max(module.num_partitions, unoptimized.num_partitions, 1)
    by_id = {id(v.transfer): v for v in verdicts}
    items: list[Accounted] = []
    unoptimized_index = ModuleIndex(unoptimized)  # its call graph is built only if an annotation was removed
    annotations = placement_annotations(unoptimized_index)
    matches = match_annotations(annotations, [v.transfer for v in verdicts], partitions)
    for m in sorted(matches, key=lambda m: -m.annotation.bytes):
        a = m.annotation
        src = unoptimized.source_location(a.instruction)
        # The request's key, like a placement's (``Placement.describe``): ``--allow 'checkpoint=...'``
        # of ``intent-accounted`` matches it and check cannot import render, so it is data, not words.
        asked = Asked(AskKind.ANNOTATION, f"{a.instruction.name} ({a.direction}, {a.bytes} B x{a.executions})",
                      None, Where(src.file, src.line, src.function) if src else None,
                      "host" if a.direction is Direction.TO_HOST else "device")
        if m.matched:
            items.append(_became(asked, [by_id[id(t)] for t in m.became], fact(Fact.ITS_SLICES, n=len(m.became))))
        elif m.fate is Fate.REMOVED:
            once = loops_run_once(unoptimized_index.callgraph, [a], annotations)
            items.append(Accounted(asked, Why.REMOVED_BY_XLA,
                                   (fact(Fact.BYTES_NOT_MOVED), *((once,) if once is not None else ()))))
        else:
            items.append(Accounted(asked, Why.UNKNOWN, (fact(Fact.NOT_IN_SLICES),)))
    return IntentAccount(tuple(items), AccountSource.ANNOTATIONS, (fact(Fact.NO_TRACE, annotations=len(annotations)),))



def account_step(intent: Intent | None, verdicts: Sequence[Verdict], module: Module | None = None,
                 unoptimized: Module | None = None, index: ModuleIndex | None = None) -> IntentAccount | None:
    """The pipeline's entry: :func:`account_intent` when the step's intent is known, else None."""
    if not isinstance(intent, Intent):
        return None
    return account_intent(intent, verdicts, module, unoptimized, index)


def annotation_owners(intent: Intent, asks: Sequence[Asked], unoptimized: Module | None,
                      annotations: Sequence[HostTransfer]) -> tuple[dict[int, list[HostTransfer]], int]:
    """Request index -> its to-host placement annotations (``annotations`` of ``unoptimized``): by
    the line of the value each places, then by elimination (one request with host copies left,
    and annotations no other request has); and the index of that request (-1: none)."""
    to_host = [a for a in annotations if a.direction is Direction.TO_HOST]
    lines = {id(a): _operand_lines(unoptimized, a) for a in to_host} if unoptimized is not None else {}
    out: dict[int, list[HostTransfer]] = {}
    copying: list[int] = []
    for i, asked in enumerate(asks):
        wheres = copy_lines(intent, asked)
        if wheres is None:
            continue
        copying.append(i)
        out[i] = [a for a in to_host if any(w.same_line(f, ln) for w in wheres for f, ln in lines.get(id(a), ()))]
    taken = {id(a) for v in out.values() for a in v}
    left = [a for a in to_host if id(a) not in taken]
    bare = [i for i in copying if not out[i]]
    if len(bare) == 1 and left:
        out[bare[0]] = left
        return out, bare[0]
    return out, -1
