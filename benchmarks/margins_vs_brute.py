"""The margins as the report computes them, held against whole re-simulations, on every fixture.

    python benchmarks/margins_vs_brute.py                    # every scheduled fixture with transfers
    python benchmarks/margins_vs_brute.py --layers 8,32      # and bench_parse.py's unrolled modules
    python benchmarks/margins_vs_brute.py --save DIR         # keep each JSON and text report in DIR
    python benchmarks/margins_vs_brute.py --against DIR      # compare them with those of an earlier --save

For each fixture (``fixtures/**/*.hlo.txt`` but XLA's test modules; judged for tpu-v5e under a
``tpu`` folder, gb200 for the two 405B modules, h100-sxm otherwise) whose simulated step has a judged
transfer: ``measure_margins`` (what the report prints) and ``measure_margins_brute`` (one whole
``simulate_step`` per what-if, the reference), compared field by field: every flip, verdict, corner
and the count of re-simulations equal; the largest difference of a marginal cost; and the JSON report
built on each, byte for byte. Exit status 1 when anything but a marginal cost's float rounding differs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def cases(layers: list[int]) -> list[tuple[str, Path, str]]:
    out = []
    for p in sorted((ROOT / "fixtures").rglob("*.hlo.txt")):
        rel = p.relative_to(ROOT / "fixtures").as_posix()
        if rel.startswith("xla-tests/"):
            continue
        target = "tpu-v5e" if "tpu" in rel else "gb200" if rel.startswith("llama405b") else "h100-sxm"
        out.append((rel, p, target))
    if layers:
        sys.path.insert(0, str(HERE))
        from bench_parse import make_input  # compiled deviceless on first use, then cached

        out += [(f"{n}-layer", make_input(n), "h100-sxm") for n in layers]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", default="")
    ap.add_argument("--no-brute", action="store_true", help="skip the whole re-simulations (with --save/--against)")
    ap.add_argument("--save", type=Path)
    ap.add_argument("--against", type=Path)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from hloscope.api import analyze
    from hloscope.hlo.parser import parse_hlo
    from tests.analysis.simulate.margins_brute import measure_margins_brute

    bad = 0
    for label, path, target in cases([int(x) for x in args.layers.split(",") if x]):
        r = analyze(parse_hlo(path.read_text(), path.name), target)
        if r.timeline is None or r.margins is None or not r.margins.transfers:
            continue
        fast = r.margins
        fast_json = json.dumps(r.to_dict(), indent=1)
        line = f"{label:55s} {target:9s} {len(fast.transfers):4d} judged {fast.simulations:4d} re-sims"
        file = label.replace("/", "__") + f".{target}"
        if args.save is not None:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / f"{file}.json").write_text(fast_json)
            (args.save / f"{file}.txt").write_text(r.to_text())
        if args.against is not None:
            same_json = (args.against / f"{file}.json").read_text() == fast_json
            same_text = (args.against / f"{file}.txt").read_text() == r.to_text()
            line += f"  vs saved: json {'same' if same_json else 'DIFFERS'}, text {'same' if same_text else 'DIFFERS'}"
            bad += (not same_json) + (not same_text)
        if not args.no_brute:
            tl = r.timeline
            brute = measure_margins_brute(r.module, r.cost, r.pairs, r.transfers, r.index.callgraph, r.streams, tl,
                                          r.options.thresholds)
            worst = max(abs(fast.transfers[k].marginal_us - b.marginal_us) for k, b in brute.transfers.items())
            same = (fast.transfers.keys() == brute.transfers.keys()
                    and all(dataclasses.replace(fast.transfers[k], marginal_us=0.0)
                            == dataclasses.replace(b, marginal_us=0.0) for k, b in brute.transfers.items())
                    and (fast.simulations, fast.corner_step_us) == (brute.simulations, brute.corner_step_us))
            r.__dict__["margins"] = brute  # the cached property, filled by the reference
            same_json = json.dumps(r.to_dict(), indent=1) == fast_json
            line += (f"  vs brute: figures {'same' if same else 'DIFFER'}, marginal max diff {worst:.2g} us, "
                     f"json {'same' if same_json else 'DIFFERS'}")
            bad += (not same) + (not same_json)
        print(line, flush=True)
    print("all the same" if not bad else f"{bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
