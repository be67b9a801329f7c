"""The HloProto reader against the text parser on compiles printed both ways.

JAX training steps as users write them, compiled by jaxlib: ``as_serialized_hlo_module_proto()`` read
by hloscope.hlo.hloproto and ``to_string()`` read by the text parser must give the same
computations, instructions (opcodes as written, sugared async ops included), shapes (layouts
included), operands, called computations, attributes, metadata and schedule order. One step on the
CPU (a scanned tanh MLP: a while loop), one deviceless for 8 H100s with FSDP-sharded weights (async
all-gather, all-to-all and reduce-scatter with mesh-axis replica groups).
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.xla

KEYS = ("index", "dimensions", "slice", "channel_id", "replica_groups", "custom_call_target", "kind", "calls",
        "to_apply", "condition", "body", "iota_dimension", "direction", "dynamic_slice_sizes",
        "lhs_contracting_dims", "rhs_contracting_dims", "use_global_device_ids", "source_target_pairs",
        "async_execution_thread", "control-predecessors")


def assert_same_model(proto: bytes, text: str) -> None:
    from hloscope.hlo.hloproto import parse_hlo_proto
    from hloscope.hlo.parser import parse_hlo

    from_proto = parse_hlo_proto(proto, "proto")
    from_text = parse_hlo(text, "text")
    from_proto.self_check()
    assert from_proto.is_scheduled and from_text.is_scheduled
    assert set(from_proto.computations) == set(from_text.computations)
    assert from_proto.entry_name == from_text.entry_name
    for name, comp in from_text.computations.items():
        other = from_proto.computations[name]
        assert [i.name for i in other.instructions] == [i.name for i in comp.instructions], name  # schedule
        for a in comp.instructions:
            b = other.by_name[a.name]
            assert (b.opcode, b.text_opcode, b.wrapped_opcode, b.shape, b.operands, b.called_computations,
                    b.is_root) == (a.opcode, a.text_opcode, a.wrapped_opcode, a.shape, a.operands,
                                   a.called_computations, a.is_root), a.name
            for k in KEYS:
                assert b.attrs.get(k, "").replace(" ", "") == a.attrs.get(k, "").replace(" ", ""), (a.name, k)
            assert b.metadata == a.metadata, a.name
            assert b.backend_config == a.backend_config, a.name
            if a.opcode == "parameter":
                assert b.literal == a.literal


def test_proto_and_text_give_one_model() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

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
    assert "while(" in hm.to_string()  # the scan is a loop
    assert_same_model(hm.as_serialized_hlo_module_proto(), hm.to_string())


def test_deviceless_fsdp_step_gives_one_model() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from hloscope.compile.step.deviceless import StepOptions, compile_step, make_mesh
    from hloscope.request import CompileRequest

    mesh = make_mesh("h100-sxm", 8)

    def step(w1, w2, x):  # type: ignore[no-untyped-def]
        def loss(w1, w2):  # type: ignore[no-untyped-def]
            return jnp.mean(jnp.tanh(jnp.tanh(x @ w1) @ w2) ** 2)

        g1, g2 = jax.grad(loss, argnums=(0, 1))(w1, w2)
        return w1 - 0.1 * g1, w2 - 0.1 * g2

    fsdp = NamedSharding(mesh, P("fsdp", None))
    args = [jax.ShapeDtypeStruct(s, jnp.bfloat16, sharding=fsdp) for s in ((1024, 1024), (1024, 1024), (64, 1024))]
    request = CompileRequest("h100-sxm", 8, fn="tests.xla.test_hloproto_vs_text:step")
    result = compile_step(request, step, args, StepOptions(mesh=mesh))
    hm = result.compiled.runtime_executable().hlo_modules()[0]
    text = hm.to_string()
    assert "reduce-scatter-start(" in text and "all-gather-start(" in text and "replica_groups=mesh[" in text
    assert_same_model(hm.as_serialized_hlo_module_proto(), text)
