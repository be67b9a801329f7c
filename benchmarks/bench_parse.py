"""Parse and analysis speed and memory, side by side with XLA's C++ parser, in one run.

    python benchmarks/bench_parse.py            # layers 8,16,32 (the 32-layer module is ~7 MB)
    python benchmarks/bench_parse.py --layers 8,16,32,64
    python benchmarks/bench_parse.py --tree /tmp/old   # time another checkout of hloscope (bench_compare.py)

Inputs are real: an unrolled Llama-style training step compiled deviceless for
8 H100s by ``hloscope compile`` (cached under benchmarks/.cache/). For each
input it reports the best of --repeat wall times of jaxlib's C++
``hlo_module_from_text``, hloscope's ``parse_hlo`` (the printer-shaped fast
path), the general layout-free path alone on the same text (what a module in
any other layout costs), and parse + full analysis,
their ratios, time per MB (flat when cost is linear), and the resident memory
each result holds (RSS after minus before, result kept alive, fresh process).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"

_MEM_PROBE = r"""
import os, sys
os.environ["JAX_PLATFORMS"] = "cpu"
which, path = sys.argv[1], sys.argv[2]
from jax._src.lib import hlo as xla_hlo
from hloscope.hlo.parser import parse_hlo
from hloscope.api import analyze
from hloscope.render.json_report import report_to_dict
from hloscope.targets import get_target
def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
text = open(path).read()
before = rss_kib()
if which == "xla":
    m = xla_hlo.hlo_module_from_text(text)
elif which == "parse":
    m = parse_hlo(text)
else:
    m = report_to_dict(analyze(parse_hlo(text), get_target("h100-sxm")))
print(rss_kib() - before)  # m is still alive: memory the parsed module (and report) hold
"""


def make_input(layers: int) -> Path:
    out = CACHE / f"llama-unrolled-{layers}"
    hlo = out / "optimized.hlo.txt"
    if not hlo.exists():
        CACHE.mkdir(exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "hloscope.cli", "compile", "--workload", "llama", "--set", f"layers={layers}",
             "--set", "scan=false", "--out", str(out), "--json", "-o", os.devnull],
            check=True, cwd=HERE.parent)
    return hlo


CLOCK = time.perf_counter


def best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t0 = CLOCK()
        fn()
        times.append(CLOCK() - t0)
    return min(times)


def full_time(make_report, to_dict, repeat: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Parse + analysis + the JSON report, best of ``repeat``, and the margins' part of that same run
    (computed on first use: forced just before the JSON, timed apart; 0 on a checkout without them)."""
    runs = []
    for _ in range(repeat):
        t0 = CLOCK()
        report = make_report()
        t1 = CLOCK()
        if hasattr(type(report), "margins"):
            report.margins  # noqa: B018 - the first use computes them
        t2 = CLOCK()
        to_dict(report)
        runs.append((CLOCK() - t0, t2 - t1))
    return min(runs)


def peak_kib(which: str, path: Path, tree: Path) -> int:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", _MEM_PROBE, which, str(path)], capture_output=True, text=True,
                         check=True, env=env)
    return int(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", default="8,16,32")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--tree", type=Path, default=HERE.parent, help="the hloscope checkout to time (default this one)")
    ap.add_argument("--no-memory", action="store_true", help="skip the resident-memory probes")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall time, or this process's CPU time (steadier on a busy machine)")
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    os.environ["JAX_PLATFORMS"] = "cpu"
    sys.path.insert(0, str(args.tree))
    from jax._src.lib import hlo as xla_hlo

    from hloscope.api import analyze
    from hloscope.hlo.general import parse_general
    from hloscope.hlo.parser import parse_hlo
    from hloscope.render.json_report import report_to_dict
    from hloscope.targets import get_target

    target = get_target("h100-sxm")
    rows = []
    for layers in [int(x) for x in args.layers.split(",")]:
        path = make_input(layers)
        text = path.read_text()
        mb = len(text.encode()) / 1e6
        t_xla = best(lambda: xla_hlo.hlo_module_from_text(text), args.repeat)
        t_parse = best(lambda: parse_hlo(text), args.repeat)
        t_general = best(lambda: parse_general(text), args.repeat)
        t_full, t_margins = full_time(lambda: analyze(parse_hlo(text), target), report_to_dict, args.repeat)
        rows.append({
            "layers": layers, "mb": round(mb, 2), "lines": text.count("\n"),
            "xla_s": round(t_xla, 4), "parse_s": round(t_parse, 4), "analyze_s": round(t_full, 4),
            "general_s": round(t_general, 4), "general_ratio": round(t_general / t_xla, 2),
            "parse_ratio": round(t_parse / t_xla, 2), "analyze_ratio": round(t_full / t_xla, 2),
            "analyze_ms_per_mb": round(t_full / mb * 1e3, 1),
            "margins_s": round(t_margins, 4), "without_margins_ratio": round((t_full - t_margins) / t_xla, 2),
            **({} if args.no_memory else {"xla_rss_kib": peak_kib("xla", path, args.tree),
                                          "parse_rss_kib": peak_kib("parse", path, args.tree),
                                          "analyze_rss_kib": peak_kib("analyze", path, args.tree)}),
        })
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'layers':>6} {'MB':>6} {'lines':>7} {'C++ s':>7} {'parse s':>8} {'x C++':>6} {'general s':>9} "
          f"{'x C++':>6} {'full s':>7} "
          f"{'x C++':>6} {'margins s':>9} {'-margins x C++':>14} {'full ms/MB':>10} {'C++ MiB':>8} {'parse MiB':>9} "
          f"{'full MiB':>8}")
    for r in rows:
        print(f"{r['layers']:>6} {r['mb']:>6.2f} {r['lines']:>7} {r['xla_s']:>7.3f} {r['parse_s']:>8.3f} "
              f"{r['parse_ratio']:>6.2f} {r['general_s']:>9.3f} {r['general_ratio']:>6.2f} "
              f"{r['analyze_s']:>7.3f} {r['analyze_ratio']:>6.2f} {r['margins_s']:>9.3f} "
              f"{r['without_margins_ratio']:>14.2f} "
              f"{r['analyze_ms_per_mb']:>10.1f} {r.get('xla_rss_kib', 0) / 1024:>8.1f} "
              f"{r.get('parse_rss_kib', 0) / 1024:>9.1f} {r.get('analyze_rss_kib', 0) / 1024:>8.1f}")
    print("ratios: hloscope time / jaxlib C++ hlo_module_from_text time, same input, same process; 'full' is parse +")
    print("analysis + the JSON report, margins included (computed on first use: marginal cost, flips and error")
    print("corners, docs/verdicts.md); 'margins s' is their part of it (0 on a checkout without them)")
    print(build_line())
    return 0


def build_line() -> str:
    """Which hloscope ran: the compiled build an install made, or pure Python (hloscope.compiled)."""
    from hloscope import compiled

    return compiled.describe(compiled.current())


if __name__ == "__main__":
    sys.exit(main())
