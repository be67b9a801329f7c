"""hloscope's TPU cost of each op beside the chip's time for it, for the measured v5e runs.

For each run (a step's ``step.hlo.txt`` and ``profile/step.xplane.pb``), every op the profile times
(its "XLA Ops" line names each instruction) with the model's estimate of one execution, the FLOPs
and HBM bytes the estimate is made of, and predicted/measured; grouped by the op's class.

Usage: python benchmarks/tpu_ops.py [RUN_FOLDER ...] [--top N] [--tsv FILE]
(default: every run of fixtures/measured/tpu_v5e and fixtures/measured/tpu_v5e_blocks)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.measured.read import parse_measured
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.artifact import read_step
from hloscope.hlo.profile_files import read_measured_file
from hloscope.targets import get_target

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "measured"


def op_kind(model: CostModel, ins_name: str, by_name: dict) -> str:  # type: ignore[type-arg]
    ins = by_name.get(ins_name)
    if ins is None:
        return "?"
    if ins.opcode == "fusion":
        flops, _, _, _ = model.roofline_terms(ins)
        if flops:
            return "matmul"
        return "fusion"
    return ins.opcode


def rows_of(run: Path, module: str = "") -> list[tuple[str, str, str, float, float, float, int, int]]:
    target = get_target("tpu-v5e")
    hlo = run / "step.hlo.txt"
    step = read_step(str(hlo), target)
    index = ModuleIndex(step.inputs.module)
    model = CostModel(index, target)
    by_name = index.instructions_by_name
    prof = parse_measured(read_measured_file(str(run / "profile" / "step.xplane.pb")), module)
    out = []
    for name, st in prof.ops.items():
        ins = by_name.get(name)
        if ins is None or ins.opcode in ("while", "call", "conditional") or "start" in ins.opcode \
                or "done" in ins.opcode:
            continue
        c = model.op_cost(ins)
        out.append((run.name, name, op_kind(model, name, by_name), model.instruction_us(ins), st.per_call_us,
                    c.flops, c.hbm_bytes, st.calls))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*")
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--tsv")
    args = ap.parse_args()
    runs = [Path(r) for r in args.runs] or sorted(
        p.parent.parent for p in ROOT.glob("tpu_v5e*/*/profile/step.xplane.pb"))
    allrows = []
    for run in runs:
        rows = rows_of(run)
        allrows += rows
        by: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
        for _, _, kind, pred, meas, _, _, calls in rows:
            b = by[kind]
            b[0] += pred * calls
            b[1] += meas * calls
            b[2] += 1
        print(f"== {run}: " + ", ".join(f"{k} {v[2]} ops {v[0] / 1e3:.2f}/{v[1] / 1e3:.2f} ms "
                                         f"({v[0] / v[1] if v[1] else 0:.2f}x)" for k, v in sorted(by.items())))
        for r in sorted(rows, key=lambda r: -abs(r[4] - r[3]) * r[7])[:args.top]:
            bw = r[6] / r[4] / 1e3 if r[4] else 0
            print(f"   {r[1]:40s} {r[2]:8s} pred {r[3]:9.1f} us meas {r[4]:9.1f} us x{r[7]:<3d} "
                  f"{r[3] / r[4] if r[4] else 0:5.2f}x  {r[5] / 1e9:8.2f} GFLOP {r[6] / 2**20:8.1f} MiB "
                  f"{bw:6.0f} GB/s")
    if args.tsv:
        with open(args.tsv, "w") as f:
            for r in allrows:
                f.write("\t".join(map(str, r)) + "\n")
    ratios = [r[3] / r[4] for r in allrows if r[4] > 20 and r[2] == "fusion"]
    if ratios:
        print("fusions over 20 us: median pred/meas", round(statistics.median(ratios), 3), file=sys.stderr)


if __name__ == "__main__":
    main()
