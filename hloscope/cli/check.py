"""``hloscope check``: see :class:`CheckCommand`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from hloscope.check.baseline import load_snapshot, snapshot_from_subject
from hloscope.check.config import CheckConfig, config_from_mapping, find_pyproject, load_pyproject
from hloscope.check.keys import records_from_report
from hloscope.check.rules import RULES
from hloscope.check.run import NothingToCheck, run_check
from hloscope.check.subject import load_path
from hloscope.cli.compiling import check_request, note_jax_version
from hloscope.cli.options import (
    add_args_options,
    add_devices_option,
    add_maxtext_option,
    add_memory_fraction_option,
    add_module_option,
    add_no_cache_option,
    add_target_option,
    args_spec,
    host_pool_bytes,
    maxtext_from_args,
    no_cache,
    parse_sets,
)
from hloscope.cli.reporting import open_output, write_output
from hloscope.errors import (
    EXIT_BAD_INPUT,
    EXIT_CHECK_FAILED,
    EXIT_NOTHING_TO_CHECK,
    EXIT_OK,
    EXIT_UNKNOWN_NAME,
    HloscopeError,
)
from hloscope.render.check.formats import CHECK_FORMATS, get_check_format
from hloscope.render.check.meaning import rule_meaning, setting_meaning
from hloscope.render.check.words import describe_snapshot, nothing_to_check_words
from hloscope.render.json_report import report_to_dict
from hloscope.targets import DEFAULT_TARGET, as_target
from hloscope.units import JSON_US_DIGITS

if TYPE_CHECKING:
    from hloscope.check.config import CheckConfig
    from hloscope.check.subject import Subject


def _help(text: str) -> str:
    """A sentence from the rule and settings tables as argparse help (which %-formats it: '5%' crashed --help)."""
    return text.replace("%", "%%")


def add_rule_options(p: argparse.ArgumentParser) -> None:
    """One flag per rule of the table, plus the settings around them."""
    g = p.add_argument_group("rules (also [tool.hloscope] keys in pyproject.toml; see docs/ci.md)")
    for rule in RULES.values():
        if rule.kind == "bool":
            g.add_argument(f"--{rule.name}", action="store_const", const=True, default=None,
                           help=_help(rule_meaning(rule.name)))
        else:
            meta = {"float": "US", "factor": "X", "fraction": "F", "bytes": "SIZE", "names": "NAMES"}[rule.kind]
            g.add_argument(f"--{rule.name}", metavar=meta, default=None, help=_help(rule_meaning(rule.name)))
    g.add_argument("--hbm-margin", metavar="F", default=None, help=_help(setting_meaning("hbm-margin")))
    g.add_argument("--host-pool-gb", metavar="GB", default=None, help=_help(setting_meaning("host-pool-gb")))
    g.add_argument("--allow", action="append", default=[], metavar="KEY=PATTERN;reason=TEXT",
                   help="accept matching transfers: checkpoint=, instruction= or source= a pattern, with a reason; "
                        "optional rules=a,b")
    b = p.add_argument_group("baseline")
    b.add_argument("--baseline", metavar="FILE", help="JSON report to compare with; regressions fail the check")
    b.add_argument("--write-baseline", metavar="FILE", help="write this step's JSON report to FILE (a new baseline)")
    b.add_argument("--tolerance-us", metavar="US", default=None, help=_help(setting_meaning("tolerance-us")))
    b.add_argument("--tolerance-fraction", metavar="F", default=None, help=_help(setting_meaning("tolerance-fraction")))
    b.add_argument("--memory-tolerance", metavar="F", default=None, help=_help(setting_meaning("memory-tolerance")))


def _number(text: str | None, name: str) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        raise HloscopeError(f"--{name}: expected a number, got '{text}'", EXIT_BAD_INPUT) from None


def _allow_item(text: str) -> dict[str, object]:
    item: dict[str, object] = {}
    for part in text.split(";"):
        k, eq, v = part.partition("=")
        if not eq:
            raise HloscopeError(f"--allow wants KEY=PATTERN;reason=TEXT, got '{text}'", EXIT_BAD_INPUT)
        item[k.strip()] = v.strip()
    if "rules" in item:
        item["rules"] = [r.strip() for r in str(item["rules"]).split(",") if r.strip()]
    return item


def flags_config(args: argparse.Namespace) -> CheckConfig:
    """The settings given on the command line, as a CheckConfig (validated like pyproject keys)."""
    data: dict[str, object] = {}
    for rule in RULES.values():
        value = getattr(args, rule.keyword)
        if value is None:
            continue
        if rule.kind in ("float", "fraction", "factor"):
            value = _number(value, rule.name)
        data[rule.name] = value
    for key in ("hbm-margin", "host-pool-gb", "tolerance-us", "tolerance-fraction", "memory-tolerance"):
        value = _number(getattr(args, key.replace("-", "_")), key)
        if value is not None:
            data[key] = value
    for key in ("target", "baseline", "unoptimized", "path", "workload", "fn"):
        if getattr(args, key, None):
            data[key] = getattr(args, key)

    spec = args_spec(args)
    if spec:
        data["args"] = spec
    if args.devices is not None:
        data["devices"] = args.devices
    if args.memory_fraction is not None:
        data["memory-fraction"] = args.memory_fraction
    if args.allow_empty:
        data["allow-empty"] = True

    maxtext = maxtext_from_args(args)
    if maxtext is not None:
        data["maxtext"] = list(maxtext)
    if args.set:
        data["set"] = parse_sets(args.set)
    if args.allow:
        data["allow"] = [_allow_item(a) for a in args.allow]
    return config_from_mapping(data, "command line")


def resolve_config(args: argparse.Namespace) -> CheckConfig:
    """pyproject's [tool.hloscope] (nearest, or --config), overridden by the flags."""
    base = CheckConfig()
    if not args.no_config:
        found = Path(args.config) if args.config else find_pyproject(Path.cwd())
        if args.config and found is not None and not found.is_file():
            raise HloscopeError(f"{args.config}: no such config file", EXIT_BAD_INPUT)
        if found is not None:
            base = load_pyproject(found)
    flags = flags_config(args)
    if flags.path or flags.compile.workload or flags.compile.fn or flags.compile.maxtext is not None:
        # a source on the command line replaces the configured one
        base = dataclasses.replace(base, path=None, compile=dataclasses.replace(base.compile, workload=None, fn=None,
                                                                                 maxtext=None))
    return base.merged(flags)


