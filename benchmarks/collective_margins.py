"""The A100 archives' async collectives: the model's verdict, marginal cost and margin beside the measured overlap.

    python benchmarks/collective_margins.py fixtures/measured/pax_fsdp4_proc0.nsys.zip
    python benchmarks/collective_margins.py ../shared/measured/pax_fsdp4_4proc_proc1.zip [--target a100-fit.toml]

An nsys-jax archive is its own profile (docs/accuracy.md). Per async collective: the model's time, the
simulated wait at its done, the model's reading (hidden: that wait under half the model's time), its
marginal cost (the simulated step with it free), the factors on every collective's time and on every
other op's time at which that reading flips (``hloscope.analysis.simulate.margin.measure_collective_margins``),
and the measured share of its kernel's time other kernels ran beside it. Sorted by margin, nearest
flip first. docs/accuracy.md ("Margins against the measured overlap") holds the result.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("archive")
    ap.add_argument("--target", default=None)
    args = ap.parse_args()
    sys.path.insert(0, str(HERE.parent))
    from hloscope.analysis.measured.compare import classify
    from hloscope.analysis.measured.read import parse_measured
    from hloscope.analysis.report import reanalyze
    from hloscope.analysis.simulate.margin import class_error_factors, measure_collective_margins
    from hloscope.api import analyze
    from hloscope.hlo.profile_files import read_measured_file

    first = analyze(args.archive, args.target)
    r = reanalyze(first, replace(first.options, compare_with=parse_measured(read_measured_file(args.archive))))
    assert r.timeline is not None
    cm = measure_collective_margins(r.module, r.cost, r.pairs, r.transfers, r.index.callgraph, r.streams, r.timeline)
    factors = class_error_factors(r.target)
    measured = {o.start: o for o in r.measured.overlaps} if r.measured is not None else {}
    print(f"target {r.target.name}; simulated step {r.timeline.step_us / 1e3:.1f} ms")
    print(f"{'start':26s} {'model us':>8s} {'wait us':>8s} {'model':7s} {'marginal':>8s} {'margin':>7s} "
          f"{'class err':>9s} {'measured':>8s} measured")
    for n, c in sorted(cm.items(), key=lambda kv: (kv[1].margin or float("inf"), kv[0])):
        o = measured.get(n)
        ins = next(p.start for p in r.pairs if p.start.name == n)
        err = factors.get(classify(ins, r.cost), 1.0)
        margin = f"{c.margin:.2f}x" if c.margin is not None else ">9.5x"
        seen = "-" if o is None else f"{o.measured_overlap:.0%}"
        reading = "-" if o is None else ("hidden" if o.hidden_measured else "exposed")
        print(f"{n:26s} {c.model_us:8.1f} {c.wait_us:8.1f} {'hidden' if c.hidden else 'exposed':7s} "
              f"{c.marginal_us:8.1f} {margin:>7s} {err:8.2f}x {seen:>8s} {reading}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
