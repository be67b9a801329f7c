"""The words of the offload accounting: each :class:`~hloscope.analysis.intent.outcome.Fact`, each
reason (:class:`~hloscope.analysis.intent.outcome.Why`), each request and each policy (``policy_words``,
in JAX's notation), worded once here for the text report, the JSON ``detail`` and ``facts``, the check
messages and the TUI.

``detail_words(a.detail)`` is one sentence from an account's facts; a fact that continues
the one before carries its own separator (``; ...``, ``, but ...``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hloscope.analysis.intent.model import Asked, AskKind, Policy, PolicyKind, Preset
from hloscope.analysis.intent.outcome import Accounted, Arg, Detail, Fact, Why

#: One line per reason, for the docs and the text report's legend.
WHY_MEANING: dict[Why, str] = {
    Why.TRANSFERRED: "it became the host transfers listed",
    Why.SYNC_COPY: "it became transfers, at least one of them a synchronous copy (the stream waits)",
    Why.PARTLY_REMOVED: "it became transfers, but XLA removed some of its placement annotations (their bytes never "
                        "reach host memory)",
    Why.NEVER_TAGGED: "no checkpoint_name in the step uses the name (closest tagged names shown)",
    Why.PRESET_NOT_TAGGED: "the framework's preset lists the name and this model tags no value with it: not a "
                           "name the user wrote (check fails on it only with preset-names-tagged)",
    Why.NOT_A_RESIDUAL: "the name is tagged, but on a value JAX does not save for the backward pass "
                        "(a loop carry, an output, a value recomputed anyway)",
    Why.SAVED_ON_DEVICE: "a policy saves the name on the device (names_which_can_be_saved)",
    Why.NO_GRADIENT: "no gradient is taken through the policy's jax.checkpoint, so nothing is saved or offloaded",
    Why.DROPPED_IN_LOWERING: "JAX dropped the placement while lowering: the unoptimized module has no host placement",
    Why.REMOVED_BY_XLA: "the unoptimized module annotates the placement; XLA removed or merged it",
    Why.NOT_INSPECTABLE: "the policy is a callable hloscope cannot read; what it asks for is unknown",
    Why.NOT_A_TRANSFER: "compute_on places computation on the host, not data: no transfer is expected of it",
    Why.UNKNOWN: "the cause cannot be known from what the step records (the detail says what was checked)",
}

FACT_WORDS: dict[Fact, str] = {
    Fact.LOWERED_UNKNOWN: "the unoptimized module is not available",
    Fact.LOWERED: "the unoptimized module has {to_host} placement annotation(s) to host memory, "
                  "{removed} of all {annotations} not found in the optimized module",
    Fact.HOW_ELIMINATED: "the only request left for them",
    Fact.HOW_BY_LINE: "by source line",
    Fact.ANNOTATIONS_BECAME: ": its placement annotation(s) {names} ({how}) became {moved} transfer(s) of their bytes",
    Fact.READ_BACK: ", read back by {n}",
    Fact.SAME_BYTES: "; {names} move(s) as many bytes: which of those transfers is whose is decided by size only",
    Fact.BYTES_CLAIMED: ": its placement annotation(s) {names} ({how}) match {moved} transfer(s) by their bytes, but "
                        "those carry other names ({others}); hloscope does not give them this one",
    Fact.ANNOTATIONS_REMOVED: ": the unoptimized module places it in host memory ({names}, {how}); no transfer "
                              "of the optimized module moves its bytes (xla#20373)",
    Fact.LOOP_RUNS_ONCE: "; the loop(s) holding it ({loops}) run(s) once (trip count {trip}), and XLA removed the "
                         "loop and the offload with it (simplify-while-loops inlines a loop that runs once; the copy "
                         "to host then meets the copy back, which algsimp folds away): with 2 or more iterations it "
                         "offloads",
    Fact.SOME_LOOPS_RUN_ONCE: "; {n} of them ({names}) sit in loop(s) that run once ({loops}, trip count {trip}): "
                              "XLA removed those loops and the offload with them (simplify-while-loops inlines a "
                              "loop that runs once; the copy to host then meets the copy back, which algsimp folds "
                              "away): with 2 or more iterations they offload",
    Fact.PART_REMOVED: "; but {n} of its {of} placement annotation(s) to host ({names}) became no transfer: no "
                       "transfer of the optimized module moves their bytes",
    Fact.ANNOTATIONS_UNMATCHED: ": its placement annotation(s) {names} ({how}): the bytes move, but not in slices "
                                "of its size (XLA may have merged it); hloscope does not guess which transfers are its",
    Fact.SOME_SYNC: "; {n} of them synchronous",
    Fact.NO_SOURCE_LINE: "(no source line)",
    Fact.SAVED_BY_POLICY: "tagged at {at}; {policy} saves it on the device (names_which_can_be_saved), so JAX "
                          "kept it there",
    Fact.NOT_DIFFERENTIATED: "tagged at {at}; no gradient is taken through the jax.checkpoint of the policy "
                             "that offloads it, so JAX saves no residual",
    Fact.TAGGED_CARRY: "tagged at {at} on a loop carry (the scan/while body returns it to the next iteration): a "
                       "carry is not a saved residual, JAX put no host copy after it (jax#23869); tag a value "
                       "inside the body that the backward pass reads",
    Fact.TAGGED_OUTPUT: "tagged at {at} on an output of the checkpointed function: an output is not a saved "
                        "residual, JAX put no host copy after it",
    Fact.TAGGED_NOT_SAVED: "tagged at {at}, but JAX put no host copy after it: the backward pass does not save "
                           "this value (it reads none of it, or recomputes it)",
    Fact.NOT_FOLLOWED: "; the unoptimized module is not available to follow it ({unnamed} transfer(s) to host "
                       "have no name)",
    Fact.DROPPED_WHILE_LOWERING: ", but the unoptimized module has no placement annotation to host memory: JAX "
                                 "dropped it while lowering",
    Fact.NONE_TOLD: "; {lowered}; none of them can be told to be its ({unnamed} transfer(s) to host have no name)",
    Fact.CARRY_THE_NAME: "{n} transfer(s) carry the name",
    Fact.NAMED_BY_BYTES: "; {n} of them named by bytes only, a GUESS: data flow did not reach the tagged value, "
                         "only the bytes of its placement annotation(s) matched",
    Fact.GUESS_TWINS: " ({names} move(s) as many bytes: which of those transfers is whose is not known)",
    Fact.TAGGED_COPIED: "tagged at {at}; the jaxpr copies it to host memory",
    Fact.NOT_TAGGED: "no checkpoint_name(..., '{name}') in the step (tagged names: {tagged})",
    Fact.DID_YOU_MEAN: "; did you mean {names}?",
    Fact.PRESET_LISTS: "{name}: listed by {framework}'s {setting}={value}, never tagged by this model (no "
                       "checkpoint_name(..., '{name}'); tagged names: {tagged}): the preset's name, not yours",
    Fact.NO_DOT_COPY: "JAX put no host copy after any dot: no dot without batch dimensions is a residual the "
                      "backward pass saves",
    Fact.DOT_COPIES: "{n} host copy(ies) in the jaxpr (dots at {lines})",
    Fact.NO_PARAMETER: "the optimized module's entry has no parameter {label}",
    Fact.PARAMETER_ON_DEVICE: "the optimized module's parameter {param} is in device memory: the host memory "
                              "kind was dropped",
    Fact.PARAMETER_READ: "parameter {param} is in host memory; {n} transfer(s) read it",
    Fact.PARAMETER_UNREAD: "parameter {param} is in host memory, but no transfer of the entry computation reads "
                           "it (it may be read where it lies, or passed into a loop)",
    Fact.OUTPUT_WRITTEN: "output {label} is written to host memory by {n} transfer(s)",
    Fact.OUTPUT_UNMADE: "no transfer of the entry computation makes output {label} (followed: {followed})",
    Fact.RUNS_ON_HOST: "it runs on the host: {calls} (a host call; compute_on moves computation, not data, so no "
                       "transfer is expected of it)",
    Fact.NO_HOST_CALL: "no host call found for it; the optimized or the unoptimized module is not available to "
                       "tell why",
    Fact.NOT_MARKED_HOST: 'the unoptimized module marks no instruction _xla_compute_type="host"',
    Fact.MARKED_HOST_REMOVED: 'the unoptimized module marks {n} instruction(s) _xla_compute_type="host"; the '
                              "optimized module has no host call for it",
    Fact.PLACEMENT_NO_LINE: "no source line recorded for it: transfers cannot be matched to it; {lowered}",
    Fact.TRACE_BACK: "{n} transfer(s) trace back to {where}",
    Fact.PLACED: "the jaxpr places it in {memory} at {where}{unused}",
    Fact.UNUSED: " (nothing in the step reads its result)",
    Fact.NOT_INSPECTABLE: "policy not inspectable: {callable} is a callable hloscope cannot read",
    Fact.CLOSURE_STRINGS: "; strings in its closure: {strings}",
    Fact.ITS_SLICES: "{n} transfer(s) of its slices",
    Fact.BYTES_NOT_MOVED: "no transfer of the optimized module moves its bytes (xla#20373)",
    Fact.NOT_IN_SLICES: "its bytes move, but not in slices of its size (XLA may have merged it): hloscope does not "
                        "guess which transfers are its",
    Fact.READ_FROM_TRACE: "{policies} remat policy(ies), {tags} checkpoint_name site(s), {placements} placement(s) "
                          "read from the trace",
    Fact.NO_TRACE: "no trace: {annotations} placement annotation(s) of the unoptimized module",
    Fact.NOTE: "{text}",
}

#: What an empty list argument reads as.
_EMPTY = {(Fact.NOT_TAGGED, "tagged"): "none", (Fact.PRESET_LISTS, "tagged"): "none",
          (Fact.OUTPUT_UNMADE, "followed"): "nothing"}

#: The policy of a name JAX offloaded that no readable policy lists.
UNREAD_POLICY = "a policy hloscope cannot read (JAX offloaded the name)"


def policy_words(p: Policy) -> str:
    """``save_and_offload_only_these_names(offload=[...], save=[...], device->pinned_host)``: a policy
    in JAX's notation, its parts in theirs; ``custom policy NAME`` for a callable."""
    if p.kind is PolicyKind.CUSTOM:
        return f"custom policy {p.callable or '(callable)'}"
    args: list[str] = []
    if p.offloaded:
        args.append(f"offload={list(p.offloaded)}")
    if p.saved or p.kind in (PolicyKind.SAVE_AND_OFFLOAD, PolicyKind.SAVE_ONLY):
        args.append(f"save={list(p.saved)}")
    if p.excluded:
        args.append(f"except={list(p.excluded)}")
    if p.offload_dst:
        args.append(f"{p.offload_src or '?'}->{p.offload_dst}")
    args += [policy_words(q) for q in p.parts]
    return f"{p.kind}({', '.join(args)})"