def load_subject(cfg: CheckConfig, module: str | None = None) -> Subject:
    target = as_target(cfg.target)  # checked before anything is read or compiled
    given = cfg.compile
    if given.workload or given.fn or given.maxtext is not None:
        from hloscope.api import compile_subject  # lazy: the compile layer, for a compile only

        request = dataclasses.replace(given, target=given.target or DEFAULT_TARGET,
                                      workload=given.workload or None if given.maxtext is None else None,
                                      fn=given.fn or None, args=(given.args or "") if given.fn else None,
                                      cwd=str(Path.cwd()) if given.fn else None).request()
        check_request(request)  # before JAX starts
        note_jax_version()
        return compile_subject(request)
    if cfg.path:  # an artifact folder brings its own target unless one was given
        return load_path(cfg.path, target if cfg.target else None, cfg.unoptimized, module)
    raise HloscopeError("nothing given to check: PATH, --workload, --fn or --maxtext (or path / workload / fn / "
                        "maxtext in [tool.hloscope] of pyproject.toml)", EXIT_BAD_INPUT)


def baseline_json(subject: Subject) -> str:
    """The JSON report of ``subject`` with its memory facts and each transfer's exposed estimate."""
    data = report_to_dict(subject.report)
    for t, r in zip(data["transfers"], records_from_report(subject.report), strict=True):
        t.setdefault("est_exposed_us", round(r.est_exposed_us, JSON_US_DIGITS))
    return json.dumps(data, indent=2) + "\n"


