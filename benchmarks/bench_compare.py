"""Before and after, side by side in one run: the same benchmark on two checkouts of hloscope.

    python benchmarks/bench_compare.py REV            # REV (a git commit) against the working tree
    python benchmarks/bench_compare.py REV --layers 32 --rounds 3

REV is exported with ``git archive`` to a temporary folder. Each round runs
``bench_parse.py --json --no-memory`` once per checkout, alternating, each in a
fresh process that times jaxlib's C++ parser itself, so every ratio is taken in
one process on the same text; the table shows each checkout's best ratio over
the rounds (and the times of that round). The machine's load affects both alike.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def run(tree: Path, layers: str, repeat: int, clock: str) -> list[dict[str, Any]]:
    out = subprocess.run([sys.executable, str(HERE / "bench_parse.py"), "--json", "--no-memory", "--tree", str(tree),
                          "--layers", layers, "--repeat", str(repeat), "--clock", clock],
                         capture_output=True, text=True, check=True)
    rows: list[dict[str, Any]] = json.loads(out.stdout[out.stdout.index("["):])
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rev", help="the 'before' commit")
    ap.add_argument("--layers", default="32")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="as bench_parse.py --clock")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp)
        archive = subprocess.run(["git", "archive", args.rev], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        best: dict[tuple[str, int], dict[str, Any]] = {}
        for _ in range(args.rounds):
            for label, tree in (("before", before), ("after", ROOT)):
                for row in run(tree, args.layers, args.repeat, args.clock):
                    key = (label, row["layers"])
                    if key not in best or row["analyze_ratio"] < best[key]["analyze_ratio"]:
                        best[key] = row
    print(f"before = {args.rev}, after = working tree; best of {args.rounds} alternating rounds, "
          f"each best of {args.repeat}; {args.clock} clock")
    print(f"{'layers':>6} {'':>6} {'C++ s':>7} {'parse s':>8} {'x C++':>6} {'full s':>7} {'x C++':>6} "
          f"{'analysis s':>10}")
    for (label, layers), r in sorted(best.items(), key=lambda kv: (kv[0][1], kv[0][0] != "before")):
        print(f"{layers:>6} {label:>6} {r['xla_s']:>7.3f} {r['parse_s']:>8.3f} {r['parse_ratio']:>6.2f} "
              f"{r['analyze_s']:>7.3f} {r['analyze_ratio']:>6.2f} {r['analyze_s'] - r['parse_s']:>10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
