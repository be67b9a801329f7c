"""Process set-up for deviceless GPU compilation, before JAX is imported.

JAX must see ``JAX_PLATFORMS=cpu`` (no GPU here) and
``JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1`` (no driver) before its first import; the
CUDA PJRT plugin then still offers compile-only GPU topologies.
"""

from __future__ import annotations

import os
import sys

from hloscope.errors import EXIT_ENVIRONMENT, HloscopeError


def prepare() -> None:
    """Set the environment JAX needs for compile-only GPU devices; import JAX."""
    if "jax" not in sys.modules:
        os.environ["JAX_PLATFORMS"] = "cpu"
        os.environ["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
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
