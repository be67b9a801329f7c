"""tune: the fastest per-name remat / device / offload choices that fit, found by compiling little."""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from dataclasses import replace
from pathlib import Path

from hloscope.api import save_artifacts
from hloscope.artifact import OPTIMIZED_FILE
from hloscope.cli.compiling import check_request, progress_bar
from hloscope.cli.options import (
    add_args_options,
    add_devices_option,
    add_host_pool_option,
    add_maxtext_option,
    add_memory_fraction_option,
    add_no_cache_option,
    add_target_option,
    args_spec,
    compile_target,
    host_pool_bytes,
    parse_sets,
)
from hloscope.cli.reporting import open_output
from hloscope.compile import workloads
from hloscope.compile.maxtext import split_args
from hloscope.compile.run.jobs import analyze_result, vocab_of
from hloscope.compile.search.executors import make_executor
from hloscope.compile.search.sweep import SCHEDULERS
from hloscope.compile.search.tune import cell_of, fn_names, maxtext_custom_keys, run_tune
from hloscope.compile.step.cache import load_request, turned_off
from hloscope.errors import (
    EXIT_BAD_INPUT,
    EXIT_CHECK_FAILED,
    EXIT_NOTHING_TO_CHECK,
    EXIT_UNKNOWN_NAME,
    HloscopeError,
)
from hloscope.render.options import RenderOptions
from hloscope.render.registry import pick
from hloscope.render.search.sweep_plot import check_plot_path
from hloscope.render.search.tune_plot import write_plot
from hloscope.render.search.tune_words import TUNE_RENDERERS, no_fit_line
from hloscope.request import CompileRequest
from hloscope.search.tune import CHOICES, Goal, Limits, Objective, Space, TuneResult, TuneSpec
from hloscope.targets import get_target

#: Compiles a search may spend when --max-compiles is not given.
DEFAULT_MAX_COMPILES = 12


