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
# here, and noise to a user. Anything else native code prints is passed through.
NATIVE_NOISE = re.compile(r"All log messages before absl::InitializeLog|cudart_stub\.cc|Could not find cuda drivers")


@contextlib.contextmanager
def quiet_native_stderr() -> Iterator[None]:
    """Hide the plugin's no-GPU chatter on file descriptor 2; keep everything else."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # stderr replaced (pytest capture, notebooks)
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), fd)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            tmp.seek(0)
            kept = [ln for ln in tmp.read().decode(errors="replace").splitlines() if ln and not NATIVE_NOISE.search(ln)]
            if kept:
                print("\n".join(kept), file=sys.stderr)


def prepare() -> None:
    """Set the environment JAX needs for compile-only GPU devices; import JAX."""
    if "jax" not in sys.modules:
        os.environ["JAX_PLATFORMS"] = "cpu"
        os.environ["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        with quiet_native_stderr():
            import jax  # noqa: F401
            from jax.experimental import topologies  # noqa: F401
    except Exception as e:  # ImportError or a broken install
        raise HloscopeError(f"cannot import jax: {e}; run 'pip install -e .'", EXIT_ENVIRONMENT) from None


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
