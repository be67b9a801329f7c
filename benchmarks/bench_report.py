"""The complete report's cost, stage by stage, beside XLA's C++ parser; before and after in one run.

    python benchmarks/bench_report.py                        # this checkout: 8/32-layer modules, 405B for GB200
    python benchmarks/bench_report.py --before main          # and a git revision, alternating, in the same run
    python benchmarks/bench_report.py --before-tree ../main  # or another checkout as it is on disk
    python benchmarks/bench_report.py --rounds 3 --repeat 5 --no-process
    python benchmarks/bench_report.py --tpu --layers "" --no-405b --before main   # TPU steps alone

Inputs: the unrolled Llama-style modules of benchmarks/bench_parse.py (compiled deviceless for 8
H100s, cached under benchmarks/.cache/; judged for h100-sxm) and fixtures/llama405b_hostmem.hlo.txt
(judged for gb200); with --tpu, three measured TPU v5e steps too (fixtures/measured/tpu_v5e/big,
tpu_v5e_blocks/mha_off and gpt2xl_off, whose fused MLP is a priced chain; judged for tpu-v5e: the TPU cost
profile's hot path). For each checkout, one
fresh process per round times, on the same text, best of
--repeat: jaxlib's C++ ``hlo_module_from_text`` ("C++"), hloscope's ``parse_hlo`` ("parse"), the
analysis of the parsed module without the margins ("core": ``analyze``), the margins (``report.margins``:
marginal costs, flips, error corners), the text report (``to_text``) and the JSON report
(``json.dumps(to_dict())``) of a report whose margins are already computed, and the complete JSON
report from the text ("complete": parse + core + margins + JSON, the issue-44 figure). Each figure is
also shown as a multiple of the C++ parse in the same process. The best round of each checkout is shown.

Then, unless --no-process, whole processes (best of --repeat): ``python -m hloscope analyze FILE``
against ``python -c`` importing JAX and running the C++ parse on the same file. ``--clock cpu`` times CPU
(this process's, or a whole process's own) instead of wall time: steadier on a busy machine.

Then the TUI's first screen (``--tui-runs``, 3 by default; 0: none): ``hloscope tui FILE --target T`` in
tmux, from its start to a row of the transfer table with its verdict on screen (benchmarks/bench_tui.py),
the median of the runs, quiet (the machine as it is) and loaded (one busy process per core beside it).
``--pure-too`` times this checkout twice, as built and with HLOSCOPE_PURE=1 (pure Python). The last
lines name each checkout's build (compiled by the install, or pure Python).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
STAGES = ("cpp", "parse", "core", "margins", "text", "json", "complete")
FIXTURE_405B = ROOT / "fixtures" / "llama405b_hostmem.hlo.txt"
TPU_INPUTS = (("v5e-mlp", ROOT / "fixtures" / "measured" / "tpu_v5e" / "big" / "step.hlo.txt"),
              ("v5e-mha", ROOT / "fixtures" / "measured" / "tpu_v5e_blocks" / "mha_off" / "step.hlo.txt"),
              ("v5e-gpt2xl", ROOT / "fixtures" / "measured" / "tpu_v5e_blocks" / "gpt2xl_off" / "step.hlo.txt"))

_CPP_PROCESS = ("import os, sys; os.environ['JAX_PLATFORMS'] = 'cpu'; import jax; "
                "from jax._src.lib import hlo as h; h.hlo_module_from_text(open(sys.argv[1]).read())")


def inputs(layers: list[int], with_405b: bool, with_tpu: bool = False) -> list[tuple[str, Path, str]]:
    sys.path.insert(0, str(HERE))
    from bench_parse import make_input  # compiles (deviceless) on first use, then cached

    out = [(f"{n}-layer", make_input(n), "h100-sxm") for n in layers]
    if with_405b:
        out.append(("405B", FIXTURE_405B, "gb200"))
    if with_tpu:
        out += [(label, path, "tpu-v5e") for label, path in TPU_INPUTS]
    return out


CLOCK = time.perf_counter


def best(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = CLOCK()
        fn()
        times.append(CLOCK() - t0)
    return min(times)


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def best_process(cmd: list[str], repeat: int, cpu: bool, **kw: Any) -> float:
    """Best of ``repeat`` runs of ``cmd``: wall time, or (``cpu``) the child's CPU time."""
    times = []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), children_cpu()
        subprocess.run(cmd, capture_output=True, check=False, **kw)
        times.append(children_cpu() - c0 if cpu else time.perf_counter() - t0)
    return min(times)


