"""``hloscope.compile.seam.jaxcompat``'s readings of a jaxpr, on the installed jax's real jaxprs.

jax 0.9 and 0.10 give ``scan`` the params ``num_consts`` / ``num_carry``; from 0.11 they are gone
and ``ft_in`` / ``ft_out`` flat trees say the same (reading ``num_carry`` with a default then gave
0 carries, silently). jax 0.11 added a ``compute_on`` primitive (0.12's only ``compute_on``).
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from hloscope.compile.seam import jaxcompat

pytestmark = pytest.mark.jax_version  # the installed JAX's jaxpr params and compute_on

jax = pytest.importorskip("jax", reason="the compile extra")
jnp = jax.numpy


def _eqn(jaxpr: Any, prim: str) -> Any:
    [eqn] = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == prim]
    return eqn


def test_scan_consts_and_carry() -> None:
    def f(c: Any, d: Any, x: Any) -> Any:
        def body(carry: Any, xi: Any) -> Any:
            a, b = carry
            return (a + xi * c * d, b * 2), a.sum()
        return jax.lax.scan(body, (x, x), jnp.ones((3, 4)))

    eqn = _eqn(jax.make_jaxpr(f)(1.0, 2.0, jnp.ones(4)), "scan")
    # consts c and d, carry (a, b), one stacked input
    assert jaxcompat.scan_const_count(eqn) == 2 and jaxcompat.scan_carry_count(eqn) == 2
    body = jaxcompat.jaxpr_of(eqn.params["jaxpr"])
    assert len(body.invars) == 5 and len(body.outvars) == 3


def test_argument_paths_and_frames() -> None:
    def f(params: Any, x: Any) -> Any:
        return jnp.sum(x @ params["w"])

    traced = jax.jit(f).trace({"w": jax.ShapeDtypeStruct((4, 4), jnp.float32)},
                              jax.ShapeDtypeStruct((2, 4), jnp.float32))
    assert jaxcompat.argument_paths(traced.jaxpr) == ("params['w']", "x")
    dot = _eqn(traced.jaxpr, "dot_general")
    file, line, function = jaxcompat.user_frame(dot) or ("", 0, "")
    assert file == __file__ and function.endswith(".f") and line == inspect.getsourcelines(f)[1] + 1


def test_compute_on_is_found_whichever_form() -> None:
    from jax.experimental.compute_on import compute_on

    def update(w: Any) -> Any:
        return w * 2

    if "out_memory_spaces" in inspect.signature(compute_on).parameters:  # jax 0.12: a primitive
        host = compute_on(jax.jit(update), compute_type="device_host", out_memory_spaces=jax.memory.Space.Device)
    else:  # 0.9 to 0.11: the inner jit's context
        host = compute_on("device_host")(jax.jit(update))
    jaxpr = jax.make_jaxpr(host)(jnp.ones(4))
    found = [jaxcompat.is_compute_on(e) for e in jaxpr.jaxpr.eqns]
    assert found == ["device_host"]
