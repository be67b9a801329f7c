"""``hloscope tune``'s compiles: probes, proposals and their verification (docs/tune.md).

The search's decisions (the proposal model, what to compile next, the frontier) are
``hloscope.search.tune``'s; this module turns each configuration into a sweep cell
(:class:`~hloscope.compile.search.sweep.Cell`: a built-in workload with its per-name switches as
``--set`` overrides)
and runs the cells on the sweep's executors (``hloscope.compile.search.executors``) through the
compile cache, so a rerun with the same arguments follows the same path and reads every
compile that finished from the cache (resume). A configuration that is one of the coarse
policies (every name ``remat``, every name on device) is compiled as that policy's own
cell, the very compile ``hloscope sweep --policies remat,save`` makes.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hloscope.compile import workloads
from hloscope.compile.run.jobs import analyze_result, compile_request_result, vocab_of
from hloscope.compile.seam.policy_override import CUSTOM
from hloscope.compile.seam.xla_options import PIPELINED_OFFLOAD_FLAG
from hloscope.compile.search.sweep import FINISHED, Cell, Executor, run_sweep
from hloscope.compile.step.cache import load_request, remember_request
from hloscope.errors import EXIT_COMPILE_FAILED, HloscopeError
from hloscope.request import CompileRequest, Policy
from hloscope.search.tune import (
    PROBES,
    UNPIPELINED_PROBE,
    Config,
    NameFacts,
    Prediction,
    TuneResult,
    TuneSpec,
    Verified,
    best,
    explain,
    frontier,
    model_error,
    name_facts,
    on_off,
    prior_model,
    propose,
)

if TYPE_CHECKING:
    from hloscope.analysis.report import Report

#: Stop once this many rounds in a row left the verified frontier as it was.
PATIENCE = 2


def fn_custom(switches: dict[str, str]) -> str:
    """A ``--fn`` step's ``custom`` setting: the names kept on device or offloaded, in order (a name
    not listed is recomputed, so every name ``remat`` is the empty setting)."""
    return ",".join(f"{n}:{ch}" for n, ch in switches.items() if ch != "remat")


def fn_cell(spec: TuneSpec, switches: dict[str, str], pipelined: bool, tag: str = "") -> Cell:
    """The cell of ``spec``'s ``--fn`` step under ``switches`` (``--set custom=...``)."""
    return Cell(replace(spec.request, sets=((CUSTOM, fn_custom(switches)),), pipelined=pipelined), "offload", tag=tag)


#: The MaxText setting that makes its remat policy the per-key switches.
MAXTEXT_CUSTOM = ("remat_policy", "custom")


def maxtext_cell(spec: TuneSpec, switches: dict[str, str], pipelined: bool, tag: str = "") -> Cell:
    """The cell of ``spec``'s MaxText step: the user's config and overrides, then ``remat_policy=custom``
    and each key's switch, in order (MaxText's command line)."""
    extra = (f"{k}={v}" for k, v in (MAXTEXT_CUSTOM, *switches.items()))
    return Cell(replace(spec.request, maxtext=(*(spec.request.maxtext or ()), *extra), pipelined=pipelined),
                "offload", tag=tag)


def maxtext_custom_keys() -> tuple[str, ...]:
    """The keys of MaxText's ``remat_policy: custom`` in the installed MaxText: its ``base.yml``'s
    settings whose default is ``remat``, ``device`` or ``offload`` (read as text, without importing
    MaxText). ``decoder_layer_input`` is left out: MaxText keeps it (the scan's checkpoints)."""
    spec = importlib.util.find_spec("maxtext")
    where = list(spec.submodule_search_locations or []) if spec is not None else []
    keys: list[str] = []
    for folder in where:
        base = Path(folder) / "configs" / "base.yml"
        if base.is_file():
            for m in re.finditer(r"""^([a-z_0-9]+):\s*['"]?(remat|device|offload)['"]?\s*(?:#.*)?$""",
                                 base.read_text(errors="replace"), re.M):
                keys.append(m.group(1))
            break
    return tuple(k for k in dict.fromkeys(keys) if k != "decoder_layer_input")


