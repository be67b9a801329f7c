"""A step whose offloaded value passes an opt-barrier on its way to the host.

The unoptimized module ``opt_barrier_offload.before_optimizations.hlo.txt`` beside this file was
compiled from it with:

    PYTHONPATH=tests/data hloscope compile --fn opt_barrier_step:step \
        --args 'f32[64,64]; f32[8,64]' --devices 1 --out /tmp/ob  # then copy unoptimized.hlo.txt
"""

import jax
import jax.numpy as jnp


def step(w, x):  # type: ignore[no-untyped-def]
    y = jnp.sin(x @ w)
    (kept,) = jax.lax.optimization_barrier((y,))
    return jax.device_put(kept, jax.memory.Space.Host)
