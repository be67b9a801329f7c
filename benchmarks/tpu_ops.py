"""hloscope's TPU cost of each op beside the chip's time for it, for the measured v5e runs.

For each run (a step's ``step.hlo.txt`` and ``profile/step.xplane.pb``), every op the profile times
(its "XLA Ops" line names each instruction) with the model's estimate of one execution, the FLOPs
and HBM bytes the estimate is made of, and predicted/measured; grouped by the op's class.

Usage: python benchmarks/tpu_ops.py [RUN_FOLDER ...] [--top N] [--tsv FILE] [--fit | --classes | --micro | --chain]
(default: every run of fixtures/measured/tpu_v5e and fixtures/measured/tpu_v5e_blocks)

--classes [--datasheet]: per run (at the datasheet's rates with --datasheet), a Markdown row: the matmul
ops (those with FLOPs) and the other ops the profile times on
the compute line, the model's time over the chip's, per step.
--fit: the fit of v5e's achieved rates (``TpuTarget.mxu_efficiency``, ``hbm_efficiency``; docs/cost-model.md,
"TPU: achieved rates"): each op's time taken as ``max(FLOPs / (peak x e_mxu), bytes / (bandwidth x e_hbm))``
plus a share ``a`` of the smaller term plus ``t0`` us for an op with bytes, from its FLOPs and HBM bytes at the
datasheet's figures; a grid over the four, scored by the time-weighted absolute error over the ops of the runs
in benchmarks/tpu_accuracy.FIT_ON; the held-out runs' error beside it.
--chain: the fit of ``TpuTarget.chain_input_rate`` (docs/cost-model.md, "Fused matmul chains") on CHAIN_FIT's
offload runs and their remat twins, with the held-out pairs and the controls.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.measured.compare import MeasuredProfile
from hloscope.analysis.measured.read import parse_measured
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.artifact import read_step
from hloscope.hlo.model import Instruction
from hloscope.hlo.profile_files import read_measured_file
from hloscope.targets import Target, TpuTarget, get_target

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "measured"


def op_kind(model: CostModel, ins_name: str, by_name: Mapping[str, Instruction]) -> str:
    ins = by_name.get(ins_name)
    if ins is None:
        return "?"
    if ins.opcode == "fusion":
        flops, _, _, _ = model.roofline_terms(ins)
        if flops:
            return "matmul"
        return "fusion"
    return ins.opcode


def priced(run: Path, module: str = "") -> tuple[CostModel, MeasuredProfile]:
    """A run's step priced on tpu-v5e, and its profile (of ``module``; "": the profile's own)."""
    target = get_target("tpu-v5e")
    step = read_step(str(run / "step.hlo.txt"), target)
    model = CostModel(ModuleIndex(step.inputs.module), target)
    return model, parse_measured(read_measured_file(str(run / "profile" / "step.xplane.pb")), module)


def rows_of(run: Path, module: str = "") -> list[tuple[str, str, str, float, float, float, int, int]]:
    model, prof = priced(run, module)
    by_name = model.index.instructions_by_name
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


@dataclass(frozen=True)
class Sample:
    run: str
    flops: float  # FLOPs over the tiling efficiency, as the roofline charges the peak
    dtype: str
    nbytes: int
    us: float  # measured, one run
    calls: int
    chip: int = 0  # bytes read and written in VMEM/SMEM
    chain: int = 0  # a fused matmul chain's re-read input in HBM (CostModel.chain_input_bytes)


def samples(run: Path) -> list[Sample]:
    """Every op the run's profile times on the compute line, with its roofline terms."""
    model, prof = priced(run)
    index = model.index
    out = []
    for name, st in prof.ops.items():
        ins = index.instructions_by_name.get(name)
        if ins is None or ins.opcode in ("while", "call", "conditional", "custom-call") \
                or ins.opcode.endswith(("start", "done")):
            continue
        _, effective, dtype, nbytes = model.roofline_terms(ins)
        out.append(Sample(run.name, effective, dtype, nbytes, st.per_call_us, st.calls, model.moved_bytes(ins).chip,
                          model.chain_input_bytes(ins) if effective else 0))
    return out