def cell_of(spec: TuneSpec, c: Config) -> Cell:
    """The sweep cell that compiles ``c``: a coarse policy's own cell when ``c`` is one, else
    ``policy=offload`` with the per-name switches as settings (a ``--fn`` step: ``custom``)."""
    choices = spec.space.as_dict(c)
    if spec.request.fn is not None:
        return fn_cell(spec, choices, pipelined_of(spec, c), _tag(choices, c))
    if spec.request.maxtext is not None:
        return maxtext_cell(spec, choices, pipelined_of(spec, c), _tag(choices, c))
    values = set(choices.values())
    sets = dict(spec.request.sets)
    if c.batch is not None:
        sets["batch"] = str(c.batch)
    policy = "offload"
    if values == {"remat"}:
        policy = "remat"
    elif values == {"device"} and spec.own_switches is None:
        policy = "save"  # (a workload with its own switches saves only those it switches device or offload)
    elif spec.own_switches is None and values == {"offload"}:
        pass  # the workload's own offload policy: every name offloaded
    elif spec.own_switches is not None and c.choices == spec.own_switches:
        pass  # the workload's switches as configured: its --policy offload
    else:
        _, cfg = workloads.resolve(spec.workload, dict(spec.request.sets))
        sets |= workloads.switch_settings(cfg, choices)
        sets.pop("policy", None)
    return Cell(replace(spec.request, sets=tuple(sorted(sets.items())), policy=Policy(policy),
                        pipelined=pipelined_of(spec, c)), policy, tag=_tag(choices, c))


def _tag(choices: dict[str, str], c: Config) -> str:
    """How progress lines and reports name ``c``: ``query_proj=offload ... batch=2 pipelined=off``."""
    tag = " ".join(f"{n}={ch}" for n, ch in choices.items()) + (f" batch={c.batch}" if c.batch is not None else "")
    return tag + (f" pipelined={on_off(c.pipelined)}" if c.pipelined is not None else "")


def pipelined_of(spec: TuneSpec, c: Config) -> bool:
    """Whether ``c`` is compiled with pipelined host offloading: its own setting when the space
    searches it, else the search's one setting."""
    return spec.request.pipelined is not False if c.pipelined is None else c.pipelined


def fn_names(spec: TuneSpec) -> list[str]:
    """The checkpoint names ``spec``'s ``--fn`` step tags, in the order its trace meets them, read
    from its compile with every name recomputed: the search's first probe, which then reads it
    from the cache (``spec.space`` is not used). For MaxText's step (``spec.request.maxtext``): its
    compile with ``remat_policy=custom`` and every key at base.yml's default (``remat``), whose
    lowered module the all-remat probe's is (the compile cache's lowered-module lookup), and only
    the names that are keys of MaxText's custom policy (:func:`maxtext_custom_keys`)."""
    if spec.request.maxtext is not None:
        keys = maxtext_custom_keys()
        return [n for n in _traced_names(maxtext_cell(spec, {}, pipelined_of(spec, Config(()))).request) if n in keys]
    return _traced_names(fn_cell(spec, {}, pipelined_of(spec, Config(()))).request)


def _traced_names(request: CompileRequest) -> list[str]:
    found = load_request(request)
    result, extra = found if found is not None else compile_request_result(request)
    if found is None:
        remember_request(request, result, extra)
    return list(dict.fromkeys(t.name for t in result.tensor_names))


