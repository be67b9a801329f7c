"""MaxText's own train step compiled for compile-only TPU slices (``hloscope compile --maxtext --target tpu-*``).

Runs only where the maxtext extra and libtpu are installed (Python 3.12+: pip install 'hloscope[maxtext,tpu]').
MaxText's own TPU ahead-of-time path builds the slice (``compile_topology`` = the slice's MaxText name) and
its mesh. Read by hand in the optimized HLO of issue 34's tiny llama on ``tpu-v5e --devices 8`` (jax
0.12.0.1, libtpu 0.0.50, MaxText 0.2.5): three host stacks ``bf16[2,1,512,4,64]{...S(5)}`` (AllocateBuffer
custom calls, one each for Q, K and V), and per stack

- two ``dynamic-update-slice-start`` writes of a ``bf16[1,1,512,4,64]`` slice (262,144 B): layer 0 into
  slot 0 (index ``constant.152.clone`` = 0), then layer 1 into slot 1 (``constant.258.clone`` = 1) of the
  first write's result;
- one plain ``copy-start`` of layer 1's value to ``S(5)`` and its ``copy-start`` back;
- one ``dynamic-slice-start`` reload, at index ``constant.576`` = 0 (layer 0).

So 9 writes (2.25 MiB) go to host and 6 reads (1.5 MiB) come back: layer 1 is written twice, and its
slot-1 write is never read (the backward pass reads the copy). Q and K are RoPE's two outputs of one
multi-output fusion (``fusion.64`` / ``fusion.66``: element 0 is K, at ``attentions.py:1291``, element 1
is Q, at ``:1289``); XLA gives both ``get-tuple-element``s the fusion's metadata (element 0's frame), so
each is named by its element's own ops. V is a slice of the merged Q/K/V dot (``linears.py:162``).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.xla,
    pytest.mark.skipif(sys.version_info < (3, 12) or importlib.util.find_spec("maxtext") is None
                       or importlib.util.find_spec("libtpu") is None,
                       reason="needs MaxText and libtpu: pip install 'hloscope[maxtext,tpu]' (Python 3.12+)"),
]

TINY_LLAMA = ("base_emb_dim=256", "base_num_query_heads=4", "base_num_kv_heads=4", "base_mlp_dim=512",
              "base_num_decoder_layers=2", "head_dim=64", "vocab_size=1024", "per_device_batch_size=1",
              "max_target_length=512", "remat_policy=qkv_proj_offloaded")
SLICE_BYTES = 512 * 4 * 64 * 2
MIB = 1 << 20


def _constants(hlo: str) -> dict[str, str]:
    return dict(re.findall(r"%(constant[\w.]*) = s32\[\]\S* constant\((-?\d+)\)", hlo))


def _index(hlo: str, name: str, first_index_operand: int) -> str:
    """The literal of the first index operand of instruction ``name`` (all of them are constants here)."""
    line = re.search(rf"%{re.escape(name)} = .*", hlo)
    assert line is not None, name
    args = re.search(r"(?:dynamic-update-slice-start|dynamic-slice-start)\(([^)]*)\)", line.group(0))
    assert args is not None, name
    operands = [a.strip().split("%")[-1] for a in args.group(1).split(",")]
    return _constants(hlo)[operands[first_index_operand]]


def test_tiny_llama_on_a_v5e_slice(tmp_path: Path) -> None:
    import hloscope

    out = tmp_path / "mt"
    result, report = hloscope.compile_maxtext(*TINY_LLAMA, target="tpu-v5e", devices=8, out=out)
    # MaxText compiled for its own v5e-8 (v5e:2x4), the slice hloscope names
    manifest = json.loads((out / "manifest.json").read_text())
    assert {"hardware=tpu", "compile_topology=v5e-8", "compile_topology_num_slices=1"} <= set(
        manifest["maxtext"]["argv"])
    assert result.topology.startswith("v5e:2x4 ")
    hlo = result.optimized_hlo
    assert hlo.count('{4,2,3,1,0:T(8,128)(2,1)S(5)} custom-call(), custom_call_target="AllocateBuffer"') == 3
    to_host = [t for t in report.transfers if str(t.direction) == "to_host"]
    to_device = [t for t in report.transfers if str(t.direction) == "to_device"]
    assert {t.bytes for t in report.transfers} == {SLICE_BYTES} and all(t.executions == 1 for t in report.transfers)
    # 1.5 MiB come back per step; 2.25 MiB go out: layer 1 is written twice
    assert sum(t.bytes for t in to_device) == 6 * SLICE_BYTES == 3 * MIB // 2
    assert sum(t.bytes for t in to_host) == 9 * SLICE_BYTES
    ops = Counter((str(t.direction), t.instruction.text_opcode) for t in report.transfers)
    assert ops == {("to_host", "dynamic-update-slice-start"): 6, ("to_host", "copy-start"): 3,
                   ("to_device", "dynamic-slice-start"): 3, ("to_device", "copy-start"): 3}, ops
    writes = Counter(_index(hlo, t.instruction.name, 2) for t in to_host
                     if t.instruction.text_opcode == "dynamic-update-slice-start")
    assert writes == {"0": 3, "1": 3}
    assert {_index(hlo, t.instruction.name, 1) for t in to_device
            if t.instruction.text_opcode == "dynamic-slice-start"} == {"0"}  # slot 1 is never read
    # ... and the report says so, from the module hloscope compile wrote (compiled.as_text(), the sugared
    # printing of the async slices: issue 52): the three slot-1 writes, 768 KiB per step
    assert report.unread.unread_bytes == 3 * SLICE_BYTES == 768 * 1024
    assert {str(w.reason) for w in report.unread.writes} == {"slot_not_read"}
    # every transfer by its own name, by data flow (Q and K by RoPE's callers), none guessed by bytes
    names = Counter((t.checkpoint_name, str(t.direction)) for t in report.transfers)
    assert names == {(n, d): (3 if d == "to_host" else 2) for n in ("query_proj", "key_proj", "value_proj")
                     for d in ("to_host", "to_device")}, names
    assert not any(t.name_guessed for t in report.transfers)
    for t in report.transfers:
        assert t.source is not None and t.source.file.endswith(
            "maxtext/layers/linears.py" if t.checkpoint_name == "value_proj" else "maxtext/layers/embeddings.py")


def test_maxtexts_tpu_slices_are_hloscopes() -> None:
    # Every TPU slice MaxText's accelerator_to_spec_map names for one slice is the one hloscope builds for
    # the same name (--topology NAME): shape, chip config, chips per host and wrap-around.
    from hloscope.compile.tpu.maxtext_slice import check_maxtext_slice
    from hloscope.compile.tpu.slices import parse_slice
    from hloscope.targets import get_target

    spec_map = importlib.import_module("maxtext.utils.accelerator_to_spec_map")
    targets = {"v4": "tpu-v4", "v5e": "tpu-v5e", "v5p": "tpu-v5p", "v6e": "tpu-v6e"}
    checked = 0
    for name, spec in spec_map.UserFacingNameToSystemCharacteristics.items():
        gen = name.rsplit("-", 1)[0]
        if spec.platform != "tpu" or gen not in targets:
            continue
        found = parse_slice(name, get_target(targets[gen]))
        assert found.maxtext_name == name
        check_maxtext_slice(found, spec)
        checked += 1
    assert checked > 30


@pytest.mark.slow
def test_llama_405b_two_layers_on_a_v5p_slice(tmp_path: Path) -> None:
    # Llama 3.1 405B's shape, 2 layers, per device 2 x 8192, on 128 v5p chips (MaxText's v5p-256). Read by
    # hand (jax 0.12.0.1, libtpu 0.0.50): as in the tiny llama, per stack two writes (layer 0 at slot 0, layer
    # 1 at slot 1), one copy of layer 1 out and back, one reload at slot 0: Q 512 MiB (2 x 8192 x 16384
    # bf16), K and V 32 MiB (2 x 8192 x 8 x 128) each. 1,152 MiB come back per step; 1,728 MiB go out, 576
    # MiB of them (the slot-1 writes) never read. 101 s of compile, 120 s and 2.3 GB peak for the command.
    import hloscope

    result, report = hloscope.compile_maxtext(
        "model_name=llama3.1-405b", "override_model_config=True", "base_num_decoder_layers=2",
        "remat_policy=qkv_proj_offloaded", "per_device_batch_size=2", "max_target_length=8192",
        target="tpu-v5p", devices=128, out=tmp_path / "l405")
    to_host = [t for t in report.transfers if str(t.direction) == "to_host"]
    to_device = [t for t in report.transfers if str(t.direction) == "to_device"]
    assert sum(t.bytes for t in to_device) == 1152 * MIB
    assert sum(t.bytes for t in to_host) == 1728 * MIB
    hlo = result.optimized_hlo
    never_read = [t for t in to_host if t.instruction.text_opcode == "dynamic-update-slice-start"
                  and _index(hlo, t.instruction.name, 2) == "1"]
    assert sum(t.bytes for t in never_read) == 576 * MIB
    assert report.unread.unread_bytes == 576 * MIB  # found from compile's own printing (issue 52)
    assert {_index(hlo, t.instruction.name, 1) for t in to_device
            if t.instruction.text_opcode == "dynamic-slice-start"} == {"0"}
    got = Counter((t.checkpoint_name, t.bytes // MIB) for t in report.transfers)
    assert got == {("query_proj", 512): 5, ("key_proj", 32): 5, ("value_proj", 32): 5}, got
    assert not any(t.name_guessed for t in report.transfers)
