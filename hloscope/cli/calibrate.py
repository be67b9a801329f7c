"""calibrate: fit a target's figures to a measured GPU or TPU profile and write a target file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hloscope.analysis.measured.calibrate import fit_target
from hloscope.analysis.measured.read import parse_measured
from hloscope.analysis.report import analyze_step
from hloscope.analysis.simulate.overlap import AnalysisOptions
from hloscope.artifact import read_step
from hloscope.cli.archive import is_nsys_archive
from hloscope.cli.options import add_target_option
from hloscope.cli.reporting import check_measured
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.loader import starts_like_hlo_module
from hloscope.hlo.profile_files import read_measured_file
from hloscope.render.calibration_text import calibration_lines, target_toml

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


class CalibrateCommand:
    """calibrate: fit a target's figures to a measured GPU or TPU profile and write a target file.

    PROFILE is an nsys-jax archive (.zip: it holds the HLO that ran), a jax.profiler trace
    (.xplane.pb, .trace.json.gz) or a PGLE profile (text or binary profile.pb); for all but the
    archive give HLO, the optimized module it was measured on. Fits kernel
    launch and achieved HBM bandwidth (memory-bound kernels), achieved GEMM throughput, each
    collective kind's bandwidth and latency, and the host link where transfers were timed, by
    least squares (docs/accuracy.md); a figure the profile cannot inform keeps the datasheet
    value and says so. Prints each figure and each op class's error before and after. -o FILE
    is written only if it does not exist (--force to overwrite). Exit 0, 2 bad input, 3 unknown target.
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

    def run(self, args: argparse.Namespace) -> int:
        out = Path(args.output)
        if out.suffix != ".toml":
            raise HloscopeError(f"{out}: the target file must end in .toml (--target reads it by its suffix)",
                                EXIT_BAD_INPUT)
        if out.exists() and not args.force:
            raise HloscopeError(f"{out} exists; pass --force to overwrite it", EXIT_BAD_INPUT)
        refuse_hlo_as_profile(args.profile)
        hlo = args.hlo or (args.profile if is_nsys_archive(args.profile) else None)
        # Read first: a missing, empty or unreadable PROFILE is said as such, not as a missing HLO.
        profile = parse_measured(read_measured_file(args.profile))
        if hlo is None:
            raise HloscopeError(f"{args.profile}: {PROFILE_KIND_WORDS.get(profile.kind, 'this profile')} does not "
                                "hold the HLO; give the optimized module it was measured on as HLO "
                                "(hloscope calibrate PROFILE HLO -o FILE.toml)", EXIT_BAD_INPUT)
        step = read_step(hlo, args.target)
        options = AnalysisOptions(compare_with=profile)
        before = analyze_step(step.inputs, step.target, options)
        assert before.measured is not None
        check_measured(before.measured)
        cal = fit_target(before.index, step.target, profile, args.name or out.stem, before.transfers)
        after = analyze_step(step.inputs, cal.target, options)
        assert after.measured is not None
        text = target_toml(cal)
        existed = out.exists()
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as e:
            raise HloscopeError(f"{out}: cannot write: {e.strerror or e}", EXIT_BAD_INPUT) from None
        for line in calibration_lines(cal, before.measured, after.measured):
            print(line)
        print(f"hloscope: {'overwrote' if existed else 'wrote'} {out} (use it: --target {out})", file=sys.stderr)
        return 0
