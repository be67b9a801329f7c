"""Process set-up for deviceless GPU compilation, before JAX is imported.

JAX must see ``JAX_PLATFORMS=cpu`` (no GPU here) and
``JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1`` (no driver) before its first import; the
CUDA PJRT plugin then still offers compile-only GPU topologies.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator

from hloscope.errors import EXIT_ENVIRONMENT, HloscopeError

# What the CUDA plugin prints on a machine with no GPU, every time it loads: expected
# here, and noise to a user; and the plugin's own INFO and WARNING lines (glog format),
# which hloscope turns on to read which scheduler ran (hloscope.compile.scheduler).
# Errors and anything not in glog format are passed through.
NATIVE_NOISE = re.compile(r"All log messages before absl::InitializeLog|cudart_stub\.cc|Could not find cuda drivers"
                          r"|^\s*[IW]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.]+:\d+\] ")


class NativeCapture:
    """What native code wrote to file descriptor 2 inside :func:`capture_native_stderr`."""

    def __init__(self) -> None:
        self.text: str | None = None  # None: stderr could not be captured (replaced by pytest, a notebook)
        self._fd: int | None = None

    def peek(self) -> str | None:
        """What was captured so far (inside the ``with``), or ``.text`` after it."""
        if self._fd is None:
            return self.text
        size = os.fstat(self._fd).st_size
        return os.pread(self._fd, size, 0).decode(errors="replace")


@contextlib.contextmanager
def capture_native_stderr() -> Iterator[NativeCapture]:
    """Capture file descriptor 2; afterwards pass on what is not :data:`NATIVE_NOISE`.

    The capture keeps everything (``.text``), for readers of XLA's log."""
    out = NativeCapture()
    fd = 2  # native code writes here, whatever Python's sys.stderr is (pytest, notebooks replace it)
    try:
        os.fstat(fd)
    except OSError:
        yield out
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), fd)
        out._fd = tmp.fileno()
        try:
            yield out
        finally:
            sys.stderr.flush()
            out._fd = None
            os.dup2(saved, fd)
            os.close(saved)
            tmp.seek(0)
            out.text = tmp.read().decode(errors="replace")
            kept = [ln for ln in out.text.splitlines() if ln and not NATIVE_NOISE.search(ln)]
            if kept:
                print("\n".join(kept), file=sys.stderr)


@contextlib.contextmanager
def quiet_native_stderr() -> Iterator[None]:
    """Hide the plugin's no-GPU chatter on file descriptor 2; keep everything else."""
    with capture_native_stderr():
        yield


#: The one line to print when JAX's backend started before hloscope could configure it.
STARTED_TOO_EARLY = ("jax's backend already started without the CUDA plugin's compile-only GPUs (something ran a "
                     "jax computation or jax.devices() first): call hloscope before that, or start Python with "
                     "JAX_PLATFORMS=cpu JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1")


def _has_gpu() -> bool:
    return os.path.exists("/dev/nvidiactl")


def backend_started() -> bool:
    """Whether JAX has already created its backends (then its platform can no longer change)."""
    if "jax" not in sys.modules:
        return False
    from jax._src import xla_bridge

    return bool(getattr(xla_bridge, "_backends", {}))


def prepare() -> None:
    """Set the environment JAX needs for compile-only GPU devices; import JAX.

    Works when the user imported jax first: the platform is set through
    ``jax.config`` as long as no backend has started (no computation ran yet).
    On a machine with a GPU nothing is changed: the CUDA plugin starts normally.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if not _has_gpu():
        os.environ["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"  # read when the plugin initializes
        if "jax" not in sys.modules:
            os.environ["JAX_PLATFORMS"] = "cpu"
    try:
        with quiet_native_stderr():
            import jax
            from jax.experimental import topologies  # noqa: F401
    except Exception as e:  # ImportError or a broken install
        raise HloscopeError(f"cannot import jax: {e}; compiling needs the compile extra: "
                            "pip install 'hloscope[compile]'", EXIT_ENVIRONMENT) from None
    from hloscope.compile.jaxcompat import warn_version

    warn_version(jax.__version__)
    if not _has_gpu() and not backend_started() and getattr(jax.config, "jax_platforms", None) != "cpu":
        jax.config.update("jax_platforms", "cpu")  # host computations on CPU; GPUs stay compile-only


def versions() -> dict[str, str]:
    """Versions of the packages that decide what XLA emits."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for pkg in ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt", "nvidia-cuda-nvcc-cu12"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out