def child(cases: list[tuple[str, Path, str]], repeat: int) -> list[dict[str, Any]]:
    """Time every stage in this process (the checkout on sys.path[0])."""
    os.environ["JAX_PLATFORMS"] = "cpu"
    from jax._src.lib import hlo as xla_hlo

    from hloscope.api import analyze
    from hloscope.hlo.parser import parse_hlo

    rows = []
    for label, path, target in cases:
        text = path.read_text()
        module = parse_hlo(text, path.name)
        t: dict[str, float] = {
            "cpp": best(lambda: xla_hlo.hlo_module_from_text(text), repeat),
            "parse": best(lambda: parse_hlo(text, path.name), repeat),
            "core": best(lambda: analyze(module, target), repeat),
        }
        reports = [analyze(module, target) for _ in range(repeat)]  # margins are cached: one report per run
        it = iter(reports)
        t["margins"] = best(lambda: next(it).margins, repeat)
        done = reports[0]
        t["text"] = best(lambda: done.to_text(), repeat)
        t["json"] = best(lambda: json.dumps(done.to_dict()), repeat)
        t["complete"] = best(lambda: json.dumps(analyze(parse_hlo(text, path.name), target).to_dict()),
                             repeat)
        rows.append({"input": label, "mb": round(len(text.encode()) / 1e6, 2), "target": target,
                     "simulations": done.margins.simulations if done.margins is not None else 0, **t})
    return rows


def run_tree(tree: Path, args: argparse.Namespace, env: str = "") -> list[dict[str, Any]]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--tree", str(tree), "--layers", args.layers,
           "--repeat", str(args.repeat), "--clock", args.clock] + (["--no-405b"] if args.no_405b else []) \
        + (["--tpu"] if args.tpu else [])
    out = subprocess.run(["env", *env.split(), *cmd], capture_output=True, text=True, check=True, cwd=tree)
    rows: list[dict[str, Any]] = json.loads(out.stdout[out.stdout.index("["):])
    return rows


def process_times(tree: Path, cases: list[tuple[str, Path, str]], repeat: int,
                  cpu: bool, extra_env: str = "") -> dict[str, tuple[float, float]]:
    """Per input, the best time of ``hloscope analyze FILE`` and of a JAX process running the C++ parse."""
    env = dict(os.environ, PYTHONPATH=str(tree), JAX_PLATFORMS="cpu",
               **dict(kv.split("=", 1) for kv in extra_env.split()))
    out = {}
    for label, path, target in cases:
        hs = best_process([sys.executable, "-m", "hloscope", "analyze", str(path), "--target", target], repeat, cpu,
                          cwd=tree, env=env)
        cpp = best_process([sys.executable, "-c", _CPP_PROCESS, str(path)], repeat, cpu, cwd=tree, env=env)
        out[label] = (hs, cpp)
    return out


# -- the TUI's first screen and the build, beside the stages (issue 44 items 2-4) -------------------


def builds(trees: list[tuple[str, Path]], pure_too: bool) -> list[tuple[str, Path, str]]:
    """(label, tree, env) per checkout; with ``pure_too`` this checkout again with HLOSCOPE_PURE=1 (the
    sources of a compiled install: hloscope.compiled), labelled ``, pure``."""
    out = [(label, tree, "") for label, tree in trees]
    label, tree = trees[-1]
    return [*out, (f"{label}, pure", tree, "HLOSCOPE_PURE=1")] if pure_too else out