def weighted_error(rows: list[Sample], e_mxu: float, e_hbm: float, a: float, t0: float,
                   vmem: float = 0.0) -> float:
    """The time-weighted mean of |predicted - measured| over measured, for those figures (``vmem``: the
    on-chip rate, bytes/s, 0 for none)."""
    target = get_target("tpu-v5e")
    err = total = 0.0
    for r in rows:
        c = r.flops / (target.peak_flops(r.dtype) * e_mxu) * 1e6
        m = r.nbytes / (target.hbm_bandwidth * e_hbm) * 1e6 + (t0 if r.nbytes else 0.0)
        v = r.chip / vmem * 1e6 if vmem else 0.0
        err += abs(max(max(c, m) + a * min(c, m), v) - r.us) * r.calls
        total += r.us * r.calls
    return err / total


def fit_vmem(runs: list[Path]) -> None:
    """The on-chip rate (``TpuTarget.vmem_bandwidth``): each op's time taken as the larger of its roofline
    at v5e's achieved shares and its VMEM/SMEM bytes over the rate; a grid over the rate, scored over the ops
    with on-chip bytes of the runs in benchmarks/tpu_accuracy.FIT_ON, the held-out runs' ops beside it."""
    from tpu_accuracy import FIT_ON

    target = get_target("tpu-v5e")
    assert isinstance(target, TpuTarget)
    em, eh = target.mxu_efficiency, target.hbm_efficiency
    rows = [s for run in runs for s in samples(run) if s.chip]
    fit_rows = [r for r in rows if r.run in FIT_ON]
    held = [r for r in rows if r.run not in FIT_ON]
    print(f"on-chip rate: fit on {len(fit_rows)} ops with VMEM/SMEM bytes of {len({r.run for r in fit_rows})} runs, "
          f"held out {len(held)} ops of {len({r.run for r in held})} runs")
    print(f"  not priced: fit {weighted_error(fit_rows, em, eh, 0, 0):.2%}, "
          f"held out {weighted_error(held, em, eh, 0, 0):.2%}")
    grid = sorted((weighted_error(fit_rows, em, eh, 0, 0, g * 1e11), g * 1e11) for g in range(5, 81))
    for e, rate in grid[:5]:
        print(f"  {rate / 1e9:.0f} GB/s: fit {e:.2%}, held out {weighted_error(held, em, eh, 0, 0, rate):.2%}")


def fit(runs: list[Path]) -> None:
    from tpu_accuracy import FIT_ON

    rows = [s for run in runs for s in samples(run)]
    fit_rows = [r for r in rows if r.run in FIT_ON]
    held = [r for r in rows if r.run not in FIT_ON]
    grid = [(weighted_error(fit_rows, em, eh, a, t0), em, eh, a, t0)
            for em in (0.88, 0.90, 0.92, 0.93, 0.94, 0.95, 0.96) for eh in (0.74, 0.76, 0.78, 0.80, 0.82, 0.84)
            for a in (0.0, 0.1, 0.2, 0.3, 0.4) for t0 in (0.0, 1.0, 2.0)]
    grid.sort()
    print(f"fit on {len(fit_rows)} ops of {len({r.run for r in fit_rows})} runs, "
          f"held out {len(held)} ops of {sorted({r.run for r in held})}")
    print(f"  datasheet (1, 1, 0, 0): fit {weighted_error(fit_rows, 1, 1, 0, 0):.2%}, "
          f"held out {weighted_error(held, 1, 1, 0, 0):.2%}")
    for e, em, eh, a, t0 in grid[:6]:
        print(f"  e_mxu {em:.2f} e_hbm {eh:.2f} a {a:.1f} t0 {t0:.0f} us: fit {e:.2%}, "
              f"held out {weighted_error(held, em, eh, a, t0):.2%}")
    fit_vmem(runs)

