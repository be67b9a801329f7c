"""calibrate: fit a target's figures to a measured GPU or TPU profile and write a target file, only if it helps."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hloscope.analysis.calibration import calibrate_step
from hloscope.analysis.inputs import StepInputs
from hloscope.analysis.measured.compare import MeasuredProfile
from hloscope.analysis.measured.read import parse_measured
from hloscope.artifact import LoadedStep, read_step
from hloscope.cli.archive import is_nsys_archive
from hloscope.cli.options import add_target_option
from hloscope.cli.reporting import check_measured
from hloscope.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, HloscopeError
from hloscope.hlo.loader import starts_like_hlo_module
from hloscope.hlo.profile_files import read_measured_file
from hloscope.render.calibration_text import calibration_lines, refusal_line, target_toml
from hloscope.targets import Target

#: A measured profile's kind (``MeasuredProfile.kind``) in the words of the missing-HLO error.
PROFILE_KIND_WORDS = {"pgle": "a PGLE profile", "trace": "a jax.profiler trace", "xplane": "a jax.profiler trace",
                      "nsys": "this nsys-jax archive"}


def refuse_hlo_as_profile(path: str) -> None:
    """An HLO file given as PROFILE (the order swapped, or the profile left out) is one line saying so."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return  # the profile reader words a missing or unreadable path
    if starts_like_hlo_module(head):
        raise HloscopeError(f"{path}: HLO text, not a measured profile; give the profile first, then the module: "
                            "hloscope calibrate PROFILE HLO -o FILE.toml", EXIT_BAD_INPUT)


def read_run(profile_path: str, hlo_path: str | None,
             target: str | Target | None) -> tuple[LoadedStep, MeasuredProfile]:
    """A measured run: its profile and the module it ran (an nsys-jax archive holds its own)."""
    refuse_hlo_as_profile(profile_path)
    hlo = hlo_path or (profile_path if is_nsys_archive(profile_path) else None)
    # Read first: a missing, empty or unreadable PROFILE is said as such, not as a missing HLO.
    file = read_measured_file(profile_path)
    if hlo is None:
        profile = parse_measured(file)
        raise HloscopeError(f"{profile_path}: {PROFILE_KIND_WORDS.get(profile.kind, 'this profile')} does not "
                            "hold the HLO; give the optimized module it was measured on as HLO "
                            "(hloscope calibrate PROFILE HLO -o FILE.toml)", EXIT_BAD_INPUT)
    step = read_step(hlo, target)
    # a profile of several programs: the executions of the module it is calibrated on
    return step, parse_measured(file, step.inputs.module.name)


class CalibrateCommand:
    """calibrate: fit a target's figures to a measured GPU or TPU profile and write a target file.

    PROFILE is an nsys-jax archive (.zip: it holds the HLO that ran), a jax.profiler trace
    (.xplane.pb, .trace.json.gz) or a PGLE profile (text or binary profile.pb); for all but the
    archive give HLO, the optimized module it was measured on. Fits only the figures the platform
    has: on a GPU kernel launch and achieved HBM bandwidth (memory-bound kernels) and achieved GEMM
    throughput; on a TPU achieved HBM bandwidth and peaks as scales of the model's own times, and a
    per-op time only where the profile shows the compute idle between ops; each collective kind's
    bandwidth and latency, and the host link where transfers were timed (docs/accuracy.md). A
    figure the profile cannot inform keeps the datasheet value and says so. Then each combination of
    the fitted groups is simulated and the one that brings the in-sample step nearest is adopted;
    when none is as near as the datasheet, or --check-on's run comes out further off than with the
    datasheet, nothing is written (exit 1). Prints each figure, each op class's error and the step
    before and after. -o FILE is written only if it does not exist (--force to overwrite).
    Exit 0, 1 refused (the datasheet is better), 2 bad input, 3 unknown target.
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("profile", metavar="PROFILE", help="nsys-jax archive (.zip), jax.profiler trace (.xplane.pb, "
                       ".trace.json.gz) of a GPU or TPU run, or PGLE profile")
        p.add_argument("hlo", metavar="HLO", nargs="?", help="the optimized module the profile was taken on "
                       "(default: the one inside an nsys-jax archive)")
        p.add_argument("-o", "--output", required=True, metavar="FILE.toml", help="target file to write")
        add_target_option(p, "the datasheet target to start from: a built-in name or a .toml/.json file; "
                             "default: the input's own (a TPU dump's chip, the archive's GPU), else h100-sxm")
        p.add_argument("--name", help="the calibrated target's name (default: the output file's stem)")
        p.add_argument("--force", action="store_true", help="overwrite FILE.toml if it exists")
        p.add_argument("--check-on", nargs="+", metavar=("PROFILE2", "HLO2"), default=None,
                       help="another run to judge the fitted target on, held out of the fit: its profile, then "
                            "its HLO (an nsys-jax archive holds its own); refused if it comes out further off "
                            "than with the datasheet")

    def run(self, args: argparse.Namespace) -> int:
        out = Path(args.output)
        if out.suffix != ".toml":
            raise HloscopeError(f"{out}: the target file must end in .toml (--target reads it by its suffix)",
                                EXIT_BAD_INPUT)
        if out.exists() and not args.force:
            raise HloscopeError(f"{out} exists; pass --force to overwrite it", EXIT_BAD_INPUT)
        if args.check_on is not None and len(args.check_on) > 2:
            raise HloscopeError(f"--check-on takes a profile and its HLO, not {len(args.check_on)} paths",
                                EXIT_BAD_INPUT)
        step, profile = read_run(args.profile, args.hlo, args.target)
        held: tuple[StepInputs, MeasuredProfile] | None = None
        if args.check_on:
            other, other_profile = read_run(args.check_on[0], args.check_on[1] if len(args.check_on) > 1 else None,
                                            step.target)
            held = (other.inputs, other_profile)
        run = calibrate_step(step.inputs, step.target, profile, args.name or out.stem, held)
        check_measured(run.before)
        if run.held_out_after is not None:
            check_measured(run.held_out_after)
        for line in calibration_lines(run):
            print(line)
        if run.refused is not None:
            raise HloscopeError(refusal_line(run, str(out)), EXIT_CHECK_FAILED)
        text = target_toml(run.calibration)
        existed = out.exists()
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as e:
            raise HloscopeError(f"{out}: cannot write: {e.strerror or e}", EXIT_BAD_INPUT) from None
        print(f"hloscope: {'overwrote' if existed else 'wrote'} {out} (use it: --target {out})", file=sys.stderr)
        return 0
