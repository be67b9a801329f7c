"""Training steps written as users write them, each asking for host offloads (issue 16).

Each function takes ``(mesh)`` and returns ``(step, args)``: ``step`` is the
function to compile, ``args`` its abstract arguments on ``mesh``. Shapes are tiny
(a compile takes seconds). The tests compile them with hloscope and assert what
the compiled HLO shows.
"""

from __future__ import annotations

import inspect
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

LAYERS, BATCH, WIDTH = 4, 32, 256


def offload(*names: str, save: tuple[str, ...] = ()) -> Any:
    return jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=list(save), names_which_can_be_offloaded=list(names),
        offload_src="device", offload_dst="pinned_host")


def _args(mesh: Any) -> tuple[Any, Any]:
    rep = NamedSharding(mesh, P())
    return (jax.ShapeDtypeStruct((LAYERS, WIDTH, WIDTH), jnp.float32, sharding=rep),
            jax.ShapeDtypeStruct((BATCH, WIDTH), jnp.float32, sharding=rep))


def _mlp_layer(x: Any, w: Any) -> tuple[Any, None]:
    h = checkpoint_name(jnp.tanh(x @ w), "mlp_hidden")
    return jnp.tanh(h @ w.T), None


def _scanned(policy: Any, layer: Any = _mlp_layer) -> Any:
    def step(w: Any, x: Any) -> Any:
        def loss(w: Any, x: Any) -> Any:
            y, _ = jax.lax.scan(jax.checkpoint(layer, policy=policy), x, w)
            return jnp.sum(y)
        return jax.grad(loss)(w, x)
    return step


