"""Where JAX's internals differ between the versions hloscope supports: the one place for it.

The ``compile`` extra accepts jax (with the matching jaxlib and CUDA 12 plugin, through
``jax[cuda12-local]``) from :data:`OLDEST` up to, not including, :data:`BEYOND`; CI
compiles the built-in steps on the oldest and the newest (docs/jax-versions.md has the
matrix: which XLA each jaxlib carries and what differs in the HLO). Every code path that
depends on the JAX version is a function here, so the rest of ``hloscope.compile`` reads
one API. Each function says which versions differ and how (read in JAX's sources).

:func:`version_note` is the one line for a JAX outside the tested range; callers print it
and go on (a newer JAX usually works; what may not is named in the line).
"""

from __future__ import annotations

import re
from typing import Any

#: The oldest jax tested (and declared in the ``compile`` extra).
OLDEST = (0, 9, 0)
#: The first jax not tested (the extra's upper bound, exclusive).
BEYOND = (0, 11, 0)
#: What was measured to differ on jax 0.8.3 (it compiles with the paths below, but is not tested in CI).
OLDER_GAPS = ("checkpoint names and source lines can be attached to another tensor's transfers (XLA of jaxlib "
              "0.8 gives fused ops other source lines), GEMM fusions keep default tilings (autotuning off)")
#: What depends on JAX internals and may break on an untested version.
AT_RISK = ("compile-only GPU devices (jax.experimental.topologies), checkpoint-name source lines "
           "(jax._src.source_info_util) and --memory-fraction (jax._src.compiler.get_compile_options)")


def _parse(version: str) -> tuple[int, ...]:
    """(0, 9, 0) from ``0.9.0.1``, ``0.10.2``, ``0.11.0rc1``; () when there is no number."""
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])


def tested_range() -> str:
    """``jax 0.8.0 to 0.10.x`` from :data:`OLDEST` and :data:`BEYOND`."""
    last_minor = f"{BEYOND[0]}.{BEYOND[1] - 1}.x" if BEYOND[1] > 0 else f"below {BEYOND[0]}.0"
    return f"jax {'.'.join(map(str, OLDEST))} to {last_minor}"


def version_note(jax_version: str) -> str:
    """One line when ``jax_version`` is outside the tested range, else "" (what differs on a tested
    version is in docs/jax-versions.md, not repeated at every compile)."""
    v = _parse(jax_version)
    if not v or OLDEST <= v < BEYOND:
        return ""
    older = f"; on jax 0.8: {OLDER_GAPS}" if v[:2] == (0, 8) else ""
    return (f"jax {jax_version} is outside the range hloscope is tested with ({tested_range()}); "
            f"what may not work: {AT_RISK}{older}")


def installed_jax() -> str:
    """The installed jax's version, read from its metadata without importing it ("" when absent)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jax")
    except PackageNotFoundError:
        return ""


def dumps_live_range(jaxlib: str | None = None) -> bool:
    """Whether this jaxlib's XLA writes ``*-live-range.txt`` into ``xla_dump_to`` (the live-at-peak facts
    of docs/memory.md): jaxlib 0.10 does; 0.8 and 0.9 have no such dump (no ``-live-range.txt``
    string in their CUDA plugin)."""
    v = _parse(jaxlib if jaxlib is not None else jaxlib_version())
    return not v or v >= (0, 10, 0)


def abstract_device_platform(device: Any) -> str:
    """The platform an ``AbstractMesh``'s ``AbstractDevice`` was made for.

    jax 0.10 records it (``AbstractDevice.platform``); jax 0.8 and 0.9 keep only
    ``device_kind`` and ``num_cores``, so there the mesh is taken for GPUs and its
    device kind (checked by the caller against the target) is what tells a CPU mesh.
    """
    return str(getattr(device, "platform", "gpu"))


def jaxlib_version() -> str:
    """The installed jaxlib's version ("" when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jaxlib")
    except PackageNotFoundError:
        return ""


def compile_flags(jaxlib: str | None = None) -> dict[str, Any]:
    """XLA options a deviceless compile needs on this jaxlib (the user's own flags override them).

    jaxlib 0.8's XLA autotunes every GEMM fusion and, with no device to time on, stops with
    ``INTERNAL: Expect autotune result cache hit for deviceless compilation`` (measured on
    the built-in llama step, jaxlib 0.8.3); ``xla_gpu_autotune_level=0`` makes it take each
    fusion's default tiling instead. jaxlib 0.9 and 0.10 compile the same step without it.
    """
    v = _parse(jaxlib if jaxlib is not None else jaxlib_version())
    return {"xla_gpu_autotune_level": 0} if v and v < (0, 9, 0) else {}


