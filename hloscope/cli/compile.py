"""``hloscope compile``: see :class:`CompileCommand`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hloscope.cli.analyze import add_report_options, emit_report, prepare_report
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError


def add_compile_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--devices", type=int, default=8, help="compile-only GPUs in the mesh (default 8)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a workload setting (layers=4, batch=2, seq=1024, scan=false ...)")
    p.add_argument("--policy", choices=["offload", "remat", "save"], help="what to do with tagged activations")
    p.add_argument("--lhs", action=argparse.BooleanOptionalAction, default=True,
                   help="latency hiding scheduler (default on)")
    p.add_argument("--pipelined-offload", action=argparse.BooleanOptionalAction, default=True,
                   help="pipelined host offloading (default on)")
    p.add_argument("--xla-flag", action="append", default=[], metavar="NAME=VALUE",
                   help="extra XLA compiler option, e.g. xla_gpu_enable_while_loop_double_buffering=true")


def parse_sets(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        k, eq, v = item.partition("=")
        if not eq or not k:
            raise HloscopeError(f"--set wants KEY=VALUE, got '{item}'", EXIT_BAD_INPUT)
        out[k.strip()] = v.strip()
    return out


class CompileCommand:
    """compile: compile a training step for a GPU target on this machine (no GPU needed).

    Either a built-in --workload (mlp, llama, deepseek, or a preset such as
    llama3-405b) or your own --fn package.module:function with --args. Writes an
    artifact folder (--out) with the optimized and unoptimized HLO, memory
    figures, flags, versions and the analysis, then prints the report.
    Exit codes: 0 ok, 1 --fail-on hit, 2 bad input, 3 unknown name, 4 trace
    failed, 5 XLA compile failed, 6 out of host memory, 7 jax missing.
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        src = p.add_mutually_exclusive_group()
        src.add_argument("--workload", default="llama", help="mlp, llama, deepseek or a preset (default llama)")
        src.add_argument("--fn", metavar="MODULE:FUNCTION", help="your own step function")
        p.add_argument("--args", default="", metavar="SPEC",
                       help="with --fn: abstract arguments, e.g. 'bf16[512,1024]@fsdp,None; bf16[64,512]@fsdp'")
        p.add_argument("--out", default="", metavar="DIR", help="artifact folder (default hloscope-out/NAME)")
        add_compile_options(p)
        add_report_options(p)

    def run(self, args: argparse.Namespace) -> int:
        import dataclasses

        from hloscope.compile.artifacts import manifest, write_artifacts
        from hloscope.render import render_to_string
        from hloscope.render.table import human_bytes

        req = prepare_report(args)  # fail fast on a bad name, before importing jax
        if args.fn:
            result, report, extra = self._compile_fn(args)
            name = args.fn.replace(":", ".")
        else:
            from hloscope.compile.jobs import compile_workload

            result, report, extra = compile_workload(args.workload, parse_sets(args.set), args.policy, args.target,
                                                     args.devices, args.lhs, args.pipelined_offload, args.xla_flag)
            name = f"{args.workload}-{extra['config']['policy']}-{args.target}-{args.devices}"
        report = dataclasses.replace(report, compile={
            "memory": result.memory, "xla_options": result.options,
            "compile_seconds": round(result.compile_seconds, 3), **extra})
        files = {
            "optimized.hlo.txt": result.optimized_hlo,
            "unoptimized.hlo.txt": result.unoptimized_hlo,
            "manifest.json": manifest(result, extra),
            "report.json": render_to_string("json", report),
            "report.txt": render_to_string("table", report),
            **result.extra_files,
        }
        out = write_artifacts(Path(args.out or f"hloscope-out/{name}"), files)
        m = result.memory
        hbm = report.target.device_memory_size
        fits = "fits" if m["peak_memory_in_bytes"] <= hbm else "does NOT fit"
        trailer = (f"memory per device: peak {human_bytes(m['peak_memory_in_bytes'])} ({fits} in "
                   f"{human_bytes(hbm)} of HBM), host {human_bytes(m['host_total_bytes'])}; "
                   f"compiled in {result.compile_seconds:.1f} s; artifacts in {out}\n")
        offloaded = report.summary.to_host_bytes_per_step
        if offloaded != m["host_total_bytes"]:
            # XLA's host buffers hold each offloaded slice once; a gap means transfers
            # hloscope did not recognise, or host memory used for something else.
            trailer += (f"note: the transfers found move {human_bytes(offloaded)} to host per step, XLA "
                        f"reserved {human_bytes(m['host_total_bytes'])} of host memory\n")
        return emit_report(report, req, trailer)

    def _compile_fn(self, args: argparse.Namespace) -> tuple[Any, Any, dict[str, Any]]:
        from hloscope.compile.jobs import compile_fn

        return compile_fn(args.fn, args.args, args.target, args.devices, args.lhs, args.pipelined_offload,
                          args.xla_flag, str(Path.cwd()))