class TuneCommand:
    """tune: search each tagged name's remat | device | offload choice for the fastest step that fits.

    The names the workload tags (MaxText's custom-policy keys for deepseek; for your
    own step, --fn MODULE:FUNCTION with --args, its checkpoint_name names; for
    MaxText's own step, --maxtext [CONFIG.yml] KEY=VALUE ..., the custom-policy keys
    it tags; both read from their first compile) are the search space, each
    remat, device or offload (--names, --fix NAME=CHOICE, --choices narrow it),
    optionally with per-device batch sizes (--batch-sizes, with --objective
    throughput) and pipelined host offloading on and off (--pipelined on,off).
    Three probe compiles (every name remat, on device,
    offloaded) give each name's facts; an additive model proposes configurations;
    real compiles verify them; the search refines around the best verified point
    until the frontier stops moving or --max-compiles compiles are spent (docs/tune.md).
    Compiles go through the compile cache and the sweep's executors (--jobs,
    --executor ray), with its progress bar; a rerun with the same arguments reads
    every finished compile from the cache. Prints the verified frontier (device
    memory against the step), the best configuration with why it beats its
    neighbours, the proposal model's error, and a policy to paste (--json, --plot,
    --artifacts DIR for every verified compile's folder). Exit codes: 0 ok; 1 no
    verified configuration fits (the smallest found is named); 2 bad input; 3 an
    unknown name or choice; 5 the probe compiles failed; 7 Ray or matplotlib missing;
    8 the workload tags no names. Bad input is refused before anything compiles (a
    --fn or MaxText step's names: after its first compile, the first probe).
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("workload", nargs="?", default=None, help="workload or preset (default mlp)")
        p.add_argument("--workload", dest="workload_opt", metavar="NAME", help="same as the positional WORKLOAD")
        p.add_argument("--fn", metavar="MODULE:FUNCTION",
                       help="your own step: its checkpoint names are the space (with --args or --args-from)")
        add_args_options(p, "with --fn: abstract arguments, e.g. 'bf16[512,1024]@fsdp,None; bf16[64,512]@fsdp'")
        add_maxtext_option(p, "MaxText's own step (Python 3.12+, 'hloscope[maxtext]'): its config and overrides as "
                              "for hloscope compile --maxtext, without remat_policy or the custom policy's keys: "
                              "those are the space (the keys the step tags)")
        add_target_option(p)
        add_devices_option(p)
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="workload settings (not the names' switches: those are what tune chooses)")
        p.add_argument("--names", default="", help="comma-separated names to search (default: every tagged name)")
        p.add_argument("--fix", action="append", default=[], metavar="NAME=CHOICE",
                       help="keep a name at one choice (remat, device or offload)")
        p.add_argument("--choices", default=",".join(CHOICES), help="the choices a name may take (default all)")
        p.add_argument("--batch-sizes", default="", help="comma-separated per-device batch sizes to search")
        p.add_argument("--objective", choices=[o.value for o in Objective], default="step",
                       help="step: the simulated step at one batch; throughput: tokens/s per device across batches; "
                            "call: the step plus the host work each call adds (new pinned-host outputs mapped)")
        p.add_argument("--max-compiles", type=int, default=DEFAULT_MAX_COMPILES, metavar="N",
                       help=f"compile at most N configurations, probes included (default {DEFAULT_MAX_COMPILES})")
        add_memory_fraction_option(p)
        add_host_pool_option(p)
        p.add_argument("--scheduler", choices=SCHEDULERS, default="lhs")
        p.add_argument("--pipelined", default="on", metavar="on|off|on,off",
                       help="pipelined host offloading: on (default) or off for every compile, or on,off to "
                            "search it too (one more probe: every name offloaded with pipelining off)")
        p.add_argument("--jobs", type=int, default=1, help="compiles at a time (local executor; default 1)")
        p.add_argument("--executor", choices=("local", "ray"), default="local")
        p.add_argument("--address", metavar="HOST:PORT", help="Ray head to run on (default: start Ray here)")
        add_no_cache_option(p, "compile every configuration; neither read nor fill the cache")
        p.add_argument("--plot", metavar="FILE.svg|png", help="draw the verified points and the frontier")
        p.add_argument("--artifacts", metavar="DIR", help="write every verified compile's artifact folder into DIR")
        fmt = p.add_mutually_exclusive_group()
        fmt.add_argument("--json", action="store_true", help="same as --format json")
        fmt.add_argument("--format", help=f"output format: {', '.join(TUNE_RENDERERS)} (default text)")
        p.add_argument("-o", "--output")

    def run(self, args: argparse.Namespace) -> int:
        renderer = pick("json" if args.json else (args.format or "text"), TUNE_RENDERERS)
        with turned_off(args.no_cache):
            spec = build_spec(args)
        if args.plot:
            check_plot_path(args.plot)
        executor = make_executor(args.executor, args.jobs, args.address)
        on_event, phase, stop = progress_bar(spec.max_compiles)
        try:
            with turned_off(args.no_cache):
                result = run_tune(spec, executor, on_event, phase)
        finally:
            stop()
        with open_output(args.output) as out:
            renderer.render(result, out, RenderOptions())
        if args.plot:
            write_plot(result, args.plot)
        if args.artifacts:
            _write_artifacts(result, Path(args.artifacts))
        if result.best is None:
            print(f"hloscope: error: {no_fit_line(result)}", file=sys.stderr)
            return EXIT_CHECK_FAILED
        return 0


def _list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _unknown(kind: str, name: str, known: tuple[str, ...]) -> HloscopeError:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return HloscopeError(f"unknown {kind} '{name}'{hint}; the step tags: {', '.join(known)}"
                         if kind == "name" else f"unknown {kind} '{name}'{hint}; choose from {', '.join(known)}",
                         EXIT_UNKNOWN_NAME)


def build_spec(args: argparse.Namespace) -> TuneSpec:
    """The search the arguments ask for, every input checked (one line each) before anything compiles
    (a ``--fn`` step's names are read from its first probe's compile: :func:`_fn_spec`)."""
    if args.maxtext is not None:
        return _maxtext_spec(args)
    if args.fn:
        return _fn_spec(args)
    if args.workload and args.workload_opt and args.workload != args.workload_opt:
        raise HloscopeError(f"two workloads given: '{args.workload}' and --workload '{args.workload_opt}'",
                            EXIT_BAD_INPUT)
    if args.args or args.args_from:
        raise HloscopeError("--args and --args-from describe a --fn step's arguments; a workload builds its own",
                            EXIT_BAD_INPUT)
    workload = args.workload or args.workload_opt or "mlp"
    sets = parse_sets(args.set)
    _, cfg = workloads.resolve(workload, sets)
    names = workloads.switch_names(cfg)
    if not names:
        raise HloscopeError(f"workload {workload} tags no names: nothing to tune", EXIT_NOTHING_TO_CHECK)
    for key in sets:
        if key in ("policy", "custom") or key in names:
            raise HloscopeError(f"--set {key}: tune chooses the names' switches; keep one with --fix NAME=CHOICE",
                                EXIT_BAD_INPUT)
    check_request(CompileRequest(compile_target(args), args.devices, workload=workload, sets=tuple(sets.items())))
    own = getattr(cfg, "switches", None)
    seq = getattr(cfg, "seq", 1)
    spec = _checked(args, workload, sets)
    return _with_space(args, spec, names, own if isinstance(own, dict) else None, seq if isinstance(seq, int) else 1,
                       isinstance(own, dict))


def _checked(args: argparse.Namespace, workload: str, sets: dict[str, str], fn: str | None = None,
             fn_args: str | None = None, maxtext: tuple[str, ...] | None = None) -> TuneSpec:
    """The search's settings that do not depend on the step's names, checked; its space is empty.
    The step: ``maxtext`` (MaxText's argv) when given, else ``fn`` with ``fn_args``, else the
    built-in ``workload`` with ``sets``."""
    target = get_target(compile_target(args))
    for c in _list(args.choices):
        if c not in CHOICES:
            raise _unknown("choice", c, CHOICES)
    if not _list(args.choices):
        raise HloscopeError(f"--choices is empty; choose from {', '.join(CHOICES)}", EXIT_BAD_INPUT)
    batches = _batches(args.batch_sizes, sets)
    objective = Objective(args.objective)
    if objective is not Objective.THROUGHPUT and len(batches) > 1:
        raise HloscopeError(f"--objective {objective} compares steps at one batch; give one --batch-sizes value or "
                            "--objective throughput", EXIT_BAD_INPUT)
    pipelined = _pipelined(args.pipelined)
    if args.jobs < 1:
        raise HloscopeError(f"--jobs {args.jobs}: expected 1 or more", EXIT_BAD_INPUT)
    hbm = target.memory_per_device
    limit = int(hbm * args.memory_fraction) if args.memory_fraction else hbm
    pool = host_pool_bytes(args.host_pool_gb, os.environ)
    space = Space((), (), batches, (True, False) if len(pipelined) > 1 else (None,))
    base = CompileRequest(compile_target(args), args.devices, workload=workload, sets=tuple(sorted(sets.items())),
                          scheduler=args.scheduler, pipelined=pipelined[0], memory_fraction=args.memory_fraction)
    request = (replace(base, workload=None, sets=(), maxtext=maxtext) if maxtext is not None
               else replace(base, workload=None, sets=(), fn=fn, args=fn_args, cwd=os.getcwd()) if fn else base)
    return TuneSpec(request, space, Limits(limit, pool), Goal(objective, 1, args.devices), args.max_compiles,
                    max(2, args.jobs))


def _with_space(args: argparse.Namespace, spec: TuneSpec, names: tuple[str, ...], own: dict[str, str] | None,
                seq: int, maxtext: bool, rest: str = "offload") -> TuneSpec:
    """``spec`` searching ``names`` (narrowed by --names, --fix, --choices); ``own``: the workload's
    own switches (a name not searched keeps its own, else ``rest``: a built-in workload's policy
    offloads them; a --fn or MaxText step recomputes them); ``maxtext``: the names are MaxText's
    custom-policy keys (its overrides are pasted)."""
    choices = _list(args.choices)
    searched = _list(args.names) or list(names)
    for n in searched:
        if n not in names:
            raise _unknown("name", n, names)
    fixed: dict[str, str] = {n: (own[n] if own is not None else rest) for n in names if n not in searched}
    for item in args.fix:
        n, eq, c = item.partition("=")
        if not eq:
            raise HloscopeError(f"--fix wants NAME=CHOICE, got '{item}'", EXIT_BAD_INPUT)
        if n not in names:
            raise _unknown("name", n, names)
        if c not in CHOICES:
            raise HloscopeError(f"--fix {item}: unknown choice '{c}'; choose from {', '.join(CHOICES)}",
                                EXIT_UNKNOWN_NAME)
        fixed[n] = c
    allowed = tuple((fixed[n],) if n in fixed else tuple(choices) for n in names)
    if all(len(a) == 1 for a in allowed):
        raise HloscopeError("every name is fixed: nothing to tune", EXIT_BAD_INPUT)
    batches = spec.space.batches
    space = Space(names, allowed, batches, spec.space.pipelined)
    if space.searches_pipelining and not any("offload" in a for a in allowed):
        raise HloscopeError("--pipelined on,off: no name may be offloaded (--choices, --fix), and pipelining acts on "
                            "host offloading alone; give one setting", EXIT_BAD_INPUT)
    own_switches = tuple(own[n] for n in names) if own is not None else None
    in_space = own_switches is not None and all(c in a for c, a in zip(own_switches, allowed, strict=True))
    probes = (len({space.uniform(p, batches[0]) for p in ("remat", "device", "offload")}) + len(batches) - 1 + in_space
              + space.searches_pipelining)
    if args.max_compiles < probes:
        raise HloscopeError(f"--max-compiles {args.max_compiles} leaves no room: the probes alone are {probes} "
                            f"compiles", EXIT_BAD_INPUT)
    return replace(spec, space=space, goal=replace(spec.goal, tokens_per_sample=seq), own_switches=own_switches,
                   maxtext=maxtext)


def _fn_spec(args: argparse.Namespace) -> TuneSpec:
    """The search over a ``--fn`` step's checkpoint names. Everything the command line says is checked
    first; the names are read from the step's trace, in its compile with every name recomputed (the
    first probe, which the search then reads from the cache), and checked after it."""
    if args.workload or args.workload_opt:
        raise HloscopeError(f"--fn {args.fn} and workload '{args.workload or args.workload_opt}' both name the step; "
                            "give one", EXIT_BAD_INPUT)
    if args.set:
        raise HloscopeError(f"--set {args.set[0]}: a --fn step has no workload settings (its shapes are its --args; "
                            "tune chooses its checkpoint names' switches)", EXIT_BAD_INPUT)
    if args.batch_sizes:
        raise HloscopeError("--batch-sizes: a --fn step's batch is in its --args; tune one --args at a time",
                            EXIT_BAD_INPUT)
    fn_args = args_spec(args)
    check_request(CompileRequest(compile_target(args), args.devices, fn=args.fn, args=fn_args or None, cwd=os.getcwd()))
    spec = _checked(args, args.fn, {}, args.fn, fn_args)
    if args.max_compiles < 3 + spec.space.searches_pipelining:
        raise HloscopeError(f"--max-compiles {args.max_compiles} leaves no room: the probes alone are "
                            f"{3 + spec.space.searches_pipelining} compiles", EXIT_BAD_INPUT)
    print(f"hloscope: reading the checkpoint names of {args.fn} from its compile with every name recomputed "
          "(the first probe)", file=sys.stderr)
    names = tuple(fn_names(spec))
    if not names:
        raise HloscopeError(f"{args.fn} tags no checkpoint names (jax.ad_checkpoint.checkpoint_name): nothing to tune",
                            EXIT_NOTHING_TO_CHECK)
    return _with_space(args, spec, names, None, 1, False, "remat")


def _maxtext_spec(args: argparse.Namespace) -> TuneSpec:
    """The search over MaxText's ``remat_policy: custom`` keys that its step tags, read (as for
    ``--fn``) from its compile with ``remat_policy=custom`` and every key at MaxText's default."""
    given = [x for x in (args.workload or args.workload_opt, args.fn and "--fn") if x]
    if given:
        raise HloscopeError(f"--maxtext and {given[0]} both name the step; give one", EXIT_BAD_INPUT)
    for what, value in (("--set", args.set), ("--batch-sizes", args.batch_sizes), ("--args", args.args),
                        ("--args-from", args.args_from)):
        if value:
            raise HloscopeError(f"{what}: --maxtext takes MaxText's own KEY=VALUE settings (per_device_batch_size=...)",
                                EXIT_BAD_INPUT)
    argv = tuple(args.maxtext)
    check_request(CompileRequest(compile_target(args), args.devices, maxtext=argv))
    keys = maxtext_custom_keys()
    for item in split_args(argv).overrides:
        key = item.partition("=")[0]
        if key == "remat_policy" or key in keys:
            raise HloscopeError(f"--maxtext {item}: tune chooses remat_policy and the custom policy's keys; keep one "
                                "with --fix NAME=CHOICE", EXIT_BAD_INPUT)
    spec = _checked(args, "maxtext", {}, maxtext=argv)
    if args.max_compiles < 3 + spec.space.searches_pipelining:
        raise HloscopeError(f"--max-compiles {args.max_compiles} leaves no room: the probes alone are "
                            f"{3 + spec.space.searches_pipelining} compiles", EXIT_BAD_INPUT)
    print("hloscope: reading the checkpoint names of MaxText's step from its compile with remat_policy=custom",
          file=sys.stderr)
    names = tuple(fn_names(spec))
    if not names:
        raise HloscopeError("MaxText's step tags none of its custom policy's keys: nothing to tune",
                            EXIT_NOTHING_TO_CHECK)
    return _with_space(args, spec, names, None, 1, True, "remat")


