"""Simulation speed next to parse speed, on the same real modules as bench_parse.py.

    python benchmarks/bench_simulate.py                # layers 32 (the ~7 MB, ~44,000-line module)
    python benchmarks/bench_simulate.py --layers 8,16,32

Inputs: the unrolled Llama-style steps bench_parse.py compiles and caches under
benchmarks/.cache/ (compiled here the same way if missing). For each it reports
the best of --repeat wall times of ``parse_hlo``, of building the simulation's
inputs (index, transfers, async pairs, cost model), and of ``simulate_step``
alone, with the ratio simulate / parse. The simulation must cost less than the
parse.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", default="32")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--target", default="h100-sxm")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.environ["JAX_PLATFORMS"] = "cpu"
    sys.path.insert(0, str(HERE.parent))
    sys.path.insert(0, str(HERE))
    from bench_parse import best, make_input

    from hloscope.analysis.cost.roofline import CostModel
    from hloscope.analysis.simulate.step import simulate_step
    from hloscope.analysis.structure.index import ModuleIndex
    from hloscope.analysis.structure.pairs import pair_async_ops
    from hloscope.analysis.structure.transfers import find_host_transfers
    from hloscope.hlo.parser import parse_hlo
    from hloscope.targets import get_target

    target = get_target(args.target)
    rows = []
    for layers in [int(x) for x in args.layers.split(",")]:
        text = make_input(layers).read_text()
        module = parse_hlo(text)

        def inputs() -> tuple[Any, ...]:
            index = ModuleIndex(module)
            return (index, find_host_transfers(index), pair_async_ops(index), CostModel(index, target))

        index, transfers, pairs, _ = inputs()
        t_parse = best(lambda: parse_hlo(text), args.repeat)
        t_inputs = best(inputs, args.repeat)
        # A fresh cost model each time (on the shared index): its per-op caches are part of the simulation's cost.
        t_sim = best(lambda: simulate_step(module, CostModel(index, target), pairs, transfers,
                                           index.callgraph), args.repeat)
        tl = simulate_step(module, CostModel(index, target), pairs, transfers, index.callgraph)
        rows.append({
            "layers": layers, "mb": round(len(text.encode()) / 1e6, 2), "lines": text.count("\n"),
            "instructions": module.instruction_count(), "parse_s": round(t_parse, 4),
            "inputs_s": round(t_inputs, 4), "simulate_s": round(t_sim, 4),
            "simulate_over_parse": round(t_sim / t_parse, 2),
            "slices": sum(len(s) for s in tl.slices.values()), "step_ms": round(tl.step_us / 1e3, 3),
        })
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'layers':>6} {'MB':>6} {'lines':>7} {'parse s':>8} {'inputs s':>9} {'simulate s':>10} "
          f"{'sim/parse':>9} {'slices':>7} {'step ms':>9}")
    for r in rows:
        print(f"{r['layers']:>6} {r['mb']:>6.2f} {r['lines']:>7} {r['parse_s']:>8.3f} {r['inputs_s']:>9.3f} "
              f"{r['simulate_s']:>10.3f} {r['simulate_over_parse']:>9.2f} {r['slices']:>7} {r['step_ms']:>9.3f}")
    print("inputs: ModuleIndex + find_host_transfers + pair_async_ops + CostModel; simulate: simulate_step alone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