def _names(f: Fact, names: tuple[str, ...]) -> str:
    """Names as a fact reads them: ``'mlp_act' or 'mlp_out'`` for a guess, else ``a, b``."""
    return " or ".join(repr(n) for n in names) if f is Fact.DID_YOU_MEAN else ", ".join(names)


def _value(f: Fact, v: Arg) -> str | int:
    """A fact's name, figure, names or policy as the words and the JSON carry it (facts aside)."""
    if isinstance(v, Policy):
        return policy_words(v)
    if isinstance(v, tuple):
        return _names(f, v)
    assert not isinstance(v, Detail)
    return v


def fact_words(d: Detail) -> str:
    """One fact in words, its fact arguments worded in their places."""
    args = {k: fact_words(v) if isinstance(v, Detail) else (_value(d.fact, v) if v != ""
                                                            else _EMPTY.get((d.fact, k), ""))
            for k, v in d.args}
    return FACT_WORDS[d.fact].format(**args)


def detail_words(details: Iterable[Detail]) -> str:
    """An account's facts as one sentence."""
    return "".join(fact_words(d) for d in details)


def fact_dict(d: Detail) -> dict[str, Any]:
    """A fact for the JSON report: its code and its arguments (facts as their own objects)."""
    return {"fact": str(d.fact), **{k: fact_dict(v) if isinstance(v, Detail) else _value(d.fact, v)
                                    for k, v in d.args}}


