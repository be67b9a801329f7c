"""A tune search as people read it (text) and as programs read it (JSON), from one registry.

Also the lines to paste: the JAX checkpoint policy of a configuration
(:func:`jax_snippet`), MaxText's overrides (:func:`maxtext_snippet`) and the ``--set``
overrides that compile it with ``hloscope compile`` (:func:`sets_snippet`). Names come
from the traced step: in JSON they are data; in the Python snippet they are string
literals (``repr``), so a quote in a name cannot break the line.
"""

from __future__ import annotations

import json
import shlex
from typing import Any, Protocol, TextIO

from hloscope.render.memory_text import gib, room_of
from hloscope.render.options import RenderOptions
from hloscope.render.table import format_columns
from hloscope.search.tune import Objective, TuneResult, Verified, on_off
from hloscope.units import human_us

_LETTER = {"remat": "r", "device": "d", "offload": "o"}

#: Why the search stopped, in words.
STOPPED = {
    "budget": "the compile budget (--max-compiles) was spent",
    "converged": "the verified frontier did not move for two rounds",
    "exhausted": "every configuration of the space was compiled",
}


def choices_of(result: TuneResult, v: Verified) -> dict[str, str]:
    return result.spec.space.as_dict(v.config)


def jax_snippet(choices: dict[str, str]) -> str:
    """The JAX policy of ``choices``: names on device saved, offloaded names to pinned host, the rest recomputed."""
    saved = [n for n, c in choices.items() if c == "device"]
    offloaded = [n for n, c in choices.items() if c == "offload"]
    return ("jax.checkpoint_policies.save_and_offload_only_these_names("
            f"names_which_can_be_saved={saved!r}, names_which_can_be_offloaded={offloaded!r}, "
            "offload_src='device', offload_dst='pinned_host')")


def maxtext_snippet(choices: dict[str, str]) -> str:
    """MaxText's overrides: ``remat_policy=custom`` and each key's switch."""
    return " ".join(["remat_policy=custom", *(f"{n}={c}" for n, c in choices.items())])


def sets_snippet(result: TuneResult, v: Verified) -> str:
    """The ``hloscope compile`` options that compile ``v`` (the workload's ``custom`` or per-name settings)."""
    spec = result.spec
    req = spec.request
    what = (f"--fn {shlex.quote(req.fn)} --args {shlex.quote(req.args or '')} " if req.fn is not None
            else "" if spec.request.maxtext is not None else f"--workload {spec.workload} ")
    head = f"hloscope compile {what}--target {spec.request.target} --devices {spec.request.devices} "
    if v.compile_args:  # what compiled it: a coarse policy's own options (mlp has no per-name setting)
        return head + " ".join(v.compile_args)
    choices = choices_of(result, v)
    sets = [f"{k}={val}" for k, val in spec.request.sets]
    if v.config.batch is not None:
        sets.append(f"batch={v.config.batch}")
    if spec.maxtext:
        sets += [f"{n}={c}" for n, c in choices.items()]
    else:
        sets.append("custom=" + ",".join(f"{n}:{c}" for n, c in choices.items()))
    return (head + "--policy offload " + " ".join(f"--set {s}" for s in sets)
            + ("" if pipelined(result, v) else " --no-pipelined-offload"))


def pipelined(result: TuneResult, v: Verified) -> bool:
    """Whether ``v`` was compiled with pipelined host offloading."""
    return result.spec.request.pipelined is not False if v.config.pipelined is None else v.config.pipelined


def _code(v: Verified) -> str:
    return "".join(_LETTER.get(c, "?") for c in v.config.choices)


def _ms(us: float) -> str:
    return f"{us / 1e3:.3f}"


def _throughput(result: TuneResult, v: Verified) -> float:
    return result.spec.goal.throughput(v.config.batch, v.step_us)


def no_fit_line(result: TuneResult) -> str:
    """The one line for a search whose every verified configuration breaks a limit."""
    ok = [v for v in result.verified if v.ok]
    limits = result.spec.limits
    if not ok:
        return "every compile failed; nothing to choose from"
    fraction = result.spec.request.memory_fraction
    hbm = int(limits.device_bytes / fraction) if fraction else limits.device_bytes
    room = room_of(limits.device_bytes if fraction else 0, hbm).removesuffix(" of HBM")
    fitting = [v for v in ok if v.fits]
    if not fitting:
        return (f"no configuration fits in {room}; the smallest found needs {gib(min(v.device_bytes for v in ok))} "
                f"({len(ok)} compiled)")
    return (f"no configuration that fits in {room} fits the {gib(limits.host_bytes)} pinned-host pool "
            f"(--host-pool-gb); the smallest found needs {gib(min(v.host_bytes for v in fitting))} of host memory")


