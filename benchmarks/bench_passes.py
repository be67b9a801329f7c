"""Where the time of one whole analysis goes, pass by pass, beside XLA's C++ parse of the same text.

    python benchmarks/bench_passes.py                 # the 32-layer module, CPU clock
    python benchmarks/bench_passes.py --layers 8 --repeat 7
    python benchmarks/bench_passes.py --tree /tmp/old  # another checkout of hloscope

Times the C++ parse and the parse as bench_parse.py does (each result freed inside its
timing, as the whole call's are), then runs the passes in the order ``analysis.report.analyze_step`` runs them (the call
graph, transfers, names, pairs, then the cost model with the windows, the
simulation, the summary), then the JSON report, each timed alone (best of
--repeat, this process's CPU time). The cost model fills lazily: "windows" pays
for the costs of the ops in windows, "simulation" for the rest; the "warm" rows
run the same pass again on the filled model (the pass's own work). Then the whole
call as bench_parse.py times it (``report_to_dict(analyze(parse_hlo(text)))``),
with the time Python's cyclic garbage collector spent in it (``gc.callbacks``),
and the mean over --repeat whole calls with every collection counted.
Inputs: the cached compiles of bench_parse.py (benchmarks/.cache/).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _dropped(result: object) -> None:
    """Nothing: ``result`` is freed when the caller's expression ends (inside the timing)."""
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tree", type=Path, default=HERE.parent, help="the hloscope checkout to time (default this one)")
    args = ap.parse_args()
    os.environ["JAX_PLATFORMS"] = "cpu"
    sys.path.insert(0, str(args.tree))
    sys.path.insert(0, str(HERE))
    from bench_parse import make_input  # type: ignore[import-not-found]
    from jax._src.lib import hlo as xla_hlo

    from hloscope.analysis import report as passes
    from hloscope.analysis.index import ModuleIndex
    from hloscope.api import analyze
    from hloscope.hlo.parser import parse_hlo
    from hloscope.render.json_report import report_to_dict
    from hloscope.targets import get_target

    text = make_input(args.layers).read_text()
    target = get_target("h100-sxm")
    clock = time.process_time
    times: dict[str, list[float]] = {}

    def timed(name: str, fn: Callable[[], Any]) -> Any:
        t0 = clock()
        out = fn()
        times.setdefault(name, []).append(clock() - t0)
        return out

    collected = [0.0]
    started = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = clock()
        else:
            collected[0] += clock() - started[0]

    for _ in range(args.repeat):
        # As bench_parse.py times them: each result is freed inside the timed call, as the whole call's are.
        timed("C++ parse", lambda: _dropped(xla_hlo.hlo_module_from_text(text)))
        timed("parse", lambda: _dropped(parse_hlo(text)))
        module = parse_hlo(text)
        opts = passes.AnalysisOptions()
        gc.disable()  # as analyze_step runs them (hlo/gcpause.py)
        index = ModuleIndex(module)
        timed("call graph", lambda: index.callgraph)
        found = timed("transfers (+ names)", lambda: passes.find_host_transfers(index, opts.host_space))
        old = getattr(passes, "name_transfers", None)  # a --tree from before names moved into the pass
        transfers = timed("names", lambda: old(index, found, ())) if old is not None else found
        pairs = timed("pairs", lambda: tuple(passes.pair_async_ops(index)))
        cost = passes.CostModel(index, target, opts.host_space, opts.link_mode)
        verdicts = timed("windows (+ their op costs)",
                         lambda: passes.judge_overlap(index, transfers, cost, pairs, opts))
        timed("  windows warm", lambda: passes.judge_overlap(index, transfers, cost, pairs, opts))
        timeline = timed("simulation (+ the other op costs)",
                         lambda: passes.simulate_step(module, cost, list(pairs), transfers, index.callgraph))
        timed("  simulation warm", lambda: passes.simulate_step(module, cost, list(pairs), transfers, index.callgraph))
        apply = getattr(passes, "apply_timeline", None)  # a --tree from before verdicts were decided once

        def judged() -> Any:
            if apply is not None:
                return apply(verdicts, timeline, opts)
            return passes.judge_overlap(index, transfers, cost, pairs, opts, timeline)  # windows warm

        timed("verdicts + summary", lambda: passes.summarize(judged(), index.callgraph.unknown_trip, timeline))
        gc.enable()
        report = analyze(module, target)
        timed("JSON", lambda: report_to_dict(report))
        gc.callbacks.append(on_gc)
        collected[0] = 0.0
        timed("whole call", lambda: report_to_dict(analyze(parse_hlo(text), target)))
        gc.callbacks.remove(on_gc)
        times.setdefault("  of which GC", []).append(collected[0])
    gc.callbacks.append(on_gc)
    collected[0] = 0.0
    t0 = clock()
    for _ in range(args.repeat):
        report_to_dict(analyze(parse_hlo(text), target))
    mean = (clock() - t0) / args.repeat
    gc.callbacks.remove(on_gc)

    best = {k: min(v) for k, v in times.items()}
    xla = best["C++ parse"]
    from bench_parse import build_line  # type: ignore[import-not-found]

    print(f"{args.layers} layers, {len(text) / 1e6:.2f} MB; best of {args.repeat}, CPU ms; x = / C++ parse")
    print(build_line())
    for name, t in best.items():
        print(f"{name:>36} {t * 1e3:8.1f} {t / xla:6.2f}x")
    print(f"{'whole call, mean of ' + str(args.repeat) + ', all GC':>36} {mean * 1e3:8.1f} {mean / xla:6.2f}x"
          f"   (GC {collected[0] / args.repeat * 1e3:.1f} ms per call)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