def preset_words(preset: Preset | None) -> str:
    """``MaxText's remat_policy=qkv_proj_offloaded`` ("" for none)."""
    return "" if preset is None else f"{preset.framework}'s {preset.setting}={preset.value}"


def asked_policy(asked: Asked) -> str:
    """The policy that asked, described ("" when none), after the framework preset that built it."""
    if asked.policy_unread:
        return UNREAD_POLICY
    if asked.policy is None:
        return ""
    if asked.preset is not None:
        return f"{preset_words(asked.preset)}: {policy_words(asked.policy)}"
    return policy_words(asked.policy)


def asked_what(asked: Asked) -> str:
    """What was asked for: the name, the placement, the annotation."""
    return "dots with no batch dims" if asked.kind is AskKind.OFFLOAD_DOTS else asked.what


def asked_words(asked: Asked) -> str:
    """``offload 'mlp_act'``, ``offload dots with no batch dims``, a policy, or the placement."""
    if asked.kind is AskKind.OFFLOAD_NAME:
        return f"offload '{asked.what}'"
    if asked.kind is AskKind.OFFLOAD_DOTS:
        return f"offload {asked_what(asked)}"
    if asked.kind is AskKind.POLICY:
        return policy_words(asked.policy) if asked.policy is not None else ""
    return asked.what


#: What became of a request that a check fails on, by its reason (default: none of it).
_OUTCOME = {Why.PARTLY_REMOVED: "became transfers only in part",
            Why.PRESET_NOT_TAGGED: "produced no transfer (the preset's name, never tagged)"}


def intent_message(a: Accounted) -> str:
    """``offload 'mlp_hiden' at model.py:40 [policy] produced no transfer: never-tagged: ...``."""
    where = f" at {a.asked.where}" if a.asked.where is not None else ""
    policy = f" [{asked_policy(a.asked)}]" if asked_policy(a.asked) else ""
    outcome = _OUTCOME.get(a.why, "produced no transfer")
    return f"{asked_words(a.asked)}{where}{policy} {outcome}: {a.why}: {detail_words(a.detail)}"
