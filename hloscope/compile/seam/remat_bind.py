"""The wrapper ``jaxcompat.checkpoint_policy_replaced`` puts on JAX's checkpoint bind, in a file of its own.

JAX names each equation by its innermost frame outside JAX's own files; ``jaxcompat`` registers
this file as one of those, so that a checkpoint traced through the wrapper keeps the user's
source line (``jax.checkpoint``'s call in the step), not this one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def switched_bind(bind: Callable[..., Any], policy: Any) -> Callable[..., Any]:
    """``bind`` with its ``policy`` parameter replaced by ``policy``."""

    def switched(*args: Any, **params: Any) -> Any:
        if "policy" in params:
            params["policy"] = policy
        return bind(*args, **params)

    return switched