def build_of(tree: Path, env: str) -> str:
    """hloscope.compiled's line for ``tree`` run with ``env`` (a checkout without it: "build: ?")."""
    code = "from hloscope import compiled; print(compiled.describe(compiled.current()))"
    out = subprocess.run(["env", *env.split(), sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                         text=True, cwd=tree, env=dict(os.environ, PYTHONPATH=str(tree)))
    return out.stdout.strip() or "build: ?"


def tui_first_screens(runs: list[tuple[str, Path, str]], cases: list[tuple[str, Path, str]],
                      n: int) -> dict[tuple[str, str], tuple[float, float]]:
    """Per (checkout, input): the median of ``n`` runs of ``hloscope tui FILE`` from the tmux start to
    a row's verdict on screen (benchmarks/bench_tui.py), with the machine as it is ("quiet") and
    with one busy process per core beside it ("loaded"); the checkouts alternate."""
    import shutil
    import statistics

    import bench_tui

    if shutil.which("tmux") is None:
        print("TUI first screen: skipped (tmux not installed)")
        return {}
    got: dict[tuple[str, str, int], list[float]] = {}
    for loaded in (0, 1):
        with bench_tui.busy((os.cpu_count() or 1) if loaded else 0):
            for _ in range(n):
                for label, tree, env in runs:
                    for inp, path, target in cases:
                        got.setdefault((label, inp, loaded), []).append(
                            bench_tui.first_verdicts_s(tree, str(path), f"--target {target}", env))
    return {(label, inp): (statistics.median(got[(label, inp, 0)]), statistics.median(got[(label, inp, 1)]))
            for label, _t, _e in runs for inp, _p, _g in cases}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", default="8,32")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--no-405b", action="store_true")
    ap.add_argument("--tpu", action="store_true", help="the measured TPU v5e steps too (judged for tpu-v5e)")
    ap.add_argument("--before", metavar="REV", help="a git revision to time beside this checkout")
    ap.add_argument("--before-tree", type=Path, help="another checkout to time beside this one")
    ap.add_argument("--no-process", action="store_true", help="skip the whole-process figures")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall time, or CPU time (this process's; a whole process's own): steadier on a busy machine")
    ap.add_argument("--pure-too", action="store_true",
                    help="each checkout again with HLOSCOPE_PURE=1 (its sources, not its compiled modules)")
    ap.add_argument("--tui-runs", type=int, default=3,
                    help="runs of the TUI's first screen per checkout and input, quiet and loaded (0: none)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tree", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = ap.parse_args()
    layers = [int(x) for x in args.layers.split(",") if x]
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.child:
        sys.path.insert(0, str(args.tree))
        print(json.dumps(child(inputs(layers, not args.no_405b, args.tpu), args.repeat)))
        return 0
    cases = inputs(layers, not args.no_405b, args.tpu)
    with tempfile.TemporaryDirectory() as tmp:
        trees: list[tuple[str, Path]] = []
        if args.before:
            archive = subprocess.run(["git", "archive", args.before], cwd=ROOT, capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            trees.append((f"before ({args.before})", Path(tmp)))
        elif args.before_tree:
            trees.append((f"before ({args.before_tree})", args.before_tree.resolve()))
        trees.append(("this checkout", ROOT))
        runs = builds(trees, args.pure_too)
        best_rows: dict[tuple[str, str], dict[str, Any]] = {}
        for _ in range(args.rounds):
            for label, tree, env in runs:
                for row in run_tree(tree, args, env):
                    key = (label, row["input"])
                    kept = best_rows.get(key)
                    if kept is None or row["complete"] / row["cpp"] < kept["complete"] / kept["cpp"]:
                        best_rows[key] = row
        cpu = args.clock == "cpu"
        procs = ({} if args.no_process else
                 {label: process_times(tree, cases, args.repeat, cpu, env) for label, tree, env in runs})
        tui = tui_first_screens(runs, cases, args.tui_runs) if args.tui_runs else {}
        built = {label: build_of(tree, env) for label, tree, env in runs}
    print(f"{args.clock} clock; best of {args.repeat} per figure, best of {args.rounds} round(s) per checkout; "
          f"load average "
          f"{os.getloadavg()[0]:.1f} at the end; seconds, and (x C++) the multiple of the C++ parse in the same "
          "process")
    head = f"{'input':9} {'checkout':28} {'sims':>5} " + " ".join(f"{s:>15}" for s in STAGES)
    print(head)
    for inp in dict.fromkeys(r["input"] for r in best_rows.values()):
        for label, _tree, _env in runs:
            r = best_rows[(label, inp)]
            cells = " ".join(f"{r[s]:>7.3f} ({r[s] / r['cpp']:>5.2f})" for s in STAGES)
            print(f"{inp:9} {label:28} {r['simulations']:>5} {cells}")
    if procs:
        print(f"whole process, {args.clock} s: hloscope analyze FILE / a JAX process running the C++ parse (ratio)")
        for label, got in procs.items():
            print(f"  {label:28} " + "  ".join(f"{inp}: {hs:.2f} / {cpp:.2f} ({hs / cpp:.2f}x)"
                                             for inp, (hs, cpp) in got.items()))
    if tui:
        print(f"hloscope tui FILE: tmux start -> a row's verdict on screen, wall s, median of {args.tui_runs}; "
              "quiet (the machine as it is) / loaded (one busy process per core beside it)")
        for label, _tree, _env in runs:
            print(f"  {label:28} " + "  ".join(f"{inp}: {q:.2f} / {ld:.2f}" for (lb, inp), (q, ld) in tui.items()
                                             if lb == label))
    for label, _tree, _env in runs:
        print(f"{label}: {built[label]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
