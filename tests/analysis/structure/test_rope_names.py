"""MaxText tags Q and K after RoPE, which computes both at one line: the callers of that line name them.

The module is a real compile (fixtures/maxtext_rope/README.md: ``hloscope compile --maxtext`` of
issue 34's tiny llama, jax 0.12.0.1, MaxText 0.2.5, 8 compile-only H100s). Read by hand in
fixtures/maxtext_rope/optimized.hlo.txt:

- In the scan body ``region_1.4_spmd.clone.clone``, ``dynamic-update-slice-start.6`` / ``.1.0`` /
  ``.2.0`` move ``bitcast.35.0`` / ``.36.0`` / ``.37.0`` <- ``copy.78`` / ``.79`` / ``.80`` <-
  ``get-tuple-element.751`` / ``.752`` / ``.753``, elements 19 / 20 / 21 of the loop state. The body's
  ``ROOT tuple.97`` fills them with ``bitcast.16.0`` <- ``input_concatenate_fusion.3``,
  ``bitcast.21.0`` <- ``input_concatenate_fusion.2`` and ``bitcast.22.0`` <- ``wrapped_slice.1``.
- ``input_concatenate_fusion.3`` (``fused_concatenate.3``) and ``.2`` are RoPE: ``ROOT add.495.1`` /
  ``add.496.1`` = ``x * cos + concatenate(-x2, x1) * sin``, with ``stack_frame_id=175`` / ``174``:
  both ``maxtext/layers/embeddings.py:265`` (``apply_rotary``), called through ``embeddings.py:302``
  and ``attentions.py:1050`` from ``attentions.py:1289`` (``query = self.apply_rotary_embedding(...)``)
  for 175 and ``attentions.py:1291`` (``key = ...``) for 174.
- The dot agrees: both fusions read ``gemm_fusion_dot.88`` (``bf16[512,768]``), one dot over
  ``concatenate.69(param_1.1, param_2, param_3)``, the ``all-gather-done.2`` elements 0, 1, 2 of the
  entry's ``param.11`` (``state['model']['decoder']['layers']['self_attention']['query']['kernel']``),
  ``param.13`` (``...['key']...``) and ``param.14`` (``...['value']...``). ``fused_concatenate.3``
  slices columns ``[0:256]`` (the query kernel's), ``fused_concatenate.2`` ``[256:512]`` (the key's),
  and ``wrapped_slice.1`` ``[512:768]`` (the value's): Q at 1289, K at 1291, V un-rotated.
- In the entry ``main.68_spmd`` (the peeled last layer), ``dynamic-update-slice-start.3.0`` / ``.4.0`` /
  ``.5.0`` move elements 19 / 20 / 21 of ``while.45``'s result: Q, K, V again.

The records (``tensor_names.json``) give ``query_proj`` and ``key_proj`` one producer line,
``embeddings.py:265``, and callers that differ at ``attentions.py:1289`` / ``:1291``. Q, K and V are
all ``bf16[1,1,512,4,64]``: bytes cannot tell them apart.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hloscope.analysis.intent.naming import find_named_transfers
from hloscope.analysis.kinds import Direction, NameBasis
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.name_records import name_records
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.hlo.parser import parse_hlo

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "maxtext_rope"

#: transfer -> checkpoint name, read by hand (module docstring); reloads read the buffers those wrote.
BY_HAND = {
    "dynamic-update-slice-start.6": "query_proj", "dynamic-update-slice-start.1.0": "key_proj",
    "dynamic-update-slice-start.2.0": "value_proj", "dynamic-update-slice-start.3.0": "query_proj",
    "dynamic-update-slice-start.4.0": "key_proj", "dynamic-update-slice-start.5.0": "value_proj",
    "dynamic-slice-start.6": "query_proj", "dynamic-slice-start.1.0": "key_proj",
    "dynamic-slice-start.2.0": "value_proj", "dynamic-slice-start.3.0": "query_proj",
    "dynamic-slice-start.4.0": "key_proj", "dynamic-slice-start.5.0": "value_proj",
}


def _records(drop: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    records = json.loads((FIXTURE / "tensor_names.json").read_text())
    return [{k: v for k, v in r.items() if k not in drop} for r in records]


def _named(records: list[dict[str, Any]]) -> list[HostTransfer]:
    module = parse_hlo((FIXTURE / "optimized.hlo.txt").read_text())
    return find_named_transfers(ModuleIndex(module), names=name_records(records))


def test_the_records_share_the_rope_line_and_differ_in_its_caller() -> None:
    by = {r["name"]: r for r in _records()}
    q, k = by["query_proj"], by["key_proj"]
    assert q["producer_file"].endswith("maxtext/layers/embeddings.py") and q["producer_line"] == 265
    assert (k["producer_file"], k["producer_line"]) == (q["producer_file"], q["producer_line"])
    assert q["weights"] == [] == k["weights"]  # the producer is RoPE's add, not a dot
    short = {n: [c.rsplit("/", 1)[1] for c in by[n]["producer_callers"][:3]] for n in ("query_proj", "key_proj")}
    assert short == {"query_proj": ["embeddings.py:302", "attentions.py:1050", "attentions.py:1289"],
                     "key_proj": ["embeddings.py:302", "attentions.py:1050", "attentions.py:1291"]}


def test_every_transfer_is_named_by_data_flow_q_and_k_by_their_rope_caller() -> None:
    transfers = _named(_records())
    assert {t.instruction.name: t.checkpoint_name for t in transfers} == BY_HAND
    assert Counter(t.direction for t in transfers) == {Direction.TO_HOST: 6, Direction.TO_DEVICE: 6}
    assert {t.bytes for t in transfers} == {512 * 4 * 64 * 2}
    for t in transfers:
        want = NameBasis.DATA_FLOW if t.checkpoint_name == "value_proj" else NameBasis.CALLERS
        assert t.name_basis is want and not t.name_guessed, t.instruction.name
        assert t.source is not None
        # the line of the op that computed the moved value: RoPE's for Q and K, the V dot's for V
        assert (t.source.file.rsplit("/", 1)[1], t.source.line) == (
            ("linears.py", 162) if t.checkpoint_name == "value_proj" else ("embeddings.py", 265))


def test_without_the_callers_q_and_k_have_no_name() -> None:
    # Records made before hloscope read the callers: the RoPE line is both names', so data flow
    # stops there unnamed (hloscope then guessed by bytes: query_proj? for all four Q/K offloads).
    transfers = _named(_records(drop=("callers", "producer_callers")))
    got = {t.instruction.name: t.checkpoint_name for t in transfers}
    assert got == {n: (v if v == "value_proj" else None) for n, v in BY_HAND.items()}


def test_callers_that_agree_as_far_as_the_frames_go_decide_nothing() -> None:
    # Give K the query's callers: the frames agree with both names equally, so neither is given.
    records = _records()
    by = {r["name"]: r for r in records}
    by["key_proj"]["producer_callers"] = list(by["query_proj"]["producer_callers"])
    transfers = _named(records)
    assert {t.checkpoint_name for t in transfers} == {"value_proj", None}


@pytest.mark.parametrize("depth", [2, 3])
def test_callers_decide_at_the_first_frame_that_differs(depth: int) -> None:
    # Only the frames down to the first that tells Q from K are needed (attentions.py:1289 / :1291 is
    # the third caller); fewer recorded callers decide nothing.
    records = _records()
    for r in records:
        r["producer_callers"] = r.get("producer_callers", [])[:depth]
    got = {t.checkpoint_name for t in _named(records)}
    assert got == ({"query_proj", "key_proj", "value_proj"} if depth == 3 else {"value_proj", None})


def _rotate(x: Any) -> Any:
    import jax.numpy as jnp

    return x * jnp.cos(x) + jnp.flip(x, -1) * jnp.sin(x)  # one line computes every rotated value


def _attention(x: Any, wq: Any, wk: Any) -> Any:
    from jax.ad_checkpoint import checkpoint_name

    q = _rotate(x @ wq)
    k = _rotate(x @ wk)
    return checkpoint_name(q, "query_proj") * checkpoint_name(k, "key_proj")


def test_the_jaxpr_records_the_callers_of_a_line_two_names_share() -> None:
    # On the installed jax: MaxText's pattern (a helper rotates Q and K at one line, the caller tags
    # them after it) gives both records one producer line and producer callers that differ.
    import inspect

    jax = pytest.importorskip("jax", reason="the compile extra")
    from hloscope.compile.seam.names import tensor_names

    x = jax.ShapeDtypeStruct((4, 8), "float32")
    jaxpr = jax.make_jaxpr(_attention)(x, jax.ShapeDtypeStruct((8, 8), "float32"),
                                       jax.ShapeDtypeStruct((8, 8), "float32"))
    by = {r.name: r for r in tensor_names(jaxpr)}
    lines, start = inspect.getsourcelines(_rotate)
    rope = start + next(i for i, t in enumerate(lines) if "one line" in t)
    lines, start = inspect.getsourcelines(_attention)
    call = {n: start + next(i for i, t in enumerate(lines) if t.strip().startswith(f"{n} = _rotate")) for n in "qk"}
    assert by["query_proj"].producer_line == rope == by["key_proj"].producer_line
    here = __file__.rsplit("/", 1)[1]
    assert by["query_proj"].producer_callers[0].endswith(f"{here}:{call['q']}")
    assert by["key_proj"].producer_callers[0].endswith(f"{here}:{call['k']}")
    # checkpoint_name's own callers: the frames below _attention (this test), the same for both
    assert by["query_proj"].callers == by["key_proj"].callers


def _rope_step(w: Any, x: Any) -> Any:
    """A scanned layer as MaxText writes attention: Q, K, V of one size, Q and K rotated by one helper
    line, then tagged; the policy offloads the three names."""
    import jax
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name

    policy = jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=[], names_which_can_be_offloaded=["query_proj", "key_proj", "value_proj"],
        offload_src="device", offload_dst="pinned_host")

    def layer(h: Any, wl: Any) -> tuple[Any, None]:
        q = _rotate(h @ wl[0])
        k = _rotate(jnp.sin(h) @ wl[1])
        v = jnp.cos(h) @ wl[2]
        q, k, v = checkpoint_name(q, "query_proj"), checkpoint_name(k, "key_proj"), checkpoint_name(v, "value_proj")
        return jnp.tanh(q * k + v) + h, None

    def loss(w: Any, x: Any) -> Any:
        y, _ = jax.lax.scan(jax.checkpoint(layer, policy=policy), x, w)
        return jnp.sum(y)

    return jax.grad(loss)(w, x)


@pytest.mark.xla
def test_a_compiled_rope_step_names_q_and_k_by_their_callers() -> None:
    # Compiled on the installed jax (0.10 and 0.12 in CI) for one compile-only H100: every transfer of
    # Q and K carries its own name, decided by the callers of the rotation line; none is a guess.
    # Read by hand in the jax 0.10.2 module: the loop body's dynamic-update-slice-start.6 moves loop
    # element 8, which the body fills with add.20.1.clone.1 of the multi-output fusion fused_add_reduce
    # (x * cos + rev(x) * sin over the split-K sum of the first dot), whose frames are _rotate's line
    # then layer's `q = _rotate(...)` line; .1.0 moves element 9, add.21.1.clone.1, called from the
    # `k = ...` line; the peeled layer's initial values (fused_add_reduce.1's adds) have the same callers.
    pytest.importorskip("jax", reason="the compile extra")
    import inspect

    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    import hloscope
    from hloscope.compile.step.deviceless import make_mesh

    mesh = make_mesh("h100-sxm", 1)
    rep = NamedSharding(mesh, P())
    args = (jax.ShapeDtypeStruct((4, 3, 128, 128), "float32", sharding=rep),
            jax.ShapeDtypeStruct((32, 128), "float32", sharding=rep))
    _, report = hloscope.compile_step(_rope_step, *args, target="h100-sxm", devices=1, mesh=mesh)
    assert report.transfers and not any(t.name_guessed for t in report.transfers)
    # each name moves its 4 layers' values to host and back (on jax 0.10.2 and 0.12.0.1: 3 offloads in
    # the loop body, 1 in the peeled last layer, 1 reload in the backward loop run 4 times)
    runs = Counter((t.checkpoint_name, t.name_basis, t.direction) for t in report.transfers for _ in range(t.executions))
    basis = {"query_proj": NameBasis.CALLERS, "key_proj": NameBasis.CALLERS, "value_proj": NameBasis.DATA_FLOW}
    assert runs == {(n, b, d): 4 for n, b in basis.items() for d in (Direction.TO_HOST, Direction.TO_DEVICE)}, runs
    lines, start = inspect.getsourcelines(_rotate)
    rope = start + next(i for i, t in enumerate(lines) if "one line" in t)
    for t in report.transfers:
        assert t.source is not None
        assert t.source.line == rope or t.checkpoint_name == "value_proj", t.instruction.name


def _gmm(x: Any, w: Any) -> Any:
    import jax.numpy as jnp

    return jnp.tanh(x @ w)  # one line computes both expert projections, as MaxText's gmm helper


def _moe_step(w: Any, x: Any) -> Any:
    """MaxText's MoE tagging: ``checkpoint_name(checkpoint_name(w0, "mlpwi_0"), "moe_mlpwi_0")``, ``w1``
    tagged once, both computed at ``_gmm``'s line; the policy offloads the two ``moe_`` names."""
    import jax
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name

    policy = jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=[], names_which_can_be_offloaded=["moe_mlpwi_0", "moe_mlpwi_1"],
        offload_src="device", offload_dst="pinned_host")

    def layer(h: Any, wl: Any) -> tuple[Any, None]:
        w0 = _gmm(h, wl[0])
        w0 = checkpoint_name(checkpoint_name(w0, "mlpwi_0"), "moe_mlpwi_0")
        w1 = _gmm(jnp.sin(h), wl[1])
        w1 = checkpoint_name(w1, "moe_mlpwi_1")
        return jnp.tanh(w0 * w1) + h, None

    def loss(w: Any, x: Any) -> Any:
        y, _ = jax.lax.scan(jax.checkpoint(layer, policy=policy), x, w)
        return jnp.sum(y)

    return jax.grad(loss)(w, x)