def point_dict(result: TuneResult, v: Verified) -> dict[str, Any]:
    p = v.predicted
    return {
        "choices": choices_of(result, v), "batch": v.config.batch, "pipelined": pipelined(result, v),
        "device_bytes": v.device_bytes,
        "host_bytes": v.host_bytes, "step_us": round(v.step_us, 3), "exposed_us": round(v.exposed_us, 3),
        "call_host_us": round(v.call_host_us, 3),
        "throughput": round(_throughput(result, v), 3) if v.ok else None,
        "fits": v.fits, "host_fits": v.host_fits, "verified": True, "probe": v.probe or None,
        "predicted": ({"device_bytes": round(p.device_bytes), "host_bytes": round(p.host_bytes),
                       "step_us": round(p.step_us, 3)} if p is not None else None),
        "cached": v.cached, "compile_s": round(v.compile_s, 2), "label": v.label, "error": v.error or None,
    }


def result_dict(result: TuneResult) -> dict[str, Any]:
    """The JSON document (docs/tune.md): every verified point, the frontier, the best with its snippets."""
    spec, err = result.spec, result.error
    best = None
    if result.best is not None:
        b = result.best
        choices = choices_of(result, b)
        why = result.why
        best = {**point_dict(result, b), "snippet": jax_snippet(choices),
                "maxtext": maxtext_snippet(choices) if spec.maxtext else None,
                "compile": sets_snippet(result, b), "xla_flags": list(b.xla_flags),
                "why": {
                    "neighbours": [{"what": n.what, "from": n.was, "to": n.now,
                                    "step_delta_us": round(n.step_delta_us, 3),
                                    "device_delta_bytes": n.device_delta_bytes, "meets": n.meets}
                                   for n in (why.neighbours if why else ())],
                    "offloaded": [{"name": f.name, "to_host_bytes": f.to_host_bytes,
                                   "transfer_us": round(f.transfer_us, 3), "exposed_us": round(f.exposed_us, 3),
                                   "transfers": f.transfers, "hidden": f.hidden}
                                  for f in (why.offloaded if why else ())],
                    "remat_cost_us": {n: round(c, 3) for n, c in (why.remat_cost_us if why else ())},
                    "inert": list(why.inert if why else ()),
                }}
    return {
        "schema": "hloscope.tune/1", "workload": spec.workload, "sets": dict(spec.request.sets),
        "target": spec.request.target, "devices": spec.request.devices, "objective": spec.goal.objective.value,
        "names": list(spec.space.names),
        "allowed": {n: list(a) for n, a in zip(spec.space.names, spec.space.allowed, strict=True)},
        "batches": list(spec.space.batches), "space_size": spec.space.size(),
        "pipelined": ([on_off(p) for p in spec.space.pipelined] if spec.space.searches_pipelining
                      else [on_off(spec.request.pipelined)]),
        "limits": {"device_bytes": spec.limits.device_bytes, "host_pool_bytes": spec.limits.host_bytes,
                   "memory_fraction": spec.request.memory_fraction},
        "compiles": {"total": len(result.verified), "probes": sum(1 for v in result.verified if v.probe),
                     "proposals": sum(1 for v in result.verified if not v.probe), "cached": result.cached,
                     "failed": sum(1 for v in result.verified if not v.ok), "max": spec.max_compiles},
        "rounds": result.rounds, "stopped": result.stopped, "seconds": round(result.seconds, 2),
        "model_error": {"proposals": err.count, "step_mean": round(err.step_mean, 4),
                        "step_max": round(err.step_max, 4), "device_mean": round(err.device_mean, 4),
                        "device_max": round(err.device_max, 4)},
        "name_facts": {n: {"to_host_bytes": f.to_host_bytes, "transfer_us": round(f.transfer_us, 3),
                           "exposed_us": round(f.exposed_us, 3), "window_us": round(f.window_us, 3),
                           "transfers": f.transfers, "hidden": f.hidden} for n, f in result.facts.items()},
        "verified": [point_dict(result, v) for v in result.verified],
        "frontier": [point_dict(result, v) for v in result.frontier],
        "best": best,
    }


class TuneRenderer(Protocol):
    name: str
    extension: str

    def render(self, result: TuneResult, out: TextIO, options: RenderOptions) -> None: ...


class TuneJson:
    name = "json"
    extension = ".json"

    def render(self, result: TuneResult, out: TextIO, options: RenderOptions) -> None:
        json.dump(result_dict(result), out, indent=2)
        out.write("\n")


class TuneText:
    name = "text"
    extension = ".txt"

    def render(self, result: TuneResult, out: TextIO, options: RenderOptions) -> None:
        out.write("\n".join(text_lines(result)) + "\n")


