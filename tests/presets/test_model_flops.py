"""Model FLOPs per device as MaxText counts them, checked against the presets' own parameters.

MaxText's ``calculate_tflops_training_per_device`` is 3 x (2 FLOPs per weight-matmul parameter per
token), the token embedding counted once (the output projection), routed experts at top_k of
them, no recomputation, plus 3 x causal attention (half of QK^T and PV). Here the weight part is
re-derived from the abstract parameters the workload really builds (their shapes), not from the
config formula.
"""

from __future__ import annotations

import math

import pytest

from hloscope.compile.workloads import model_flops_per_device, resolve


def _matmul_params(name: str, sets: dict[str, str]) -> tuple[float, object]:
    """(parameters a token's matmuls touch, config), read from the built abstract params."""
    import jax

    from hloscope.compile.step.deviceless import make_mesh

    wl, cfg = resolve(name, sets)
    _, (params, _m, _v, _batch) = wl.build(cfg, make_mesh("h100-sxm", 8))
    total = 0.0
    for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
        key = jax.tree_util.keystr(path)
        if "norm" in key or "embed']" in key.replace("unembed", "") or "router_bias" in key:
            continue  # norms and biases are not matmuls; the token lookup is not a matmul
        n = math.prod(leaf.shape)
        if "'e_" in key:  # routed experts: a token passes top_k of them
            n = n * cfg.top_k / cfg.experts
        total += n
    return total, cfg


@pytest.mark.xla
def test_llama_405b_counts_as_maxtext() -> None:
    params, cfg = _matmul_params("llama3-405b", {})
    tokens = 2 * 8192
    # 405B parameters of which the 126 layers' matmuls and one 16384 x 128256 projection are matmuls.
    assert 404e9 < params + 128256 * 16384 < 407e9
    attention = 3 * 126 * (4 * tokens * 8192 * 128 * 128 / 2)
    expected = 6 * params * tokens + attention
    assert model_flops_per_device(cfg) == pytest.approx(expected, rel=1e-12)
    assert model_flops_per_device(cfg) == pytest.approx(4.1352e16, rel=1e-4)


@pytest.mark.xla
def test_deepseek_v3_counts_as_maxtext() -> None:
    params, cfg = _matmul_params("deepseek-v3-671b", {"batch": "8"})
    tokens = 8 * 4096
    # activated parameters: about 37B, as DeepSeek-V3 reports (of which 0.93B the output projection)
    assert 36e9 < params < 38e9
    attention = 3 * 61 * (2 * tokens * 4096 * 128 * (192 + 128) / 2)
    assert model_flops_per_device(cfg) == pytest.approx(6 * params * tokens + attention, rel=1e-12)


def test_every_transformer_preset_has_a_count_and_mlp_none() -> None:
    for name in ("llama-tiny", "llama3-405b-fp8", "deepseek-tiny", "deepseek-v3-671b-flash"):
        flops = model_flops_per_device(resolve(name)[1])
        assert flops is not None and flops > 0
    assert model_flops_per_device(resolve("mlp-tiny")[1]) is None
    # linear in the per-device batch
    one = model_flops_per_device(resolve("deepseek-v3-671b")[1])
    eight = model_flops_per_device(resolve("deepseek-v3-671b", {"batch": "8"})[1])
    assert one is not None and eight == pytest.approx(8 * one)
