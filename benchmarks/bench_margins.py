"""What the margins cost: re-simulations per step, beside one simulation and the whole analysis.

    python benchmarks/bench_margins.py
    python benchmarks/bench_margins.py --repeat 3 fixtures/llama405b_hostmem.hlo.txt:gb200

For each fixture (``PATH:TARGET``; the default list is the repository's scheduled offload fixtures), the
best of --repeat wall times of ``analyze`` (blame included: it is part of the one simulation), of one
``simulate_step``, of ``measure_margins`` (marginal cost per transfer, link and compute flips, the
two error corners; each re-simulation forked where it first differs and stopped where it can differ no
more) and of ``measure_margins_brute`` (the same by whole re-simulations), with the number of
re-simulations and how many of them were marginal-cost ones.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT = ("mlp_offload.hlo.txt:h100-sxm", "llama_offload.hlo.txt:h100-sxm", "opt_state_offload.hlo.txt:h100-sxm",
           "llama405b_hostbuf.hlo.txt:gb200", "llama405b_hostmem.hlo.txt:gb200")


def best(fn, repeat: int):  # type: ignore[no-untyped-def]
    out, times = None, []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", default=list(DEFAULT))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, str(HERE.parent))
    from hloscope.analysis.simulate.margin import measure_margins
    from hloscope.analysis.simulate.step import simulate_step
    from hloscope.api import analyze
    from hloscope.hlo.parser import parse_hlo
    from tests.analysis.simulate.margins_brute import measure_margins_brute

    print(f"{'fixture':34s} {'target':9s} {'xfers':>5s} {'analyze':>8s} {'1 sim':>8s} {'margins':>8s} {'sims':>5s} "
          f"{'marginal':>8s} {'brute':>8s}")
    for case in args.cases:
        name, _, target = case.partition(":")
        path = Path(name) if Path(name).exists() else HERE.parent / "fixtures" / name
        module = parse_hlo(path.read_text(), path.name)
        r, t_analyze = best(lambda: analyze(module, target or "h100-sxm"), args.repeat)
        if r.timeline is None:
            continue
        _, t_sim = best(lambda: simulate_step(r.module, r.cost, list(r.pairs), list(r.transfers),
                                              r.index.callgraph, streams=r.streams), args.repeat)
        m, t_margins = best(lambda: measure_margins(r.module, r.cost, r.pairs, r.transfers,
                                                    r.index.callgraph, r.streams, r.timeline, r.options.thresholds),
                            args.repeat)
        _, t_brute = best(lambda: measure_margins_brute(r.module, r.cost, r.pairs, r.transfers, r.index.callgraph,
                                                        r.streams, r.timeline, r.options.thresholds), args.repeat)
        judged = len(m.transfers)
        marginal = sum(1 for k, t in r.timeline.transfers.items() if k in m.transfers
                       and (t.blame_us > 0 or t.wait_us_per_step > 0 or k in r.timeline.influential))
        print(f"{path.name:34s} {target:9s} {judged:5d} {t_analyze:7.3f}s {t_sim:7.3f}s {t_margins:7.2f}s "
              f"{m.simulations:5d} {marginal:8d} {t_brute:7.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
