"""A prepared GPU check: hloscope's verdict, blame and margin per host transfer beside the measured overlap.

On one H100 or H200 (about 2 minutes with JAX's start; the budget is 5):

    python benchmarks/gpu_offload_check.py --out gpu-check

compiles and runs a small offloaded training step: ``--layers`` attention layers in a ``lax.scan`` whose
Q, K and V projections are offloaded to pinned host memory by a ``jax.checkpoint`` policy
(``save_and_offload_only_these_names``, the JAX guide's activation offloading), XLA's latency hiding
scheduler on. It runs ``--steps`` steps under ``jax.profiler`` after one untraced warm-up, and writes
into ``--out``:

- ``step.hlo.txt``: the optimized, scheduled module that ran (``compiled.as_text()``);
- ``step.xplane.pb``: the profile (``jax.profiler.start_trace``), found under the trace folder;
- ``figures.json``: per transfer, hloscope's verdict, blame, marginal cost and margin, and the
  measured share of its time other kernels ran beside it (when the profile names it).

Then it prints the same as a table. ``--platform cpu`` runs the same step on the CPU, with smaller
defaults: the profiler and the reader path only (CPU times say nothing about a GPU; host offload
on the CPU is a no-op placement, so it may have no transfer at all). ``tests/benchmarks/test_gpu_check.py``
runs the reader on a CPU trace.

Nothing here is tuned to a published figure; the model sizes are small so that the check fits
in its time budget.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NAMES = ("query_proj", "key_proj", "value_proj")


def build_step(layers: int, batch: int, seq: int, dim: int, heads: int, offload: bool) -> tuple[Any, tuple[Any, ...]]:
    """The step function and its concrete arguments (params, tokens' embeddings)."""
    import jax
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name

    head = dim // heads
    key = jax.random.PRNGKey(0)
    ks = jax.random.split(key, 5)
    scale = dim ** -0.5
    params = {n: jax.random.normal(k, (layers, dim, dim), jnp.bfloat16) * scale
              for n, k in zip(("wq", "wk", "wv", "wo"), ks[:4], strict=True)}
    x = jax.random.normal(ks[4], (batch, seq, dim), jnp.bfloat16)

    def layer(h: Any, p: Any) -> tuple[Any, None]:
        q = checkpoint_name(h @ p["wq"], "query_proj").reshape(batch, seq, heads, head)
        k = checkpoint_name(h @ p["wk"], "key_proj").reshape(batch, seq, heads, head)
        v = checkpoint_name(h @ p["wv"], "value_proj").reshape(batch, seq, heads, head)
        a = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32) * head ** -0.5, axis=-1)
        o = jnp.einsum("bhqk,bkhd->bqhd", a.astype(h.dtype), v).reshape(batch, seq, dim)
        return h + jnp.tanh(o @ p["wo"]), None

    if offload:
        policy = jax.checkpoint_policies.save_and_offload_only_these_names(
            names_which_can_be_saved=[], names_which_can_be_offloaded=list(NAMES),
            offload_src="device", offload_dst="pinned_host")
    else:
        policy = jax.checkpoint_policies.save_only_these_names(*NAMES)
    body = jax.checkpoint(layer, policy=policy)

    def loss(ps: Any, h: Any) -> Any:
        out, _ = jax.lax.scan(body, h, ps)
        return jnp.mean(out.astype(jnp.float32) ** 2)

    def step(ps: Any, h: Any) -> Any:
        g = jax.grad(loss)(ps, h)
        return jax.tree_util.tree_map(lambda w, d: w - 0.01 * d, ps, g)

    return step, (params, x)


def run_and_profile(out: Path, args: argparse.Namespace) -> tuple[Path, Path]:
    """Compile, run ``args.steps`` steps under the profiler; the HLO and the .xplane.pb written to ``out``."""
    import jax

    step, inputs = build_step(args.layers, args.batch, args.seq, args.dim, args.heads, not args.no_offload)
    f = jax.jit(step)
    compiled = f.lower(*inputs).compile()
    hlo = out / "step.hlo.txt"
    hlo.write_text(compiled.as_text())
    params = f(*inputs)  # warm-up, untraced
    jax.block_until_ready(params)
    trace = Path(tempfile.mkdtemp(prefix="hloscope-gpu-check-"))
    jax.profiler.start_trace(str(trace))
    for _ in range(args.steps):
        params = f(params, inputs[1])
    jax.block_until_ready(params)
    jax.profiler.stop_trace()
    found = glob.glob(f"{trace}/**/*.xplane.pb", recursive=True)
    if not found:
        raise SystemExit(f"gpu_offload_check: the profiler wrote no .xplane.pb under {trace}")
    xplane = out / "step.xplane.pb"
    shutil.copy(found[0], xplane)
    return hlo, xplane


