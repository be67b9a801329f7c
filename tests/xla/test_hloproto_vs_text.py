"""The HloProto reader against the text parser on one compile printed both ways.

A JAX training step as users write it (a scanned tanh MLP, its gradient, an SGD update), compiled by
jaxlib: ``as_serialized_hlo_module_proto()`` read by hloscope.hlo.hloproto and ``to_string()`` read by
the text parser must give the same computations, instructions, shapes (layouts included),
operands, called computations, attributes and schedule order.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.xla

KEYS = ("index", "dimensions", "slice", "channel_id", "replica_groups", "custom_call_target", "kind", "calls",
        "to_apply", "condition", "body", "iota_dimension", "direction", "dynamic_slice_sizes",
        "lhs_contracting_dims", "rhs_contracting_dims")


def test_proto_and_text_give_one_model() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from hloscope.hlo.hloproto import parse_hlo_proto
    from hloscope.hlo.parser import parse_hlo

    def step(w, x):  # type: ignore[no-untyped-def]
        def loss(w):  # type: ignore[no-untyped-def]
            h = jnp.tanh(x @ w[0])

            def body(c, wi):  # type: ignore[no-untyped-def]
                return jnp.tanh(c @ wi), None

            h, _ = jax.lax.scan(body, h, w[1:])
            return jnp.mean(h**2)

        return w - 0.1 * jax.grad(loss)(w)

    compiled = jax.jit(step).lower(jnp.ones((3, 64, 64)), jnp.ones((8, 64))).compile()
    hm = compiled.runtime_executable().hlo_modules()[0]
    from_proto = parse_hlo_proto(hm.as_serialized_hlo_module_proto(), "proto")
    from_text = parse_hlo(hm.to_string(), "text")
    from_proto.self_check()
    assert from_proto.is_scheduled and from_text.is_scheduled
    assert set(from_proto.computations) == set(from_text.computations)
    assert from_proto.entry_name == from_text.entry_name
    assert any(i.opcode == "while" for i in from_text.entry.instructions)  # the scan is a loop
    for name, comp in from_text.computations.items():
        other = from_proto.computations[name]
        assert [i.name for i in other.instructions] == [i.name for i in comp.instructions], name  # schedule
        for a in comp.instructions:
            b = other.by_name[a.name]
            assert (b.opcode, b.shape, b.operands, b.called_computations, b.is_root) == \
                (a.opcode, a.shape, a.operands, a.called_computations, a.is_root), a.name
            for k in KEYS:
                assert b.attrs.get(k, "").replace(" ", "") == a.attrs.get(k, "").replace(" ", ""), (a.name, k)
            assert b.metadata.get("op_name") == a.metadata.get("op_name"), a.name
            assert b.backend_config == a.backend_config, a.name
            if a.opcode == "parameter":
                assert b.literal == a.literal
