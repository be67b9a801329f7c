"""``hloscope compile``: see :class:`CompileCommand`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from hloscope.analysis.report import Report
from hloscope.api import save_artifacts
from hloscope.artifact import load_report
from hloscope.cli.compiling import PHASE_WRITING, PhaseStatus, request_from_args
from hloscope.cli.options import add_args_options, add_compile_options, add_maxtext_option, maxtext_from_args, no_cache
from hloscope.cli.reporting import ReportRequest, add_report_options, emit_report, prepare_report
from hloscope.compile.run.artifacts import check_out_dir, default_folder, holds_earlier_build, holds_request
from hloscope.compile.run.jobs import compile_request
from hloscope.compile.search.whatif import TransferChange, compare_reports, open_windows
from hloscope.compile.step.deviceless import parse_flag
from hloscope.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, HloscopeError
from hloscope.hlo.folders import OPTIMIZED_FILE
from hloscope.render.memory_text import room_words
from hloscope.render.pgle import write_profile
from hloscope.request import CompileRequest, xla_flag_texts
from hloscope.units import human_bytes, human_us

#: The model's profile that --what-if-profile writes into the artifact folder.
PROFILE_FILE = "model-profile.pbtxt"
#: The same with the serial drains' copies priced as they run behind each other (--what-if-profile).
SERIALIZED_PROFILE_FILE = "model-profile-serialized.pbtxt"


class CompileCommand:
    """compile: compile a training step for a GPU or TPU target on this machine (no GPU or TPU needed).

    Either a built-in --workload (mlp, llama, deepseek, or a preset such as
    llama3-405b), your own --fn package.module:function with --args, or
    MaxText's own train step: --maxtext [CONFIG.yml] KEY=VALUE ... (docs/maxtext.md). Writes an
    artifact folder (--out; by default hloscope-out/ named by the workload, policy,
    target and devices (a TPU slice by its Cloud TPU name: v5p-128, v5e-8) and every
    --set or scheduling option) with the optimized and
    unoptimized HLO, memory figures, flags, versions and the analysis, then prints
    the report. An existing folder is replaced only with --force; one that
    holds this very compile (the same options, hloscope and jax, and for --fn
    the same source files of your step's module) is read instead of compiling
    again, and one that holds the same options compiled from other code is
    compiled again.
    On a terminal a status line names the phase (starting JAX, tracing,
    lowering, XLA compile, analysis, writing artifacts).
    Exit codes: 0 ok, 1 --fail-on hit or --require-fit and it does not fit,
    2 bad input, 3 unknown name, 4 trace failed, 5 XLA compile failed, 6 out
    of host memory, 7 jax missing, 8 --fail-on found nothing to judge (no host
    transfer) and no --allow-empty. An existing --out folder without --force is
    bad input (2).
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        src = p.add_mutually_exclusive_group()
        src.add_argument("--workload", "--preset", default="llama",
                         help="mlp, llama, deepseek or a preset such as llama3-405b (default llama)")
        src.add_argument("--fn", metavar="MODULE:FUNCTION", help="your own step function")
        add_maxtext_option(src)
        add_args_options(p, "with --fn: abstract arguments, e.g. 'bf16[512,1024]@fsdp,None; bf16[64,512]@fsdp'")
        p.add_argument("--out", default="", metavar="DIR",
                       help="artifact folder (default hloscope-out/NAME, NAME from the workload and options)")
        p.add_argument("--force", action="store_true", help="replace an existing artifact folder")
        p.add_argument("--what-if-memory", type=float, metavar="GB",
                       help="also compile with this much HBM (decimal GB, e.g. 186) and show which windows open "
                            "or close")
        p.add_argument("--what-if-profile", action="store_true",
                       help="also compile with hloscope's cost model as XLA's profile (PGLE; written to "
                            "model-profile.pbtxt in the artifact folder) and show how the schedule changes when "
                            "XLA's scheduler knows each op's and each transfer's cost; when host copies drain one "
                            "after another, once more with those copies priced as they run "
                            "(model-profile-serialized.pbtxt)")
        p.add_argument("--what-if-flag", action="append", default=[], metavar="NAME=VALUE",
                       help="also compile with this XLA option (e.g. xla_gpu_enable_host_memory_offloading=true) "
                            "and show XLA's remat clones, the memory and the simulated step before and after")
        p.add_argument("--require-fit", action="store_true",
                       help="exit 1 when the step's device allocation does not fit in the target's HBM (with "
                            "--memory-fraction: in what JAX's allocator takes of it)")
        add_compile_options(p)
        add_report_options(p)

    def run(self, args: argparse.Namespace) -> int:
        with no_cache(args):
            return self._start(args)

    def _start(self, args: argparse.Namespace) -> int:
        req = prepare_report(args)  # fail fast on a bad name, before importing jax
        if args.what_if_memory is not None and args.fn:
            raise HloscopeError("--what-if-memory works with --workload (built-in steps) only", EXIT_BAD_INPUT)
        maxtext = maxtext_from_args(args)
        if args.what_if_flag:
            for flag in args.what_if_flag:
                parse_flag(flag)  # a malformed NAME=VALUE is one line, exit 2, before any compile
        request = request_from_args(args, workload=args.workload, fn=args.fn, maxtext=maxtext)
        out_dir = Path(args.out) if args.out else default_folder(request)
        if not args.force and holds_request(out_dir.resolve(), request):
            return self._reuse(args, req, request, out_dir)
        force = bool(args.force)
        if not force and holds_earlier_build(out_dir.resolve(), request):
            # this very request, compiled from other code: its own earlier output, replaced without --force
            print(f"hloscope: note: {out_dir.resolve()} holds this request compiled from other inputs (your step's "
                  "code, hloscope, jax or the JAX/XLA environment changed since); compiling again", file=sys.stderr)
            force = True
        check_out_dir(out_dir.resolve(), force)  # before the compile, not after it
        with PhaseStatus() as phase:
            return self._run(args, req, request, out_dir, phase, force)

    def _reuse(self, args: argparse.Namespace, req: ReportRequest, request: CompileRequest, out: Path) -> int:
        """The artifact folder holds this very compile: report from it instead of compiling again."""
        print(f"hloscope: note: {out.resolve()} holds this compile (the same request, step code, hloscope and jax); "
              "reading it instead of compiling again (--force compiles)", file=sys.stderr)
        report = load_report(str(out), args.target or None, req.options)  # named as a fresh compile names it
        with PhaseStatus() as phase:
            return self._finish(args, req, request, report, out, f"artifacts in {out.resolve()} (reused)\n", phase)

    def _run(self, args: argparse.Namespace, req: ReportRequest, request: CompileRequest, out_dir: Path,
             phase: PhaseStatus, force: bool) -> int:
        # The report names the file it judged: the artifact folder's optimized module.
        step = compile_request(request, req.options, phase, source_path=str(out_dir / OPTIMIZED_FILE))
        result, report, extra = step.result, step.report, step.extra
        phase(PHASE_WRITING)
        out = save_artifacts(out_dir, result, report, extra, force=force, request=request)
        said = maxtext_words(extra.get("maxtext"), result.options) if request.maxtext is not None else ""
        return self._finish(args, req, request, report, out,
                            f"{said}compiled in {result.compile_seconds:.1f} s; artifacts in {out}\n", phase)

    def _finish(self, args: argparse.Namespace, req: ReportRequest, request: CompileRequest, report: Report,
                out: Path, trailer: str, phase: PhaseStatus) -> int:
        """The what-ifs, the report and --require-fit, for a compile made now or reused."""
        offloaded = report.summary.to_host_bytes_per_step
        host = report.memory.host_bytes if report.memory is not None else 0
        if offloaded != host:
            # XLA's host buffers hold each offloaded slice once; a gap means transfers
            # hloscope did not recognise, or host memory used for something else.
            trailer += (f"note: the transfers found move {human_bytes(offloaded)} to host per step, XLA "
                        f"reserved {human_bytes(host)} of host memory\n")
        if args.what_if_memory is not None:
            trailer += self._what_if(args.what_if_memory, request, report, phase)
        if args.what_if_profile:
            trailer += self._what_if_profile(out, request, report, phase)
        for flag in args.what_if_flag:
            trailer += self._what_if_flag(flag, request, report, phase)
        phase.stop()  # the status line goes before the report is printed
        code = emit_report(report, req, trailer)
        if args.require_fit and report.memory is not None and not report.memory.fits:
            m = report.memory
            print(f"hloscope: the step does not fit: device allocation {human_bytes(m.device_allocation_bytes)} > "
                  f"{room_words(m)} (--require-fit)", file=sys.stderr)
            return EXIT_CHECK_FAILED
        return code

    def _what_if_profile(self, out: Path, request: CompileRequest, report: Report, phase: PhaseStatus) -> str:
        """Compile again with the model's per-op figures as XLA's profile; what the schedule became.
        When some host copies drain one after another (``report.drains``), once more with those
        copies priced as they run behind each other (the serialized profile)."""
        if not report.module.is_scheduled:
            raise HloscopeError("--what-if-profile: the module is not scheduled, so XLA's scheduler did not run",
                                EXIT_BAD_INPUT)
        text = self._profile_compile(Path(out) / PROFILE_FILE, request, report, phase, serialized=False)
        if report.drains:
            text += self._profile_compile(Path(out) / SERIALIZED_PROFILE_FILE, request, report, phase,
                                          serialized=True)
        return text

    def _profile_compile(self, path: Path, request: CompileRequest, report: Report, phase: PhaseStatus,
                         *, serialized: bool) -> str:
        with path.open("w", encoding="utf-8") as f:
            write_profile(report, f, serialized=serialized)
        flag = f"xla_gpu_pgle_profile_file_or_directory_path={path.resolve()}"
        name = "serialized profile" if serialized else "profile"
        other = compile_request(replace(request, xla_flags=(*request.xla_flags, flag)),
                                phase=lambda step: phase(f"what-if {name}: {step}")).report
        changes = compare_reports(report, other)
        opened = open_windows(changes)
        lines = ["", (f"what if XLA's scheduler priced the serial drains' copies as they run behind each other "
                      f"(hloscope's model as its profile, those copies at their simulated time, {path}):"
                      if serialized else
                      f"what if XLA's scheduler knew these costs (hloscope's model as its profile, {path}):")]
        used = other.xla is not None and other.xla.profile is not None
        if not used:
            lines.append("  XLA's log does not say it used the profile for this module; the second compile "
                         "is XLA's own schedule")
        a, b = report.summary.step, other.summary.step
        if a is not None and b is not None:
            lines.append(f"  simulated step {human_us(a.step_us)} -> {human_us(b.step_us)} (exposed transfers "
                         f"{human_us(a.exposed_transfer_us)} -> {human_us(b.exposed_transfer_us)}, collectives "
                         f"{human_us(a.exposed_collective_us)} -> {human_us(b.exposed_collective_us)})")
        if serialized:
            lost_a = sum(d.lost_us_per_step for d in report.drains)
            lost_b = sum(d.lost_us_per_step for d in other.drains)
            lines.append(f"  serial drains {len(report.drains)} -> {len(other.drains)} (their copies' extra waits "
                         f"{human_us(lost_a)} -> {human_us(lost_b)} per step)")
        if other.xla is not None and other.xla.step_us is not None:
            lines.append(f"  XLA's scheduler times its new schedule at {human_us(other.xla.step_us)} per step")
        lines.append(f"  open windows {opened[0]} -> {opened[1]} of {len(changes)}")
        return "\n".join(lines + _changed_lines(changes)) + "\n"

    def _what_if_flag(self, flag: str, request: CompileRequest, report: Report, phase: PhaseStatus) -> str:
        """Compile again with one more XLA option: remat clones, memory and the simulated step, before and after."""
        other = compile_request(replace(request, xla_flags=(*request.xla_flags, flag)),
                                phase=lambda name: phase(f"what-if {flag}: {name}")).report
        changes = compare_reports(report, other)
        opened = open_windows(changes)
        lines = ["", f"what if XLA ran with --{flag}:"]
        a, b = report.remat, other.remat
        if a is not None and b is not None:
            lines.append(f"  remat clones {a.clones} -> {b.clones} ({a.clones_per_step} -> {b.clones_per_step} run(s) "
                         f"per step, ~{a.flops_per_step / 1e12:.1f} -> ~{b.flops_per_step / 1e12:.1f} TFLOP per step)")
        m, n = report.memory, other.memory
        if m is not None and n is not None:
            lines.append(f"  device allocation {human_bytes(m.device_allocation_bytes)} -> "
                         f"{human_bytes(n.device_allocation_bytes)}, host {human_bytes(m.host_bytes)} -> "
                         f"{human_bytes(n.host_bytes)}")
        s, t = report.summary.step, other.summary.step
        if s is not None and t is not None:
            lines.append(f"  simulated step {human_us(s.step_us)} -> {human_us(t.step_us)} (compute "
                         f"{human_us(s.compute_us)} -> {human_us(t.compute_us)}, exposed transfers "
                         f"{human_us(s.exposed_transfer_us)} -> {human_us(t.exposed_transfer_us)})")
        lines.append(f"  open windows {opened[0]} -> {opened[1]} of {len(changes)}")
        return "\n".join(lines + _changed_lines(changes)) + "\n"

    def _what_if(self, gb: float, request: CompileRequest, report: Report, phase: PhaseStatus) -> str:
        """Compile again with another HBM size; list the transfers whose window or verdict changed."""
        other = compile_request(replace(request, memory_override_bytes=int(gb * 1e9)),
                                phase=lambda name: phase(f"what-if {gb:g} GB: {name}")).report
        changes = compare_reports(report, other)
        opened = open_windows(changes)
        hbm = report.target.device_memory_size
        lines = ["", f"what if the GPU had {gb:g} GB ({human_bytes(gb * 1e9)}) of HBM instead of {human_bytes(hbm)}: "
                     f"open windows {opened[0]} -> {opened[1]} of {len(changes)}"]
        if other.memory is not None:
            fits = "fits" if other.memory.fits else "does NOT fit"
            lines.append(f"  device allocation {human_bytes(other.memory.device_allocation_bytes)} ({fits})")
        return "\n".join(lines + _changed_lines(changes)) + "\n"


def maxtext_words(facts: object, options: Mapping[str, object]) -> str:
    """What a MaxText compile was: the model, attention and remat policy MaxText built, any attention
    swapped for one that compiles with no GPU, and the XLA options hloscope passed (lines for the trailer)."""
    if not isinstance(facts, Mapping):
        return ""
    lines = [f"MaxText {facts.get('version') or '?'} ({facts.get('config')}): model {facts.get('model_name')}, "
             f"attention {facts.get('attention')}, remat_policy {facts.get('remat_policy')}"]
    if facts.get("note"):
        lines.append(f"note: {facts['note']}")
    lines.append("XLA options: " + (", ".join(xla_flag_texts(options)) or "XLA's defaults"))
    return "\n".join(lines) + "\n"


def _changed_lines(changes: tuple[TransferChange, ...]) -> list[str]:
    """One line per transfer whose window or verdict differs between the two compiles of a what-if."""
    return [f"  {c.name}: {c.verdict_before or '-'} (window {c.window_before}) -> "
            f"{c.verdict_after or '-'} (window {c.window_after})" for c in changes if c.changed]
