"""JAX's own checkpoint policies are read as what they are on every supported jax.

jax 0.10 builds three of them as class instances, jax 0.11 five as frozen dataclasses, jax 0.12
every one as a plain function or a closure; ``save_from_both_policies`` on 0.12 returns one side
itself when the other is ``nothing_saveable`` (docs/jax-versions.md). Each case reads the policy
object the installed jax builds, and the policy of a traced ``jax.checkpoint`` (the ``remat2``
equation's parameter), so the test runs against whichever jax is installed (CI: 0.9.2, 0.10.2,
0.12.0.1).
"""

from __future__ import annotations

from typing import Any

import pytest

from hloscope.analysis.intent.model import PolicyKind

pytestmark = pytest.mark.jax_version  # each JAX version builds its checkpoint policies differently

jax = pytest.importorskip("jax", reason="the compile extra")
cp = jax.checkpoint_policies


def _read(policy: Any) -> Any:
    from hloscope.compile.seam.intent import read_policy

    return read_policy(policy)


CASES = [
    (lambda: cp.save_only_these_names("b", "a"), PolicyKind.SAVE_ONLY, {"saved": ("a", "b")}),
    (lambda: cp.save_any_names_but_these("q", "k"), PolicyKind.SAVE_ANY_NAMES_BUT, {"excluded": ("k", "q")}),
    (lambda: cp.dots_saveable, PolicyKind.DOTS, {}),
    (lambda: cp.checkpoint_dots, PolicyKind.DOTS, {}),
    (lambda: cp.dots_with_no_batch_dims_saveable, PolicyKind.DOTS_NO_BATCH, {}),
    (lambda: cp.everything_saveable, PolicyKind.EVERYTHING, {}),
    (lambda: cp.nothing_saveable, PolicyKind.NOTHING, {}),
    (lambda: cp.save_anything_except_these_names("x"), PolicyKind.EVERYTHING, {}),
    (lambda: cp.save_and_offload_only_these_names(names_which_can_be_saved=["k"],
                                                  names_which_can_be_offloaded=["v", "q"],
                                                  offload_src="device", offload_dst="pinned_host"),
     PolicyKind.SAVE_AND_OFFLOAD, {"saved": ("k",), "offloaded": ("q", "v"), "offload_dst": "pinned_host"}),
    (lambda: cp.offload_dot_with_no_batch_dims("device", "pinned_host"), PolicyKind.OFFLOAD_DOTS,
     {"offload_src": "device", "offload_dst": "pinned_host"}),
]


@pytest.mark.parametrize(("make", "kind", "fields"), CASES,
                         ids=[c[1].value + str(i) for i, c in enumerate(CASES)])
def test_each_jax_policy_is_read(make: Any, kind: PolicyKind, fields: dict[str, Any]) -> None:
    policy = _read(make())
    assert policy.kind is kind and policy.inspectable, policy
    for key, value in fields.items():
        assert getattr(policy, key) == value


def test_both_policies() -> None:
    both = _read(cp.save_from_both_policies(cp.save_only_these_names("a"), cp.dots_saveable))
    assert both.kind is PolicyKind.BOTH
    assert [p.kind for p in both.parts] == [PolicyKind.SAVE_ONLY, PolicyKind.DOTS] and both.all_saved() == ("a",)
    # jax 0.12 returns the other side itself when one is nothing_saveable (0.10/0.11 combine them):
    # either way the names it saves are read
    one = _read(cp.save_from_both_policies(cp.nothing_saveable, cp.save_only_these_names("a")))
    assert one.all_saved() == ("a",) and one.inspectable


def test_a_users_function_is_not_inspectable() -> None:
    def mine(prim: Any, *_: Any, **__: Any) -> bool:
        return False

    policy = _read(mine)
    assert policy.kind is PolicyKind.CUSTOM and not policy.inspectable and "mine" in policy.callable


def test_the_policy_of_a_traced_checkpoint() -> None:
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name

    from hloscope.compile.seam.intent import read_intent

    def f(w: Any, x: Any) -> Any:
        def layer(x: Any) -> Any:
            return jnp.sum(jnp.tanh(checkpoint_name(x @ w, "h")))
        return jax.grad(jax.checkpoint(layer, policy=cp.save_only_these_names("h")))(x)

    traced = jax.jit(f).trace(jax.ShapeDtypeStruct((8, 8), jnp.float32), jax.ShapeDtypeStruct((4, 8), jnp.float32))
    [policy] = read_intent(traced).policies
    assert policy.kind is PolicyKind.SAVE_ONLY and policy.saved == ("h",) and policy.differentiated