def typo(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """The code tags "mlp_hidden"; the policy offloads "mlp_hiden"."""
    return _scanned(offload("mlp_hiden")), _args(mesh)


def typo_step(w: Any, x: Any) -> Any:
    """``typo`` as a plain function, for ``hloscope check --fn tests.compile.intent.steps:typo_step``."""
    return _scanned(offload("mlp_hiden"))(w, x)


def never_tagged(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """The policy offloads "hidden"; no checkpoint_name anywhere in the step."""
    def layer(x: Any, w: Any) -> tuple[Any, None]:
        return jnp.tanh(jnp.tanh(x @ w) @ w.T), None
    return _scanned(offload("hidden"), layer), _args(mesh)


def scan_carry(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """checkpoint_name on the value the scan body carries to the next layer (jax#23869)."""
    def layer(carry: Any, w: Any) -> tuple[Any, None]:
        carry = checkpoint_name(jnp.tanh(carry @ w), "residual_stream")
        return carry, None
    return _scanned(offload("residual_stream"), layer), _args(mesh)


def activation_offload(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """Activation offloading as in JAX's host-offloading guide: each layer's input is named
    and offloaded by the scanned, rematerialized layer."""
    def layer(x: Any, w: Any) -> tuple[Any, None]:
        x = checkpoint_name(x, "x")
        y = jnp.sin(x @ w)
        return y @ w.T, None
    return _scanned(offload("x"), layer), _args(mesh)


def maxtext_switches(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """MaxText-style per-tensor switches: each named tensor is 'offload', 'device' or 'remat'."""
    switches = {"query_proj": "offload", "key_proj": "device", "value_proj": "offload", "mlpwo": "remat"}
    policy = offload(*(n for n, s in switches.items() if s == "offload"),
                     save=tuple(n for n, s in switches.items() if s == "device"))

    def layer(x: Any, w: Any) -> tuple[Any, None]:
        q = checkpoint_name(x @ w, "query_proj")
        k = checkpoint_name(jnp.sin(x) @ w, "key_proj")
        v = checkpoint_name(jnp.cos(x) @ w, "value_proj")
        a = jnp.tanh(q * k + v)
        return checkpoint_name(jnp.tanh(a @ w.T), "mlpwo") + x, None
    return _scanned(policy, layer), (_args(mesh) if mesh is not None else ())


def my_policy(prim: Any, *args: Any, **params: Any) -> bool:
    """A user's own policy: save every dot."""
    return bool(prim.name == "dot_general")


def custom_policy(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    return _scanned(my_policy), _args(mesh)


def _host(mesh: Any) -> NamedSharding:
    return NamedSharding(mesh, P(), memory_kind="pinned_host")


def parameter_offload(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """Parameter offloading as in JAX's guide: the weights live in pinned host memory and the
    step brings them to the device."""
    device = NamedSharding(mesh, P(), memory_kind="device")

    def step(w_host: Any, x: Any) -> Any:
        w = jax.device_put(w_host, device)
        return jnp.sum(jnp.tanh(x @ w[0]))
    w, x = _args(mesh)
    return step, (jax.ShapeDtypeStruct(w.shape, w.dtype, sharding=_host(mesh)), x)


def optimizer_offload(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """Optimizer-state offloading as in JAX's guide: the momentum is kept in pinned host memory
    between steps (moved to the device for the update, back to host afterwards)."""
    device = NamedSharding(mesh, P(), memory_kind="device")

    def step(w: Any, mu_host: Any, x: Any) -> Any:
        g = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w[0])))(w)
        mu = 0.9 * jax.device_put(mu_host, device) + g
        return w - 0.01 * mu, jax.device_put(mu, _host(mesh))
    w, x = _args(mesh)
    return step, (w, jax.ShapeDtypeStruct(w.shape, w.dtype, sharding=_host(mesh)), x)


def space_host_offload(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """The optimizer-state pattern with ``jax.memory.Space``: the momentum is put in host memory."""
    def step(w: Any, x: Any) -> Any:
        g = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w[0])))(w)
        mu_host = jax.device_put(0.9 * g, jax.memory.Space.Host)
        return w - 0.01 * g, mu_host
    return step, _args(mesh)


def unused_host_put(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """A copy to host memory whose result the step never uses (a forgotten return)."""
    def step(w: Any, x: Any) -> Any:
        g = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w[0])))(w)
        jax.device_put(g, jax.memory.Space.Host)
        return w - 0.01 * g
    return step, _args(mesh)


def activation_step(w: Any, x: Any) -> Any:
    """``activation_offload``'s step as a plain function, for ``--fn tests.compile.intent.steps:activation_step``."""
    def layer(x: Any, w: Any) -> tuple[Any, None]:
        x = checkpoint_name(x, "x")
        return jnp.sin(x @ w) @ w.T, None
    return _scanned(offload("x"), layer)(w, x)


def never_tagged_step(w: Any, x: Any) -> Any:
    """``never_tagged`` as a plain function, for ``--fn``."""
    def layer(x: Any, w: Any) -> tuple[Any, None]:
        return jnp.tanh(jnp.tanh(x @ w) @ w.T), None
    return _scanned(offload("hidden"), layer)(w, x)


def scan_carry_step(w: Any, x: Any) -> Any:
    """``scan_carry`` as a plain function, for ``--fn``."""
    def layer(carry: Any, w: Any) -> tuple[Any, None]:
        carry = checkpoint_name(jnp.tanh(carry @ w), "residual_stream")
        return carry, None
    return _scanned(offload("residual_stream"), layer)(w, x)


def maxtext_step(w: Any, x: Any) -> Any:
    """``maxtext_switches`` as a plain function, for ``--fn``."""
    return maxtext_switches(None)[0](w, x)


def dots_offload(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """``offload_dot_with_no_batch_dims``: every dot without batch dimensions that the backward
    pass saves goes to host (no names)."""
    def layer(x: Any, w: Any) -> tuple[Any, None]:
        return jnp.tanh(x @ w), None
    return _scanned(jax.checkpoint_policies.offload_dot_with_no_batch_dims("device", "pinned_host"), layer), \
        _args(mesh)


def saved_on_device(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """The layer's policy saves "mlp_hidden" on the device; the head's policy asks to offload it."""
    def step(w: Any, x: Any) -> Any:
        def loss(w: Any, x: Any) -> Any:
            y, _ = jax.lax.scan(jax.checkpoint(_mlp_layer, policy=jax.checkpoint_policies.save_only_these_names(
                "mlp_hidden")), x, w)
            head = jax.checkpoint(lambda y: jnp.sin(checkpoint_name(jnp.tanh(y), "logits")),
                                  policy=offload("logits", "mlp_hidden"))
            return jnp.sum(head(y))
        return jax.grad(loss)(w, x)
    return step, _args(mesh)


def optimizer_out_shardings(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """Optimizer state put in host memory by the jitted step's ``out_shardings``, as JAX's guide
    writes it (the state comes in from host memory too)."""
    device, host = NamedSharding(mesh, P(), memory_kind="device"), _host(mesh)

    @partial(jax.jit, out_shardings=(device, host))
    def step(w: Any, mu_host: Any, x: Any) -> Any:
        g = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w[0])))(w)
        mu = 0.9 * jax.device_put(mu_host, device) + g
        return w - 0.01 * mu, mu
    w, x = _args(mesh)
    return step, (w, jax.ShapeDtypeStruct(w.shape, w.dtype, sharding=host), x)


def host_compute(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """The optimizer update run on the host with ``compute_on("device_host")``."""
    from jax.experimental.compute_on import compute_on

    def update_fn(w: Any, g: Any) -> Any:
        return w - 0.01 * g

    if "out_memory_spaces" in inspect.signature(compute_on).parameters:
        # jax 0.12: compute_on is a function transformation (a compute_on primitive), and says
        # where each result lives; jax 0.9 to 0.11: a context for the inner jit
        update = compute_on(jax.jit(update_fn), compute_type="device_host", out_memory_spaces=jax.memory.Space.Device)
    else:
        update = compute_on("device_host")(jax.jit(update_fn))

    def step(w: Any, x: Any) -> Any:
        g = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w[0])))(w)
        return update(w, g)
    return step, _args(mesh)