def _verified(spec: TuneSpec, c: Config, row: dict[str, Any], probe: str, predicted: Prediction | None,
              names: tuple[NameFacts, ...]) -> Verified:
    cell = cell_of(spec, c)
    label = cell.label
    given = [k for k, _ in spec.request.sets]  # the user's own settings first, in their order
    ordered = sorted(cell.request.sets, key=lambda kv: (given.index(kv[0]) if kv[0] in given else len(given), kv[0]))
    options = (*(("--no-pipelined-offload",) if not cell.pipelined else ()),
               *((f"--scheduler {cell.scheduler}",) if cell.scheduler != "lhs" else ()),
               *((f"--memory-fraction {cell.request.memory_fraction:g}",) if cell.request.memory_fraction else ()))
    if spec.request.maxtext is not None:  # --maxtext takes every word after it: last
        args = (*options, "--maxtext " + " ".join(shlex.quote(x) for x in cell.request.maxtext or ()))
    else:
        args = (*(() if spec.request.fn else (f"--policy {cell.policy}",)),
                *(f"--set {shlex.quote(f'{k}={v}')}" for k, v in ordered), *options)
    flags = () if cell.pipelined else (f"--{PIPELINED_OFFLOAD_FLAG}=false",)
    if row.get("error"):
        return Verified(c, label, probe, predicted=predicted, error=str(row["error"]),
                        compile_s=float(row.get("compile_s") or 0.0), compile_args=args, xla_flags=flags)
    host = int(row.get("host_bytes") or 0)
    return Verified(c, label, probe, int(row["device_allocation_bytes"]), host, float(row["est_step_us"]),
                    float(row.get("est_exposed_us") or 0.0), bool(row.get("fits")), host <= spec.limits.host_bytes,
                    predicted, names, "", bool(row.get("cached")), float(row.get("compile_s") or 0.0),
                    str(row.get("fingerprint") or ""), args, flags, float(row.get("est_call_host_us") or 0.0))


def _facts_from_cache(cell: Cell) -> tuple[NameFacts, ...]:
    """Per-name facts of a compile the executor did not report to us (Ray): read back from the cache."""
    request = cell.request
    found = load_request(request)
    if found is None:
        return ()
    result, extra = found
    return name_facts(analyze_result(result, request.target, vocab_of(extra), extra=extra).intent)


class _Runner:
    """Runs configurations on the executor, keeping every verified point and the budget.

    The budget counts distinct compiled steps: a compile whose optimized HLO is byte-identical to
    one already finished in this search (a name whose switch XLA compiles to the same step) is a
    repeat and is not counted; a failed compile is. The progress line counts the same way: each
    finished repeat reaches ``on_event`` with ``repeat_of`` (the label of the first compile of that
    step) in its row, so its ``[k/N]`` never passes the budget."""

    def __init__(self, spec: TuneSpec, executor: Executor, on_event: Callable[..., None] | None,
                 phase: Callable[..., None] | None) -> None:
        self.spec, self.executor, self.on_event, self.phase = spec, executor, on_event, phase
        self.verified: list[Verified] = []
        self._first: dict[str, str] = {}  # fingerprint -> label of the first finished compile of that step

    @property
    def left(self) -> int:
        """Compiles left of ``spec.max_compiles``: distinct steps and failures count."""
        fps = {v.fingerprint for v in self.verified if v.ok and v.fingerprint}
        spent = len(fps) + sum(1 for v in self.verified if not (v.ok and v.fingerprint))
        return self.spec.max_compiles - spent

    def _event(self, kind: str, cell: Cell, row: dict[str, Any] | None) -> None:
        if kind == FINISHED and row is not None:
            fp = str(row.get("fingerprint") or "")
            first = self._first.setdefault(fp, cell.label) if fp and not row.get("error") else cell.label
            if first != cell.label:
                row = {**row, "repeat_of": first}
        if self.on_event is not None:
            self.on_event(kind, cell, row)

    def run(self, configs: list[tuple[Config, str, Prediction | None]]) -> list[Verified]:
        configs = configs[:max(0, self.left)]
        if not configs:
            return []
        cells = [cell_of(self.spec, c) for c, _, _ in configs]
        facts: dict[str, tuple[NameFacts, ...]] = {}

        def on_report(row: dict[str, Any], report: Report) -> None:
            facts[str(row["cell"])] = name_facts(report.intent)

        rows = run_sweep(list(cells), self.executor, self._event,
                         self.phase, on_report if self.executor.name == "local" else None)
        out = []
        for (c, probe, pred), cell, row in zip(configs, cells, rows, strict=True):
            names = facts.get(cell.label)
            if names is None and not row.get("error") and probe == "offload":
                names = _facts_from_cache(cell)
            out.append(_verified(self.spec, c, row, probe, pred, names or ()))
        self.verified += out
        return out


