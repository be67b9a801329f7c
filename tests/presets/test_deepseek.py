"""The DeepSeek-V3 workload as MaxText runs it, small enough to compile in seconds.

Every fact asserted here was read in the optimized HLO of these compiles (jaxlib 0.10.2,
h100-sxm, 8 devices, per-device batch 1): the default ``deepseek`` config has 3 layers (1
dense, 2 MoE scanned), dim 256, 4 heads, q_lora_rank 128, kv_lora_rank 64, 8 experts, top 2,
moe_ffn 128, seq 128.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest

from hloscope.compile.workloads import resolve
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError

pytestmark = pytest.mark.xla

#: a host buffer (memory space 5) of bf16: its dims
HOST = re.compile(r"bf16\[([0-9,]+)\]\{[0-9,]+:S\(5\)\}")


@functools.cache
def _compile(target: str = "h100-sxm", devices: int = 8, **sets: str) -> Any:
    from hloscope.compile import workloads
    from hloscope.compile.step.deviceless import StepOptions, compile_step, make_mesh
    from hloscope.request import CompileRequest, xla_flag_texts

    wl, cfg = resolve("deepseek", dict(sets))
    mesh = make_mesh(target, devices, workloads.mesh_axes(cfg, devices))
    fn, args = wl.build(cfg, mesh)
    request = CompileRequest(target, devices, workload="deepseek",
                             xla_flags=tuple(xla_flag_texts(workloads.xla_flags(cfg))))
    return compile_step(request, fn, args, StepOptions(mesh=mesh, donate_argnums=(0, 1, 2)))


def _host_shapes(text: str) -> set[tuple[int, ...]]:
    return {tuple(int(d) for d in m.group(1).split(",")) for m in HOST.finditer(text)}


def test_offloaded_tensors_are_maxtexts_names_and_shapes() -> None:
    result = _compile()
    shapes = _host_shapes(result.optimized_hlo)
    # per device: mla_q = q_norm(wq_a(x)) [1,128,128], mla_kv = the latent [1,128,64] (the
    # dense layer's, unscanned, and the 2 MoE layers' stacks), moe_mlpwi_0/1 = [b*S*K, moe_ffn]
    # = [256,128] per layer, stacked [2,256,128]. Not the full q [1,128,4,48] of the old preset.
    assert shapes == {(1, 128, 128), (1, 128, 64), (2, 1, 128, 128), (2, 1, 128, 64), (2, 256, 128)}
    named = {t.name for t in result.tensor_names}
    assert {"mla_q", "mla_kv", "out_proj", "moe_mlpwi_0", "moe_mlpwi_1", "moe_mlpwo"} <= named


def test_remat_full_keeps_nothing_on_the_host() -> None:
    text = _compile(policy="remat").optimized_hlo
    assert not _host_shapes(text) and "copy-start(" not in text


def test_a_switch_moves_a_tensor_between_host_and_device() -> None:
    # MaxText's custom policy: mla_q on device, moe_mlpwo offloaded as well
    shapes = _host_shapes(_compile(mla_q="device", moe_mlpwo="offload").optimized_hlo)
    assert (1, 128, 128) not in shapes and (2, 1, 128, 128) not in shapes  # mla_q stays in HBM
    assert (2, 256, 256) in shapes  # moe_mlpwo [b*S*K, dim] per layer, on the host


def test_ragged_dot_is_expanded_into_dense_dots_over_the_groups() -> None:
    text = _compile(moe_impl="ragged").optimized_hlo
    assert "ragged-dot(" not in text  # XLA's RaggedDotRewriter left no ragged dot
    # the device's 256 sorted copies masked once per expert: a [M, G, D] = [256,8,256] copy feeds
    # one dense matmul over all 8 groups (8 x the FLOPs of the real grouped matmul)
    assert re.search(r"\) -> bf16\[256,8,256\] \{", text)
    assert re.search(r'dot\([^\n]*op_name="[^"]*jvp\(\)/while/body/closed_call/shard_map/ragged_dot_general"', text)


def test_expert_parallelism_sends_the_sorted_copies_by_all_to_all() -> None:
    result = _compile(ep="2")
    assert "expert" in str(result.mesh_shape), result.mesh_shape
    # each device sends its b*S*K = 256 copies as 2 blocks of 128 rows of dim 256, forward and back
    # (async: all-to-all-done of bf16[2,1,128,256] over pairs of GPUs {0,1},{2,3},...)
    a2a = re.findall(r"= (\S+) all-to-all-done\([^\n]*op_name=\"([^\"]*)\"", result.optimized_hlo)
    moe = [shape for shape, name in a2a if name.endswith("shard_map/all_to_all")]
    assert len(moe) >= 4 and all(t.startswith("bf16[2,1,128,256]") for t in moe), a2a
    assert "replica_groups={{0,1},{2,3},{4,5},{6,7}}" in result.optimized_hlo


def test_flash_attention_is_a_triton_custom_call_on_hopper_and_blackwell() -> None:
    for target, devices in (("h100-sxm", 8), ("gb200", 4)):
        text = _compile(target, devices, attention="flash", layers="2").optimized_hlo
        calls = re.findall(r'custom_call_target="([^"]+)"[^\n]*?name = "([a-z_]+)"', text)
        assert {name for t, name in calls if t == "__gpu$xla.gpu.triton"} == {
            "mha_forward", "mha_preprocess_backward", "mha_backward"}, target


@pytest.mark.parametrize(("sets", "words"), [
    ({"mla_q": "host"}, "mla_q=host must be one of remat, device, offload"),
    ({"moe_impl": "dense"}, "moe_impl=dense must be one of sorted, ragged"),
    ({"attention": "cudnn"}, "attention=cudnn must be one of chunked, flash"),
    ({"experts": "6"}, "must be a multiple of experts=6"),
    ({"ep": "3"}, "experts=8 must be a multiple of ep=3"),
    ({"ep": "2", "moe_impl": "ragged"}, "ep=1 only"),
])
def test_bad_settings_are_one_line_exit_2(sets: dict[str, str], words: str) -> None:
    with pytest.raises(HloscopeError) as e:
        resolve("deepseek", sets)
    assert words in str(e.value) and "\n" not in str(e.value)
    assert e.value.exit_code == EXIT_BAD_INPUT


def test_two_layers_one_name_per_transfer_decided_by_data_flow() -> None:
    """``--set layers=2``: the dense layer and one MoE layer, both in the entry (no scan). Read by hand in
    this compile's optimized HLO: XLA merges wq_a and wkv_a into one gemm per layer, so mla_q and
    mla_kv come out of one dot; each is then normalised by its own rms_norm fusion, which reads the
    layer's ``q_norm`` or ``kv_norm`` weight and whose stack frames are common.py:125 (rms_norm) called
    from deepseek.py:204 (mla_q) or :208 (mla_kv). moe_mlpwi_0/1 are the two halves of one merged
    gemm: columns 0:128 multiply ``e_gate`` (stack frame deepseek.py:239), 128:256 ``e_up`` (:240).
    """
    from hloscope.analysis.intent.model import AskKind
    from hloscope.analysis.kinds import Direction, NameBasis
    from hloscope.compile.run.jobs import analyze_result

    result = _compile(layers="2")
    report = analyze_result(result, "h100-sxm")
    to_host = {t.instruction.name: t for t in report.transfers if t.direction is Direction.TO_HOST}
    text = result.optimized_hlo

    def operand(start: str) -> str:
        return re.search(rf"%{re.escape(start)} = [^\n]* copy-start\(%([\w.\-]+)\)", text).group(1)  # type: ignore[union-attr]

    def norm_weight(value: str) -> str:
        """The norm weight the rms_norm fusion behind ``value`` reads (through one bitcast)."""
        line = re.search(rf"%{re.escape(value)} = [^\n]*", text).group(0)  # type: ignore[union-attr]
        if " bitcast(" in line:
            return norm_weight(line.split("bitcast(%", 1)[1].split(")", 1)[0])
        params = re.findall(r"%(param\.\d+)", line.split(" fusion(", 1)[1].split("), kind", 1)[0])
        ops = [re.search(rf"%{p} = [^\n]*op_name=\"([^\"]+)\"", text).group(1) for p in params]  # type: ignore[union-attr]
        return next(o for o in ops if "norm" in o)

    # mla_q / mla_kv: by the norm weight each offloaded value was normalised with
    for name, t in to_host.items():
        if t.checkpoint_name in ("mla_q", "mla_kv"):
            weight = norm_weight(operand(name))
            assert ("q_norm" if t.checkpoint_name == "mla_q" else "kv_norm") in weight, (name, weight)
    assert sorted(t.checkpoint_name or "" for t in to_host.values()) == [
        "mla_kv", "mla_kv", "mla_q", "mla_q", "moe_mlpwi_0", "moe_mlpwi_1"]
    # the two MoE up-projections: the half of the merged gemm whose slice starts at column 0 is e_gate's
    for t in to_host.values():
        if t.checkpoint_name in ("moe_mlpwi_0", "moe_mlpwi_1"):
            fusion = operand(t.instruction.name)
            while " bitcast(" in (line := re.search(rf"%{re.escape(fusion)} = [^\n]*", text).group(0)):  # type: ignore[union-attr]
                fusion = line.split("bitcast(%", 1)[1].split(")", 1)[0]
            body = line.split("calls=%", 1)[1].split(",", 1)[0]
            block = text[text.index(f"%{body} ("):]
            first = re.search(r"slice=\{\[0:\d+\], \[(\d+):", block[:block.index("\n}")]).group(1)  # type: ignore[union-attr]
            assert (first == "0") == (t.checkpoint_name == "moe_mlpwi_0"), (t.instruction.name, first)
    assert {t.name_basis for t in report.transfers} == {NameBasis.DATA_FLOW}
    # The accounting lists exactly the transfers named after each request: 12, none twice, none elsewhere
    account = report.intent
    assert account is not None and {a.asked.kind for a in account.items} == {AskKind.OFFLOAD_NAME}
    listed = [v.transfer for a in account.items for v in a.transfers]
    assert len(listed) == len({id(t) for t in listed}) == len(report.transfers) == 12
    assert all(v.transfer.checkpoint_name == a.asked.what for a in account.items for v in a.transfers)
    assert {t.checkpoint_name for t in report.transfers} <= {a.asked.what for a in account.items}