def round_trip(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """A value sent to host memory and brought back in the same step, with nothing between to
    keep the host copy apart (XLA folds the pair away)."""
    device, host = NamedSharding(mesh, P(), memory_kind="device"), _host(mesh)

    def step(w: Any, x: Any) -> Any:
        h = jax.device_put(jnp.sin(x), host)
        z = jnp.tanh(x @ w[0]) @ w[1]
        return z + jax.device_put(h, device)
    return step, _args(mesh)


def closure_policy(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """A user's policy built by a factory: it saves the names it closes over."""
    def save_these(*keep: str) -> Any:
        def policy(prim: Any, *_: Any, **params: Any) -> bool:
            return bool(prim.name == "name" and params["name"] in keep)
        return policy
    return _scanned(save_these("mlp_hidden", "attn_out")), _args(mesh)


def _offload_input(x: Any, w: Any) -> tuple[Any, None]:
    x = checkpoint_name(x, "x")
    return jnp.sin(x @ w) @ w.T, None


def layers_offload_step(w: Any, x: Any) -> Any:
    """Activation offloading with ``prevent_cse=False``, as MaxText's scanned layers use it (no
    optimization barrier around the rematerialized layer): the scan runs once per leading entry of
    ``w``. With one layer XLA inlines the loop and the offload goes with it (issue 34)."""
    def loss(w: Any, x: Any) -> Any:
        y, _ = jax.lax.scan(jax.checkpoint(_offload_input, policy=offload("x"), prevent_cse=False), x, w)
        return jnp.sum(y)
    return jax.grad(loss)(w, x)


def _layers(mesh: Any, layers: int) -> tuple[Any, Any]:
    rep = NamedSharding(mesh, P())
    return (jax.ShapeDtypeStruct((layers, WIDTH, WIDTH), jnp.float32, sharding=rep),
            jax.ShapeDtypeStruct((BATCH, WIDTH), jnp.float32, sharding=rep))


def scan_once(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """``layers_offload_step`` with one layer: the layer scan's while loop has trip count 1."""
    return layers_offload_step, _layers(mesh, 1)


def scan_twice(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """The same step with two layers: the loop stays and the offload with it."""
    return layers_offload_step, _layers(mesh, 2)


def round_trip_in_scan(mesh: Any) -> tuple[Any, tuple[Any, ...]]:
    """``round_trip`` inside a scan of one layer: the copy to host and back sit in the same loop
    body, so XLA folds them away however often the loop runs (not the loop that runs once)."""
    def step(w: Any, x: Any) -> Any:
        def body(x: Any, w: Any) -> tuple[Any, None]:
            h = jax.device_put(jnp.sin(x), jax.memory.Space.Host)
            return jnp.tanh(x @ w) + jax.device_put(h, jax.memory.Space.Device), None
        return jax.lax.scan(body, x, w)[0]
    return step, _layers(mesh, 1)


def _dense_layer(x: Any, w: Any) -> tuple[Any, None]:
    x = checkpoint_name(x, "x")
    return jnp.sin(x @ w) @ w.T, None


def _moe_layer(x: Any, w: Any) -> tuple[Any, None]:
    x = checkpoint_name(x, "x")
    return jnp.tanh(x @ w) @ w.T, None


def dense_then_moe_step(dense: Any, moe: Any, x: Any) -> Any:
    """DeepSeek-shaped, as MaxText builds it: a scan of dense layers, then a scan of MoE layers,
    both tagging (and offloading) the same name, with ``prevent_cse=False``. With 1 dense layer
    and 2 MoE layers (``f32[1,256,256]; f32[2,256,256]; f32[32,256]``) the dense scan's loops run
    once, and XLA removes them and their offload; the MoE scan's loops stay and offload."""
    layer = partial(jax.checkpoint, policy=offload("x"), prevent_cse=False)

    def loss(dense: Any, moe: Any, x: Any) -> Any:
        y, _ = jax.lax.scan(layer(_dense_layer), x, dense)
        y, _ = jax.lax.scan(layer(_moe_layer), y, moe)
        return jnp.sum(y)
    return jax.grad(loss, argnums=(0, 1))(dense, moe, x)
