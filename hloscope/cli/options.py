"""The options several commands take, defined once: each ``add_*_option`` adds one (its help
beside it), and the functions below read what the user gave into a value (``parse_sets``,
``args_spec``, ``scheduler_from_args``, ``host_pool_bytes``...), refusing a malformed one in one line.

Light to import (no analysis, no JAX), so a command that only needs these starts fast. What the
commands do with the values lives in ``cli/compiling.py`` (the compile request) and
``cli/reporting.py`` (the report).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Mapping
from typing import Any

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.request import Policy, Scheduler
from hloscope.targets import DEFAULT_HOST_POOL_BYTES, DEFAULT_TARGET, HOST_POOL_ENV, as_target, memory_fraction_problem

__all__ = ["MEMORY_FRACTION_HELP", "TARGET_HELP", "add_compile_options", "add_devices_option",
           "add_host_memory_space_option", "add_maxtext_option", "add_memory_fraction_option", "add_module_option",
           "add_target_option", "args_spec", "compile_target", "fraction", "host_pool_bytes", "maxtext_from_args",
           "parse_sets", "scheduler_from_args"]


#: ``--target``'s help, the same in every command: the one default rule (``artifact.resolve_target``).
TARGET_HELP = (f"GPU or TPU target: a built-in name (hloscope targets) or a .toml/.json target file; default: the "
               f"input's own (an artifact folder's manifest, a TPU dump's chip, the GPU an nsys-jax archive names), "
               f"else {DEFAULT_TARGET}")


def add_target_option(p: argparse.ArgumentParser, help: str = TARGET_HELP) -> None:
    """``--target``, defined here for every command. Left None when not given, so a path's own
    target wins (``artifact.resolve_target``) and a compile takes :func:`compile_target`."""
    p.add_argument("--target", default=None, metavar="NAME|FILE", help=help)


def add_module_option(p: argparse.ArgumentParser) -> None:
    """``--module``: which module of an XLA dump folder to read (``hloscope.hlo.dump_folder``)."""
    p.add_argument("--module", metavar="NAME", default=None,
                   help="with an XLA dump folder: read this module (its name, e.g. jit_step, or its id, e.g. "
                        "module_0044) instead of the one found as the step")


def compile_target(args: argparse.Namespace) -> str:
    """The target a compile is for: ``--target``, else the default; checked (unknown name: exit 3)
    before anything slow starts."""
    as_target(args.target)
    return str(args.target or DEFAULT_TARGET)


#: ``--memory-fraction``'s help, the same in every command that compiles.
MEMORY_FRACTION_HELP = ("compile as JAX on a GPU whose allocator takes F of the HBM (XLA_PYTHON_CLIENT_MEM_FRACTION; "
                        "JAX's default 0.75): XLA's scheduler plans for it and the step must fit in it; default: "
                        "as a compile-only device, where XLA plans for 80%% of the HBM")


def add_devices_option(p: argparse.ArgumentParser, default: int | None = 8) -> None:
    """``--devices``: the compile-only devices in the mesh (``default`` None: a config file may say)."""
    p.add_argument("--devices", type=int, default=default, metavar="N",
                   help="compile-only devices in the mesh: GPUs, or TPU chips (TensorCores on tpu7x and with "
                        "--per-core) (default 8)")


def add_memory_fraction_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--memory-fraction", type=fraction, default=None, metavar="F", help=MEMORY_FRACTION_HELP)


def add_host_memory_space_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host-memory-space", type=int, default=5, metavar="N",
                   help="the memory space of host memory in the HLO's layouts (default 5, XLA's S(5))")


#: ``--maxtext``'s help where the command compiles the step as given.
MAXTEXT_HELP = ("MaxText's own train step (the installed maxtext; Python 3.12+, pip install 'hloscope[maxtext]'): an "
                "optional config file (default MaxText's base.yml), then MaxText's KEY=VALUE overrides, e.g. "
                "--maxtext model_name=llama3.1-8b remat_policy=qkv_proj_offloaded (docs/maxtext.md)")


def add_maxtext_option(p: Any, help: str = MAXTEXT_HELP) -> None:
    """``--maxtext [CONFIG.yml] KEY=VALUE ...``: MaxText's own step, for every command that compiles one
    (``p``: a parser or a mutually exclusive group)."""
    p.add_argument("--maxtext", nargs="*", metavar="CONFIG.yml|KEY=VALUE", help=help)


def maxtext_from_args(args: argparse.Namespace) -> tuple[str, ...] | None:
    """``--maxtext``'s config and overrides (None: not given); MaxText takes its own settings only."""
    if getattr(args, "maxtext", None) is None:
        return None
    if getattr(args, "set", None) or getattr(args, "policy", None) or getattr(args, "args", None) \
            or getattr(args, "args_from", None):
        raise HloscopeError("--maxtext takes MaxText's own KEY=VALUE settings (remat_policy=..., "
                            "per_device_batch_size=...), not --set, --policy, --args or --args-from",
                            EXIT_BAD_INPUT)
    return tuple(args.maxtext)


def add_compile_options(p: argparse.ArgumentParser) -> None:
    add_devices_option(p)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a workload setting (layers=4, batch=2, seq=1024, scan=false ...)")
    p.add_argument("--policy", choices=[x.value for x in Policy], help="what to do with tagged activations")
    p.add_argument("--scheduler", choices=[s.value for s in Scheduler], default=None,
                   help="XLA's scheduler: lhs (latency hiding scheduler, the estimator XLA picks: speed-of-light "
                        "on Hopper/Blackwell), lhs-approx (LHS with XLA's approximate estimator), none (LHS "
                        "really off); default lhs")
    p.add_argument("--lhs", action=argparse.BooleanOptionalAction, default=None,
                   help="--lhs is --scheduler lhs, --no-lhs is --scheduler none")
    p.add_argument("--pipelined-offload", action=argparse.BooleanOptionalAction, default=True,
                   help="pipelined host offloading (default on)")
    p.add_argument("--xla-flag", action="append", default=[], metavar="NAME=VALUE",
                   help="extra XLA compiler option, e.g. xla_gpu_enable_while_loop_double_buffering=true")
    add_memory_fraction_option(p)
    add_topology_option(p)
    add_no_cache_option(p)