def _frontier_key(points: list[Verified]) -> tuple[Config, ...]:
    return tuple(v.config for v in points)


def run_tune(spec: TuneSpec, executor: Executor, on_event: Callable[..., None] | None = None,
             phase: Callable[..., None] | None = None) -> TuneResult:
    """Probe, propose, verify and refine until the frontier stops moving, the space is exhausted
    or ``spec.max_compiles`` compiles are spent (a cache hit counts, so a rerun takes the same path;
    a repeat of a step already verified in this search does not). Per-name facts come with each
    compile on the local executor; on Ray only the all-offload probe's are read back (the cache)."""
    t0 = time.perf_counter()
    space, goal = spec.space, spec.goal
    runner = _Runner(spec, executor, on_event, phase)
    b0 = space.batches[0]
    probes: list[tuple[Config, str, Prediction | None]] = [(space.uniform(p, b0), p, None) for p in PROBES]
    probes += [(space.uniform("remat", b), "remat", None) for b in space.batches[1:]]
    if space.searches_pipelining:
        probes.append((space.uniform("offload", b0, False), UNPIPELINED_PROBE, None))
    if spec.own_switches is not None and all(c in a for c, a in zip(spec.own_switches, space.allowed, strict=True)):
        probes.append((Config(spec.own_switches, b0, space.pipelined[0]), "configured", None))
    seen: list[tuple[Config, str, Prediction | None]] = []
    for p in probes:  # a fixed name can make two probes one configuration
        if all(p[0] != q[0] for q in seen):
            seen.append(p)
    done = {v.config: v for v in runner.run(seen)}
    by_probe = {(p, c.batch): done[c] for c, p, _ in probes if p in (*PROBES, UNPIPELINED_PROBE) and c in done}
    prior = prior_model(space, by_probe)
    if prior is None:
        failed = next((v for v in done.values() if v.error), None)
        why = f": {failed.label}: {failed.error}" if failed else ""
        raise HloscopeError(f"the probe compiles failed, so there is nothing to model{why}", EXIT_COMPILE_FAILED)
    model = prior.refit(prior, runner.verified)
    rounds, unchanged, stopped = 0, 0, "budget"
    current = _frontier_key(frontier(runner.verified, goal))
    while runner.left > 0:
        todo = propose(space, model, spec.limits, goal, runner.verified, min(spec.per_round, runner.left))
        if not todo:
            stopped = "exhausted"
            break
        runner.run([(c, "", model.predict(c)) for c in todo])
        rounds += 1
        model = prior.refit(prior, runner.verified)
        now = _frontier_key(frontier(runner.verified, goal))
        unchanged = unchanged + 1 if now == current else 0
        current = now
        if unchanged >= PATIENCE:
            stopped = "converged"
            break
    verified = tuple(runner.verified)
    facts = {f.name: f for v in verified if v.probe == "offload" for f in v.names}
    top = best(verified, goal)
    return TuneResult(spec, verified, tuple(frontier(verified, goal)), top, model,
                      model_error(verified), stopped, rounds, time.perf_counter() - t0,
                      sum(1 for v in verified if v.cached), facts,
                      explain(space, top, verified, model) if top is not None else None)
