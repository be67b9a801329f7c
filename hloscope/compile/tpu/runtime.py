"""libtpu on a machine with no TPU: the process environment it reads, its compile-only devices, its options.

libtpu (``pip install 'hloscope[tpu]'``) is loaded by the first
``get_topology_desc(platform="tpu")``, and reads its environment once, then. Measured with
libtpu 0.0.42 (jax 0.10.2) on a CPU-only machine:

- With no ``TPU_ACCELERATOR_TYPE`` / ``TPU_WORKER_HOSTNAMES``, it prints "could not determine TPU
  accelerator type" and an ``INVALID_ARGUMENT ... unexpected worker hostname`` trace to the
  terminal; with both set it prints nothing, and which accelerator type changes nothing it
  compiles. A second process loading libtpu at the same time aborts on ``/tmp/libtpu_lockfile``
  unless ``ALLOW_MULTIPLE_LIBTPU_LOAD=1`` (sweeps compile in parallel processes). :func:`prepare`
  sets them (``hloscope.native_stderr.LIBTPU_NO_TPU_ENVIRONMENT``) when the user has not.
- TPU compiler options (``xla_tpu_*``) given to ``lowered.compile(compiler_options=...)`` reach
  that compile: the dump's ``tpu_comp_env.txt`` shows them ("has a non-default value"), and an
  unknown one is ``INVALID_ARGUMENT: No such compile option``. ``LIBTPU_INIT_ARGS`` sets libtpu's
  flags for the process (read at load); in ``XLA_FLAGS`` a TPU flag aborts jaxlib ("Unknown flag
  in XLA_FLAGS"), so :func:`refuse_tpu_flags_in_xla_flags` says so first.
"""

from __future__ import annotations

import os
import re
from typing import Any

from hloscope.compile.tpu.slices import TpuSlice
from hloscope.errors import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, HloscopeError
from hloscope.native_stderr import has_tpu, quiet_libtpu
from hloscope.targets import TpuTarget

#: The environment variable holding libtpu's own flags for the process.
LIBTPU_INIT_ARGS = "LIBTPU_INIT_ARGS"

#: libtpu's option that turns TPU XLA's latency hiding scheduler off (on by default: the dump's
#: ``tpu_comp_env.txt`` gives its default as true).
TPU_LHS_FLAG = "xla_tpu_enable_latency_hiding_scheduler"

#: The install that brings libtpu.
INSTALL = "pip install 'hloscope[tpu]'"


def libtpu_version() -> str | None:
    """The installed libtpu's version; None when it is not installed."""
    # lazy: importlib.metadata, only to read libtpu's version
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("libtpu")
    except PackageNotFoundError:
        return None


def refuse_tpu_flags_in_xla_flags(environ: dict[str, str] | None = None) -> None:
    """One line (exit 2) when ``XLA_FLAGS`` holds TPU flags: jaxlib would abort the process on them."""
    text = (environ if environ is not None else os.environ).get("XLA_FLAGS", "")
    found = re.findall(r"--?(xla_tpu_\w+|megascale_\w+|tpu_\w+)", text)
    if found:
        raise HloscopeError(f"XLA_FLAGS holds TPU flags ({', '.join(found[:3])}): jaxlib aborts on them; give them "
                            f"with --xla-flag NAME=VALUE or in {LIBTPU_INIT_ARGS}", EXIT_BAD_INPUT)


def prepare(tpu_slice: TpuSlice) -> None:
    """Set libtpu's environment where the user (or ``import hloscope``) has not, before libtpu loads
    (``TPU_ACCELERATOR_TYPE``: the slice's Cloud TPU name, then
    ``hloscope.native_stderr.LIBTPU_NO_TPU_ENVIRONMENT``); refuse TPU flags in ``XLA_FLAGS``."""
    refuse_tpu_flags_in_xla_flags()
    if not has_tpu():
        os.environ.setdefault("TPU_ACCELERATOR_TYPE", tpu_slice.accelerator_type)
    quiet_libtpu()


_DEVICES: dict[str, list[Any]] = {}


def compile_only_devices(chip: TpuTarget, tpu_slice: TpuSlice) -> list[Any]:
    """The slice's compile-only TPU devices (libtpu's), in id order; cached per slice."""
    # lazy: the process set-up, only when building TPU devices
    from hloscope.compile.seam import environment

    if libtpu_version() is None:
        raise HloscopeError(f"compiling for {chip.name} needs libtpu, which is not installed: {INSTALL}",
                            EXIT_ENVIRONMENT)
    prepare(tpu_slice)
    environment.prepare()
    key = repr(sorted(tpu_slice.to_record().items()))
    if key not in _DEVICES:
        # lazy: jax is slow to import; only when tracing or compiling
        from jax.experimental import topologies

        try:
            with environment.quiet_native_stderr():
                topo = topologies.get_topology_desc(platform="tpu", **tpu_slice.topology_kwargs())
        except Exception as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            raise HloscopeError(f"libtpu cannot build the compile-only slice {tpu_slice.name} for {chip.name}: "
                                f"{first}", EXIT_ENVIRONMENT) from None
        _DEVICES[key] = sorted(topo.devices, key=lambda d: int(d.id))
    return _DEVICES[key]


def compile_options(xla_options: dict[str, Any], lhs: bool) -> dict[str, Any]:
    """The options of a TPU compile: the user's (``--xla-flag``, TPU flags included), and the
    latency hiding scheduler off when not asked for."""
    return {**({} if lhs else {TPU_LHS_FLAG: False}), **xla_options}


def init_args() -> str:
    """``LIBTPU_INIT_ARGS`` as this process has it (libtpu's flags: part of a compile's cache key)."""
    return os.environ.get(LIBTPU_INIT_ARGS, "")