def write_baseline(subject: Subject, path: str) -> None:
    """Write ``subject``'s baseline to ``path`` and say so on stderr: what it holds, and what it
    replaced when the file was already there (standard output stays the check's report)."""
    before = None
    if Path(path).exists():
        try:
            before = describe_snapshot(load_snapshot(path))
        except HloscopeError:
            before = "not a readable JSON report"
    write_output(baseline_json(subject), path)
    now = describe_snapshot(snapshot_from_subject(subject))
    if before is None:
        print(f"hloscope: wrote baseline {path}: {now}", file=sys.stderr)
    else:
        print(f"hloscope: replaced baseline {path} (was: {before}) with: {now}; review the change "
              f"(e.g. git diff {path}) before committing it", file=sys.stderr)


class CheckCommand:
    """check: fail CI when a host offload is not hidden, not async, lost, or the step stops fitting.

    PATH is an HLO file, an XLA dump folder or a `hloscope compile` artifact folder;
    or compile a step with --workload / --fn. Rules come from flags and from
    [tool.hloscope] in the nearest pyproject.toml (flags win); with no rule given,
    the default gate: --no-sync, --no-exposed and --max-exposed-fraction 0.1 (the step
    waits on host transfers, partial ones included, at most 10% of its time).
    --baseline FILE fails on regressions against an earlier JSON report. See docs/ci.md.
    Exit codes: 0 every rule holds, 1 a rule is violated, 2 bad input, bad config or
    a failed compile, 3 unknown name (target, format, --module), 8 nothing to check
    (unscheduled, compiled for neither a GPU nor a TPU, no host transfer; --allow-empty
    passes instead).
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("path", metavar="PATH", nargs="?", help="HLO file, XLA dump folder or artifact folder")
        src = p.add_mutually_exclusive_group()
        src.add_argument("--workload", help="compile a built-in workload or preset (llama, llama3-405b, ...)")
        src.add_argument("--fn", metavar="MODULE:FUNCTION", help="compile your own step function")
        add_maxtext_option(src)
        add_args_options(p, "with --fn: abstract arguments (see compile)")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="workload setting")
        add_devices_option(p, default=None)  # None: pyproject's devices, else 8
        add_memory_fraction_option(p)
        add_target_option(p)
        add_module_option(p)
        add_no_cache_option(p)
        p.add_argument("--unoptimized", metavar="FILE", help="the unoptimized module, for annotations-accounted")
        p.add_argument("--config", metavar="PYPROJECT", help="read [tool.hloscope] from this file")
        p.add_argument("--no-config", action="store_true", help="ignore pyproject.toml")
        p.add_argument("--allow-empty", action="store_true", help="pass when there is nothing to check")
        p.add_argument("--format", default="text", help=f"output: {', '.join(CHECK_FORMATS)} (default text)")
        p.add_argument("-o", "--output", help="write the result to this file instead of stdout")
        add_rule_options(p)

    def run(self, args: argparse.Namespace) -> int:
        try:
            return self._run(args)
        except NothingToCheck as e:
            raise HloscopeError(nothing_to_check_words(e.nothing), EXIT_NOTHING_TO_CHECK) from None
        except HloscopeError as e:
            # Scripts tell "a rule broke" (1) from "could not check" (2, 3, 8): fold every other failure into 2.
            if e.exit_code in (EXIT_NOTHING_TO_CHECK, EXIT_BAD_INPUT, EXIT_UNKNOWN_NAME):
                raise
            raise HloscopeError(str(e), EXIT_BAD_INPUT) from None

    def _run(self, args: argparse.Namespace) -> int:
        fmt = get_check_format(args.format)
        if args.path:
            args.path = str(args.path)
        cfg = resolve_config(args)
        # The pool the step will run with: the setting, else the environment's variable, else PJRT's 64 GiB.
        cfg = dataclasses.replace(cfg, host_pool_gb=host_pool_bytes(cfg.host_pool_gb, os.environ) / (1 << 30))
        baseline = load_snapshot(cfg.baseline) if cfg.baseline else None  # a bad baseline fails before compiling

        with no_cache(args):
            subject = load_subject(cfg, args.module)
        result = run_check(subject, cfg, baseline)
        if args.write_baseline:
            write_baseline(subject, args.write_baseline)
        with open_output(args.output) as out:
            fmt.render(result, out)
        return EXIT_OK if result.passed else EXIT_CHECK_FAILED