#: Fused-MLP runs whose chain input lies in HBM, each with its remat twin (the same fusion, its input in VMEM):
#: the pairs ``TpuTarget.chain_input_rate`` is fitted on, and those held out of the fit.
CHAIN_FIT = {"gx8000_off": "gx8000_remat", "gxb10_off": "gxb10_remat"}
CHAIN_HELD = {"gpt2xl_off": "gpt2xl_remat", "gpt2xl_off16": "gpt2xl_remat", "gx7200_off": "gx7200_remat"}
#: Offload runs whose fused MLP keeps its input in VMEM (controls: no chain cost expected).
CHAIN_CONTROLS = {"gx12800_off": "gx12800_remat", "mha_off": "mha_remat"}


@functools.cache
def chain_ops(run: Path) -> list[tuple[str, int, float, float]]:
    """(name, chain input bytes in HBM, model us, chip us per call) of each fused matmul chain the run's profile
    times (``CostModel.chain_input_bytes``; hloscope.analysis.cost.chains)."""
    model, prof = priced(run)
    out = []
    for name, st in prof.ops.items():
        ins = model.index.instructions_by_name.get(name)
        if ins is not None and model.chain_inputs(ins):
            out.append((name, model.chain_input_bytes(ins), model.instruction_us(ins), st.per_call_us))
    return out


def fit_chain() -> None:
    """``TpuTarget.chain_input_rate``: per pair, the chain fusion's chip time in the offload run minus its
    twin's (the same fusion with its input in VMEM) over the input's HBM bytes; a least-squares rate through
    the origin over CHAIN_FIT's pairs, each other pair's difference beside the rate's."""
    def pair(off: str, twin: str) -> tuple[int, float, float, float]:
        """(input bytes in HBM, chip us minus the twin's, the model's us, chip us) of the offload run's chain."""
        (_name, nbytes, model_us, chip_us), = chain_ops(ROOT / "tpu_v5e_blocks" / off)
        twin_us = max(r[3] for r in chain_ops(ROOT / "tpu_v5e_blocks" / twin))
        return nbytes, chip_us - twin_us, model_us, chip_us

    fitted = [pair(off, twin) for off, twin in CHAIN_FIT.items()]
    rate = sum(float(b) ** 2 for b, _, _, _ in fitted) / sum(b * d * 1e-6 for b, d, _, _ in fitted)
    target = get_target("tpu-v5e")
    assert isinstance(target, TpuTarget)
    print(f"chain input rate: fit on {sorted(CHAIN_FIT)}: {rate / 1e9:.2f} GB/s "
          f"(target: {target.chain_input_rate / 1e9:.2f} GB/s)")
    for group, pairs in (("fit", CHAIN_FIT), ("held out", CHAIN_HELD), ("control", CHAIN_CONTROLS)):
        for off, twin in pairs.items():
            nbytes, diff, model_us, chip_us = pair(off, twin)
            print(f"  {group:8s} {off:13s} input in HBM {nbytes / 2**20:5.1f} MiB: chip {chip_us:7.1f} us, "
                  f"twin {chip_us - diff:7.1f} us, difference {diff:6.1f} us, at the rate "
                  f"{nbytes / rate * 1e6:6.1f} us; the model's op {model_us:7.1f} us ({model_us / chip_us - 1:+.1%})")