def add_topology_option(p: argparse.ArgumentParser) -> None:
    """``--topology``, ``--slices``, ``--per-core``: a TPU slice's shape where one matters, how many slices
    over DCN, a device per TensorCore (hloscope.compile.tpu.slices)."""
    p.add_argument("--topology", default=None, metavar="SHAPE",
                   help="TPU targets: the slice, as libtpu names it (v5p:4x4x8) or as Cloud TPU and MaxText do "
                        "(v5p-256: TensorCores); default: the slice --devices makes")
    p.add_argument("--slices", type=int, default=1, metavar="N",
                   help="TPU targets: N slices of that shape joined over the data-center network (DCN); --devices "
                        "counts all of them (a built-in workload is data parallel across slices); default 1")
    p.add_argument("--per-core", action="store_true",
                   help="TPU v4: a device per TensorCore (two per chip, each with half the chip's HBM), not one "
                        "megacore device per chip")


def add_no_cache_option(p: argparse.ArgumentParser,
                        text: str = "compile again; neither read nor fill the compile cache") -> None:
    """``--no-cache``: every command that compiles takes it (HLOSCOPE_NO_CACHE=1 for the run)."""
    p.add_argument("--no-cache", action="store_true", help=text)


def add_host_pool_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host-pool-gb", type=float, default=None, metavar="GB",
                   help="PJRT's pinned-host pool per process, GiB (default: XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB "
                        "from the environment, else 64, PJRT's default): host buffers must fit in it")


def fraction(text: str) -> float:
    """``--memory-fraction``: a number in (0, 1] (``request.memory_fraction_problem``)."""
    try:
        f = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    problem = memory_fraction_problem(f)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return f


def parse_sets(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        k, eq, v = item.partition("=")
        if not eq or not k:
            raise HloscopeError(f"--set wants KEY=VALUE, got '{item}'", EXIT_BAD_INPUT)
        out[k.strip()] = v.strip()
    return out


#: What ``--args-from module:function`` passes as the ``--args`` spec (hloscope.compile.seam.userfn.ARGS_FROM).
ARGS_FROM = "@"


def add_args_options(p: argparse.ArgumentParser, help_args: str) -> None:
    """``--args SPEC`` and ``--args-from MODULE:FUNCTION`` (pytrees: docs/ci.md)."""
    p.add_argument("--args", default="", metavar="SPEC", help=help_args)
    p.add_argument("--args-from", metavar="MODULE:FUNCTION",
                   help="with --fn: a function returning the step's abstract arguments, pytrees of "
                        "jax.ShapeDtypeStruct (called with the mesh if it takes an argument)")


def args_spec(args: argparse.Namespace) -> str:
    """The one spec of the step's arguments: ``--args``, or ``@MODULE:FUNCTION`` from ``--args-from``."""
    spec = str(getattr(args, "args", "") or "")
    ref = getattr(args, "args_from", None)
    if not ref:
        return spec
    if spec:
        raise HloscopeError("--args and --args-from both describe the arguments: give one", EXIT_BAD_INPUT)
    if ":" not in ref:
        raise HloscopeError(f"--args-from wants package.module:function, got '{ref}'", EXIT_BAD_INPUT)
    return ARGS_FROM + str(ref)


def scheduler_from_args(args: argparse.Namespace) -> Scheduler:
    """``--scheduler``, or ``--lhs``/``--no-lhs`` as its older spelling; both disagreeing is an error."""
    named = getattr(args, "scheduler", None)
    lhs = getattr(args, "lhs", None)
    if named is None:
        return Scheduler.from_lhs(lhs)
    chosen = Scheduler(named)
    if lhs is not None and (chosen is not Scheduler.NONE) != lhs:
        raise HloscopeError(f"--scheduler {chosen.value} contradicts --{'' if lhs else 'no-'}lhs; give one of them",
                            EXIT_BAD_INPUT)
    return chosen


def host_pool_bytes(gib: float | None, environ: Mapping[str, str]) -> int:
    """PJRT's pinned-host pool: ``gib`` when given, else ``XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB`` from
    ``environ`` (XLA multiplies it by 2**30: GiB), else 64 GiB. A malformed variable is an error
    here, as PJRT would ignore it and keep 64."""
    if gib is None:
        text = environ.get(HOST_POOL_ENV, "").strip()
        if not text:
            return DEFAULT_HOST_POOL_BYTES
        try:
            gib = float(int(text))
        except ValueError:
            raise HloscopeError(f"{HOST_POOL_ENV}={text!r} is not a whole number of GB (PJRT would ignore it and "
                                f"keep {DEFAULT_HOST_POOL_BYTES >> 30})", EXIT_BAD_INPUT) from None
    if gib <= 0:
        raise HloscopeError(f"host pool {gib:g} GB: expected a size above 0", EXIT_BAD_INPUT)
    return int(gib * (1 << 30))


def no_cache(args: argparse.Namespace) -> contextlib.AbstractContextManager[None]:
    """The compile cache turned off for the block when ``--no-cache`` was given (workers inherit it).
    Without it nothing is imported (the TUI's first screen imports no analysis)."""
    if not getattr(args, "no_cache", False):
        return contextlib.nullcontext()
    from hloscope.compile.step.cache import turned_off  # lazy: the cache loads the analysis

    return turned_off(True)