def figures(hlo: Path, xplane: Path, target: str) -> dict[str, Any]:
    """hloscope's verdict, blame, marginal cost and margin per transfer, with the measured overlap."""
    from hloscope.analysis.measured.read import parse_measured
    from hloscope.analysis.report import analyze_step
    from hloscope.analysis.simulate.overlap import AnalysisOptions
    from hloscope.artifact import read_step
    from hloscope.hlo.profile_files import read_measured_file

    step = read_step(str(hlo), target)
    profile = parse_measured(read_measured_file(xplane))
    report = analyze_step(step.inputs, step.target, AnalysisOptions(compare_with=profile))
    measured = {o.start: o for o in report.measured.overlaps} if report.measured is not None else {}
    rows = []
    for v in report.verdicts:
        t = v.transfer
        m = report.margin_for(v)
        o = measured.get(t.instruction.name)
        rows.append({
            "transfer": t.instruction.name, "checkpoint_name": t.checkpoint_name, "direction": str(t.direction),
            "bytes": t.bytes, "executions": t.executions, "verdict": str(v.verdict),
            "blame_us": None if v.timing is None else round(v.timing.blame_us, 3),
            "marginal_us": None if m is None else round(m.marginal_us, 3),
            "margin": None if m is None or m.margin is None else round(m.margin, 3),
            "flip_link_gbps": None if m is None or m.flip_link_gbps is None else round(m.flip_link_gbps, 2),
            "measured_us": None if o is None else round(o.measured_us, 3),
            "measured_overlap": None if o is None else round(o.measured_overlap, 3),
        })
    tl = report.timeline
    return {"hlo": str(hlo), "xplane": str(xplane), "target": report.target.name,
            "simulated_step_us": None if tl is None else round(tl.step_us, 3),
            "measured_step_us": None if report.measured is None else report.measured.profile.median_step_us,
            "matched_ops": None if report.measured is None else report.measured.matched_ops,
            "measured_ops": None if report.measured is None else report.measured.measured_ops,
            "transfers": rows}


def table(fig: dict[str, Any]) -> list[str]:
    def cell(x: Any, fmt: str = "{}") -> str:
        return "-" if x is None else fmt.format(x)

    lines = [f"target {fig['target']}: simulated step {cell(fig['simulated_step_us'], '{:.1f}')} us, measured "
             f"{cell(fig['measured_step_us'], '{:.1f}')} us; {cell(fig['matched_ops'])} of "
             f"{cell(fig['measured_ops'])} measured ops name an instruction"]
    head = ("transfer", "name", "dir", "verdict", "blame us", "marginal us", "margin", "measured us", "overlap")
    rows = [(r["transfer"], r["checkpoint_name"] or "-", r["direction"], r["verdict"], cell(r["blame_us"], "{:.1f}"),
             cell(r["marginal_us"], "{:.1f}"), cell(r["margin"], "{:.2f}x"), cell(r["measured_us"], "{:.1f}"),
             cell(r["measured_overlap"], "{:.0%}")) for r in fig["transfers"]]
    widths = [max(len(h), *(len(x[i]) for x in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    lines += ["  ".join(c.ljust(w) for c, w in zip(x, widths, strict=True)).rstrip() for x in rows]
    if not rows:
        lines.append("no host transfer in the module")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="gpu-check", help="folder for step.hlo.txt, step.xplane.pb, figures.json")
    ap.add_argument("--platform", default="gpu", choices=("gpu", "cpu"))
    ap.add_argument("--target", default=None, help="hloscope target (default: from the device, else h100-sxm)")
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--seq", type=int, default=None)
    ap.add_argument("--dim", type=int, default=None)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--no-offload", action="store_true", help="save Q/K/V on the device instead (a control run)")
    ap.add_argument("--read", nargs=2, metavar=("HLO", "XPLANE"), help="only read a saved pair and print the figures")
    args = ap.parse_args(argv)
    gpu = args.platform == "gpu"
    for name, big, small in (("layers", 4, 2), ("batch", 2, 1), ("seq", 2048, 64), ("dim", 2048, 128)):
        if getattr(args, name) is None:
            setattr(args, name, big if gpu else small)
    t0 = time.perf_counter()
    out = Path(args.out)
    if args.read:
        hlo, xplane = Path(args.read[0]), Path(args.read[1])
    else:
        os.environ.setdefault("JAX_PLATFORMS", "cuda" if gpu else "cpu")
        if gpu:
            os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                                       + " --xla_gpu_enable_latency_hiding_scheduler=true").strip()
        out.mkdir(parents=True, exist_ok=True)
        hlo, xplane = run_and_profile(out, args)
    target = args.target or (_device_target() if gpu and not args.read else "h100-sxm")
    fig = figures(hlo, xplane, target)
    fig["seconds"] = round(time.perf_counter() - t0, 1)
    if not args.read:
        (out / "figures.json").write_text(json.dumps(fig, indent=2) + "\n")
    print("\n".join(table(fig)))
    print(f"({fig['seconds']} s)")
    return 0


def _device_target() -> str:
    import jax

    kind = jax.devices()[0].device_kind.lower()
    return "h200" if "h200" in kind else "h100-sxm"


if __name__ == "__main__":
    sys.exit(main())