def memory_space_name(x: Any) -> str | None:
    """``Host``, ``Device`` ... when ``x`` is one of JAX's memory spaces (``jax.memory.Space.Host``,
    what a ``device_put`` to host records in the jaxpr), else None.

    jax 0.10 has a class ``MemorySpace`` in ``jax._src.core``; jax 0.8 and 0.9 an enum
    ``Space`` in ``jax._src.memory`` (both print as ``MemorySpace.Host``). Read by type
    name and module: the check must not import JAX's private modules to compare against.
    """
    cls = type(x)
    if cls.__name__ == "MemorySpace" or (cls.__name__ == "Space" and cls.__module__.startswith("jax")):
        return str(getattr(x, "name", x)).rsplit(".", 1)[-1]
    return None


def optimized_text(compiled: Any, dump: str) -> str:
    """The optimized module's text with its source-line tables.

    jaxlib 0.9 and later print ``FileNames`` ... ``StackFrames`` in ``Compiled.as_text()``;
    jaxlib 0.8 prints a clone of the module without them (its instructions keep their
    ``stack_frame_id``, which then name nothing), so there the text XLA dumped after
    optimizations (``dump``, the compile's ``xla_dump_to``), which has them, is used:
    the same schedule and instruction names (read side by side on the README's step, jaxlib
    0.8.3); only computations the clone had renamed ``.clone`` keep their own names.
    """
    import glob
    import os

    text: str = compiled.as_text() or ""
    if "\nStackFrames\n" in text or "stack_frame_id=" not in text:
        return text
    found = sorted(glob.glob(os.path.join(dump, "*_after_optimizations.txt")))
    if not found:
        return text
    with open(found[-1], encoding="utf-8") as f:
        dumped = f.read()
    return dumped if "\nStackFrames\n" in dumped else text


class JaxVersionWarning(UserWarning):
    """The jax in use is outside the tested range, or a tested one with known gaps."""


#: Set (to "1") once the line was given: by the CLI before it starts compile workers (they inherit
#: it and stay quiet), by :func:`warn_version` in a process of its own.
NOTED_ENV = "HLOSCOPE_JAX_NOTED"


def warn_version(jax_version: str) -> None:
    """:func:`version_note` as a :class:`JaxVersionWarning`, once per process tree, for API users;
    the CLI prints the same line itself, as a note, and sets :data:`NOTED_ENV`."""
    import os
    import warnings

    if os.environ.get(NOTED_ENV):
        return
    note = version_note(jax_version)
    if note:
        os.environ[NOTED_ENV] = "1"
        warnings.warn(note, JaxVersionWarning, stacklevel=3)


def jaxlib_at_least(major: int, minor: int) -> bool:
    """Whether the installed jaxlib is ``major.minor`` or newer (True when it is not installed)."""
    v = _parse(jaxlib_version())
    return not v or v[:2] >= (major, minor)


#: The CUDA PJRT plugin's modules (jax[cuda12], jax[cuda13]), in the order tried.
CUDA_PLUGIN_MODULES = ("jax_plugins.xla_cuda12", "jax_plugins.xla_cuda13")


def register_cuda_plugin_late() -> bool:
    """Register the CUDA plugin after jax started its backends without it; True when it worked.

    With no GPU, a jax computation that ran before hloscope set ``JAX_SKIP_CUDA_CONSTRAINTS_CHECK``
    (jax imported before hloscope) made the plugin's ``initialize()`` fail its CUDA version check,
    so the plugin was never registered and no compile-only topology exists
    (``topology not implemented``). Measured on jax 0.10.2 (and the plugin's code of 0.9):
    calling ``initialize()`` again with the check skipped registers it
    (``xla_bridge.register_plugin``) although the backends already started, and
    ``get_topology_desc(platform="cuda")`` then works; a computation keeps running on the CPU.
    """
    import importlib
    import os

    from hloscope.native_stderr import SKIP_CUDA_CHECK, quiet_native_stderr

    os.environ[SKIP_CUDA_CHECK] = "1"
    for name in CUDA_PLUGIN_MODULES:
        try:
            plugin = importlib.import_module(name)
        except ImportError:
            continue
        try:
            with quiet_native_stderr():
                plugin.initialize()
        except Exception:  # already registered, or a real failure: the caller says it in one line
            return False
        return True
    return False