def test_a_name_of_a_name_is_one_value_with_the_inner_producer() -> None:
    import inspect

    jax = pytest.importorskip("jax", reason="the compile extra")
    from hloscope.compile.seam.names import tensor_names

    args = (jax.ShapeDtypeStruct((4, 2, 128, 128), "float32"), jax.ShapeDtypeStruct((32, 128), "float32"))
    by = {r.name: r for r in tensor_names(jax.make_jaxpr(_moe_step)(*args))}
    lines, start = inspect.getsourcelines(_gmm)
    gmm = start + next(i for i, t in enumerate(lines) if "one line" in t)
    assert {n: r.producer_line for n, r in by.items()} == {"mlpwi_0": gmm, "moe_mlpwi_0": gmm, "moe_mlpwi_1": gmm}
    assert by["moe_mlpwi_0"].same_value == ("mlpwi_0",) and by["mlpwi_0"].same_value == ("moe_mlpwi_0",)
    assert by["moe_mlpwi_1"].same_value == ()
    assert by["moe_mlpwi_0"].producer_callers == by["mlpwi_0"].producer_callers
    assert by["moe_mlpwi_0"].producer_callers[0] != by["moe_mlpwi_1"].producer_callers[0]


@pytest.mark.xla
def test_a_compiled_moe_step_names_each_offload_by_its_requested_name() -> None:
    # Compiled on the installed jax for one compile-only H100: w0's offloads move the value tagged
    # mlpwi_0 and moe_mlpwi_0 (the request's), w1's moe_mlpwi_1; both computed at _gmm's line, told
    # apart by its callers. Before same_value, w0's were 'mlpwi_0', which no request offloads.
    pytest.importorskip("jax", reason="the compile extra")
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    import hloscope
    from hloscope.compile.step.deviceless import make_mesh

    mesh = make_mesh("h100-sxm", 1)
    rep = NamedSharding(mesh, P())
    args = (jax.ShapeDtypeStruct((4, 2, 128, 128), "float32", sharding=rep),
            jax.ShapeDtypeStruct((32, 128), "float32", sharding=rep))
    result, report = hloscope.compile_step(_moe_step, *args, target="h100-sxm", devices=1, mesh=mesh)
    runs = Counter((t.checkpoint_name, t.name_basis, t.direction) for t in report.transfers for _ in range(t.executions))
    assert runs == {(n, NameBasis.CALLERS, d): 4 for n in ("moe_mlpwi_0", "moe_mlpwi_1")
                    for d in (Direction.TO_HOST, Direction.TO_DEVICE)}, runs
    assert not any(t.unrequested_name for t in report.transfers)
    # Without same_value the two names of w0 tie at _gmm's line: w0's transfers get no name.
    from hloscope.analysis.structure.transfer_names import transfer_names
    from hloscope.analysis.structure.transfers import find_transfers

    index = ModuleIndex(parse_hlo(result.optimized_hlo))
    bare = [replace(r, same_value=()) for r in result.tensor_names]
    got = transfer_names(index, find_transfers(index), bare, {"moe_mlpwi_0", "moe_mlpwi_1"})
    assert Counter(n.checkpoint_name for n in got.values()) == {None: 3, "moe_mlpwi_1": 3}, got
