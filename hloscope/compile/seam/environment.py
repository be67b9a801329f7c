"""Process set-up for deviceless GPU compilation, before JAX is imported.

JAX must see ``JAX_PLATFORMS=cpu`` (no GPU here) and
``JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1`` (no driver) before its first import; the
CUDA PJRT plugin then still offers compile-only GPU topologies.
"""

from __future__ import annotations

import os
import resource
import sys
from importlib.metadata import PackageNotFoundError, version

from hloscope.errors import EXIT_ENVIRONMENT, HloscopeError
from hloscope.native_stderr import (
    NATIVE_NOISE,
    NativeCapture,
    capture_native_stderr,
    has_gpu,
    quiet_first_jax_import,
    quiet_native_stderr,
    terminal_lines,
)

__all__ = ["NATIVE_NOISE", "NativeCapture", "address_space_limit", "backend_started", "capture_native_stderr",
           "prepare", "quiet_first_jax_import", "quiet_native_stderr", "terminal_lines", "versions"]

#: The one line to print when JAX's backend started before hloscope could configure it.
STARTED_TOO_EARLY = ("jax's backend already started without the CUDA plugin's compile-only GPUs (something ran a "
                     "jax computation or jax.devices() first): call hloscope before that, or start Python with "
                     "JAX_PLATFORMS=cpu JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1")


def backend_started() -> bool:
    """Whether JAX has already created its backends (then its platform can no longer change)."""
    # lazy: jax is slow to import; only when tracing or compiling
    from hloscope.compile.seam.jaxcompat import backends_started

    return backends_started()


def prepare() -> None:
    """Set the environment JAX needs for compile-only GPU devices; import JAX.

    Works when the user imported jax first: the platform is set through
    ``jax.config`` as long as no backend has started (no computation ran yet).
    On a machine with a GPU nothing is changed: the CUDA plugin starts normally.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if not has_gpu():
        os.environ["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"  # read when the plugin initializes
        if "jax" not in sys.modules:
            os.environ["JAX_PLATFORMS"] = "cpu"
    try:
        with quiet_native_stderr():
            # lazy: jax is slow to import; only when tracing or compiling
            import jax
            from jax.experimental import topologies  # noqa: F401
    except Exception as e:  # ImportError or a broken install
        raise HloscopeError(f"cannot import jax: {e}; compiling needs the compile extra: "
                            "pip install 'hloscope[compile]'", EXIT_ENVIRONMENT) from None
    # lazy: jax is slow to import; only when tracing or compiling
    from hloscope.compile.seam.jaxcompat import warn_version

    warn_version(jax.__version__)
    if not has_gpu() and not backend_started() and getattr(jax.config, "jax_platforms", None) != "cpu":
        jax.config.update("jax_platforms", "cpu")  # host computations on CPU; GPUs stay compile-only


def address_space_limit() -> int | None:
    """The soft address-space limit (``ulimit -v``) this process and its children have, in bytes;
    None when there is none."""
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


#: Words in a loader's or allocator's error that mean memory could not be mapped.
OUT_OF_MAPPABLE_MEMORY = ("failed to map segment", "cannot allocate memory", "bad_alloc", "out of memory")


def versions() -> dict[str, str]:
    """Versions of the packages that decide what XLA emits."""
    out = {"python": sys.version.split()[0]}
    for pkg in ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt", "nvidia-cuda-nvcc-cu12"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    try:  # the TPU compiler (the tpu extra), named only where installed
        out["libtpu"] = version("libtpu")
    except PackageNotFoundError:
        pass
    return out