def _pipelined(text: str) -> list[bool]:
    """``--pipelined``: on, off, or both (searched; on first)."""
    values = _list(text)
    for v in values:
        if v not in ("on", "off"):
            raise _unknown("--pipelined value", v, ("on", "off"))
    if not values:
        raise HloscopeError("--pipelined is empty; give on, off or on,off", EXIT_BAD_INPUT)
    return [v == "on" for v in ("on", "off") if v in values]


def _batches(text: str, sets: dict[str, str]) -> tuple[int | None, ...]:
    try:
        batches = [int(b) for b in _list(text)]
    except ValueError:
        raise HloscopeError(f"--batch-sizes wants integers, got '{text}'", EXIT_BAD_INPUT) from None
    if any(b < 1 for b in batches):
        raise HloscopeError(f"--batch-sizes: {min(batches)} is not a per-device batch size (want integers >= 1)",
                            EXIT_BAD_INPUT)
    if batches and "batch" in sets:
        raise HloscopeError("--set batch and --batch-sizes both give the batch; give one", EXIT_BAD_INPUT)
    return tuple(sorted(set(batches))) or (None,)


def _write_artifacts(result: TuneResult, folder: Path) -> None:
    """Every verified compile's artifact folder in ``folder`` (read back from the compile cache)."""
    missing = 0
    for i, v in enumerate(result.verified):
        if not v.ok:
            continue
        request = cell_of(result.spec, v.config).request
        found = load_request(request)
        if found is None:
            missing += 1
            continue
        res, extra = found
        out = folder / f"{i:02d}-{_slug(v.label)}"
        report = analyze_result(res, request.target, vocab_of(extra), extra=extra,
                                source_path=str(out / OPTIMIZED_FILE))
        save_artifacts(out, res, report, extra, force=True, request=request)
    if missing:
        print(f"hloscope: {missing} verified compile(s) not in the cache (--no-cache): no artifact folder for them",
              file=sys.stderr)


def _slug(text: str) -> str:
    short = {"remat": "r", "device": "d", "offload": "o"}
    text = re.sub(r"=(remat|device|offload)\b", lambda m: "=" + short[m.group(1)], text)
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text)[:180]

