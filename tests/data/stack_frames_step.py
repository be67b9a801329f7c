"""A step whose ops sit three calls deep, to read XLA's stack frames in text and in proto.

Regenerate ``stack_frames.hlo.txt`` / ``stack_frames.hlo.pb`` (jax 0.10.2, CPU) with::

    XLA_FLAGS="--xla_dump_to=DIR --xla_dump_hlo_as_text --xla_dump_hlo_as_proto" \
        JAX_PLATFORMS=cpu python tests/data/stack_frames_step.py

and copy DIR/module_*.jit_f.before_optimizations.{txt,hlo.pb} here.
"""

import jax
import jax.numpy as jnp


def f(x):  # type: ignore[no-untyped-def]
    return g(x) * 2


def g(x):  # type: ignore[no-untyped-def]
    return jnp.sin(x) + h(x)


def h(x):  # type: ignore[no-untyped-def]
    return jnp.cos(x)


if __name__ == "__main__":
    jax.jit(f).lower(jnp.ones(4)).compile()
