"""Where the time of one whole analysis goes, pass by pass, beside XLA's C++ parse of the same text.

    python benchmarks/bench_passes.py                 # the 32-layer module, CPU clock
    python benchmarks/bench_passes.py --layers 8 --repeat 7
    python benchmarks/bench_passes.py --tree /tmp/old  # another checkout of hloscope

Times the C++ parse and the parse as bench_parse.py does (each result freed inside its
timing, as the whole call's are), then the step context (index and cost model), the call graph
and every row of the pass table (``hloscope.analysis.passes.PASSES``, in the order
``analyze_step`` runs them), then the JSON report, each timed alone (best of --repeat, this
process's CPU time). The cost model fills lazily: "timeline" pays for the costs of the ops it
replays, "verdicts" for those of windows it did not; the "warm" rows run the simulation and the
verdicts again on the filled model (the pass's own work). Then the whole
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

    from hloscope.analysis.context import StepContext
    from hloscope.analysis.inputs import StepInputs
    from hloscope.analysis.passes import PASSES, TIMELINE, VERDICTS
    from hloscope.analysis.simulate.options import AnalysisOptions
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
        gc.disable()  # as analyze_step runs them (hlo/gcpause.py)
        ctx = timed("context (index, cost model)",
                    lambda: StepContext(StepInputs(module, "bench"), target, AnalysisOptions()))
        timed("call graph", lambda: ctx.index.callgraph)
        for row in PASSES:
            timed(row.name, lambda: ctx.run((row,)))  # called at once: the late-bound row is this one
        timed("  timeline warm", lambda: TIMELINE.run(ctx))
        timed("  verdicts warm", lambda: VERDICTS.run(ctx))
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