def text_lines(result: TuneResult) -> list[str]:
    spec, err = result.spec, result.error
    space = spec.space
    throughput = spec.goal.objective is Objective.THROUGHPUT
    names = ", ".join(space.names)
    lines = [f"tune {spec.workload} on {spec.request.devices} x {spec.request.target}: {len(space.names)} names "
             f"({names}), "
             f"{space.size()} configurations; objective: "
             + ("tokens/s per device across batches" if throughput else
                "the call (the simulated step + the host work each call adds)"
                if spec.goal.objective is Objective.CALL else "the simulated step"),
             f"limits: device {gib(spec.limits.device_bytes)}, pinned-host pool {gib(spec.limits.host_bytes)}",
             ""]
    front = {v.config for v in result.frontier}
    piped = space.searches_pipelining
    head = ["#", "choices", "batch", *(["pipelined"] if piped else []), "device GiB", "host GiB", "~step ms",
            "~exposed ms"]
    head += ["tokens/s"] if throughput else []
    head += ["fits", "model ~step ms", "", "source"]
    body = []
    for i, v in enumerate(result.verified):
        source = (f"probe {v.probe}" if v.probe else "proposal") + (", cached" if v.cached else "")
        if not v.ok:
            body.append([str(i), _code(v), str(v.config.batch or "-"), *([on_off(v.config.pipelined)] if piped else []),
                         "error: " + v.error[:70]] + [""] * (len(head) - 5 - piped) + [source])
            continue
        mark = "best" if result.best is not None and v.config == result.best.config else (
            "frontier" if v.config in front else "")
        fits = "yes" if v.meets else ("no: host" if v.fits else "NO")
        row = [str(i), _code(v), str(v.config.batch or "-"), *([on_off(v.config.pipelined)] if piped else []),
               f"{v.device_bytes / 2**30:.2f}",
               f"{v.host_bytes / 2**30:.2f}", _ms(v.step_us), _ms(v.exposed_us)]
        row += [f"{_throughput(result, v):,.0f}"] if throughput else []
        row += [fits, _ms(v.predicted.step_us) if v.predicted else "-", mark, source]
        body.append(row)
    lines += format_columns(head, body)
    lines.append(f"choices: one letter per name, in order {' '.join(space.names)}; r remat, d device, o offload"
                 + ("; pipelined: pipelined host offloading" if piped else ""))
    lines.append("")
    lines.append(f"{len(result.verified)} compiles ({sum(1 for v in result.verified if v.probe)} probes, "
                 f"{result.cached} from the cache) in {result.rounds} rounds, {result.seconds:.0f} s; stopped: "
                 f"{STOPPED.get(result.stopped, result.stopped)}")
    if err.count:
        lines.append(f"proposal model vs the compiles of its {err.count} proposals: step off by "
                     f"{err.step_mean:.1%} on average ({err.step_max:.1%} at most), device bytes by "
                     f"{err.device_mean:.1%} ({err.device_max:.1%} at most)")
    b = result.best
    if b is None:
        lines.append(no_fit_line(result))
        return lines
    choices = choices_of(result, b)
    lines += ["", f"best: {b.label}: ~{human_us(b.step_us)} step, {gib(b.device_bytes)} on device, "
                  f"{gib(b.host_bytes)} on the host"]
    why = result.why
    if why is not None:
        for f in why.offloaded:
            state = "hidden" if f.exposed_us < 0.5 else f"{human_us(f.exposed_us)} exposed"
            lines.append(f"  offloading '{f.name}' moves {gib(f.to_host_bytes)} per step to the host: "
                         f"{f.hidden} of {f.transfers} transfers hidden, {state}")
        for name, cost in [x for x in why.remat_cost_us if x[1] > 0][:3]:
            lines.append(f"  recomputing '{name}' costs ~{human_us(cost)} per step (model): keeping it on the "
                         "device would save that, at its device bytes")
        for n in why.neighbours:
            step = f"{'+' if n.step_delta_us >= 0 else '-'}{human_us(abs(n.step_delta_us))}"
            mem = f"{'+' if n.device_delta_bytes >= 0 else '-'}{gib(abs(n.device_delta_bytes))}"
            fit = "" if n.meets else ", does not fit"
            lines.append(f"  {n.what} {n.was} -> {n.now}: step {step}, device {mem}{fit}")
        if why.inert:
            lines.append(f"  {', '.join(repr(n) for n in why.inert)}: XLA compiled the same step whatever the switch "
                         "(identical optimized HLO), so the search stopped trying it")
    lines += ["", "paste (JAX): " + jax_snippet(choices)]
    if b.xla_flags:
        lines.append("with XLA_FLAGS: " + " ".join(b.xla_flags) + " (pipelined host offloading off)")
    if spec.maxtext:
        lines.append("paste (MaxText): " + maxtext_snippet(choices))
    lines.append("compile it: " + sets_snippet(result, b))
    lines.append("~ figures are estimates from the simulated step (docs/simulation.md); the model column is what "
                 "the proposal model predicted before the compile")
    return lines


TUNE_RENDERERS: dict[str, TuneRenderer] = {r.name: r for r in (TuneText(), TuneJson())}