def classes(runs: list[Path], datasheet: bool) -> None:
    from tpu_accuracy import fitted_on

    target = get_target("tpu-v5e")
    assert isinstance(target, TpuTarget)
    e_mxu, e_hbm = (1.0, 1.0) if datasheet else (target.mxu_efficiency, target.hbm_efficiency)
    print("| run | matmul ops: model / chip | ratio | other ops: model / chip | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for run in runs:
        sums = {"matmul": [0.0, 0.0], "other": [0.0, 0.0]}
        for r in samples(run):
            c = r.flops / target.peak_flops(r.dtype) / e_mxu * 1e6
            m = r.nbytes / target.hbm_bandwidth / e_hbm * 1e6
            v = r.chip / target.vmem_bandwidth * 1e6 if target.vmem_bandwidth and not datasheet else 0.0
            k = r.chain / target.chain_input_rate * 1e6 if target.chain_input_rate and not datasheet else 0.0
            s = sums["matmul" if r.flops else "other"]
            s[0] += (max(c, m, v) + k) * r.calls
            s[1] += r.us * r.calls
        mark = "fit" if fitted_on(run.name) else "held out"
        print(f"| {run.name} ({mark}) | " + " | ".join(
            f"{p / 1e3:.2f} / {q / 1e3:.2f} ms | {p / q:.2f}" for p, q in sums.values()) + " |")


MICRO = ROOT / "tpu_v5e_ops"
#: The microbenchmark the unaligned-contraction share is fitted on; mb_matmul_k4160 is held out.
CONTRACTION_FIT_ON = "mb_matmul_k4000"


def micro_rows(target: Target) -> list[tuple[str, float, float, str]]:
    """Each microbenchmark of fixtures/measured/tpu_v5e_ops: (case, model us, chip us per call, its ops)."""
    raw = read_measured_file(str(MICRO / "profile" / "ops.xplane.pb"))
    out = []
    for case in json.loads((MICRO / "cases.json").read_text()):
        if case.startswith("_"):
            continue
        hlo = next(p for p in (MICRO / "dump").glob(f"*.jit_{case}.*after_optimizations.txt"))
        step = read_step(str(hlo), target)
        index = ModuleIndex(step.inputs.module)
        model = CostModel(index, target)
        prof = parse_measured(raw, f"jit_{case}")
        pred = meas = 0.0
        ops = []
        for name, st in prof.ops.items():
            ins = index.instructions_by_name.get(name)
            if ins is None or ins.opcode.endswith(("start", "done")) or ins.opcode in ("while", "custom-call"):
                continue
            p = model.instruction_us(ins)
            pred += p
            meas += st.per_call_us
            ops.append(f"{name} {p:.1f}/{st.per_call_us:.1f}")
        out.append((case, pred, meas, ", ".join(ops)))
    return out


def micro() -> None:
    """The microbenchmarks, model over chip, at v5e's figures; and the unaligned-contraction share fitted
    on CONTRACTION_FIT_ON (the model's time without it over the chip's), held out on the other case."""
    target = get_target("tpu-v5e")
    assert isinstance(target, TpuTarget)
    plain = replace(target, unaligned_contraction_efficiency=1.0)
    print("| case | model | chip | model / chip | ops (model / chip us) |")
    print("| --- | --- | --- | --- | --- |")
    for case, pred, meas, ops in micro_rows(target):
        print(f"| {case} | {pred:.1f} us | {meas:.1f} us | {pred / meas:.2f} | {ops} |")
    base = {case: (pred, meas) for case, pred, meas, _ in micro_rows(plain)}
    pred, meas = base[CONTRACTION_FIT_ON]
    share = round(pred / meas, 2)
    print(f"unaligned contraction share fitted on {CONTRACTION_FIT_ON}: {pred:.1f} / {meas:.1f} us = {share:.2f} "
          f"(target: {target.unaligned_contraction_efficiency}); held out:")
    for case in sorted(base):
        if case.startswith("mb_matmul_k") and case != CONTRACTION_FIT_ON and not case.endswith("4096"):
            p, m = base[case]
            print(f"  {case}: {p / share:.1f} us with the share, chip {m:.1f} us ({p / share / m - 1:+.1%})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*")
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--tsv")
    ap.add_argument("--fit", action="store_true", help="fit v5e's achieved MXU and HBM shares")
    ap.add_argument("--classes", action="store_true", help="per run, matmul and other ops, model over chip")
    ap.add_argument("--datasheet", action="store_true", help="--classes at the datasheet's rates (efficiencies 1)")
    ap.add_argument("--chain", action="store_true", help="fit the fused matmul chains' input rate")
    ap.add_argument("--micro", action="store_true",
                    help="the op-class microbenchmarks of fixtures/measured/tpu_v5e_ops")
    args = ap.parse_args()
    if args.micro:
        micro()
        return
    if args.chain:
        fit_chain()
        return
    runs = [Path(r) for r in args.runs] or sorted(
        p.parent.parent for p in ROOT.glob("tpu_v5e*/*/profile/step.xplane.pb"))
    if args.fit:
        fit(runs)
        return
    if args.classes:
        classes(runs, args.datasheet)
        return
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
