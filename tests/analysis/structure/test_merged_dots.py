"""Transfers of dots XLA merged are named by the part of the merged dot they take (jax 0.12 and 0.10).

XLA's DotMerger turns dots that share an operand into one dot over the others concatenated and
slices the result apart. From jax 0.12 every slice carries the first dot's source line, so naming
by frames gave all nine transfers of the llama step ``query_proj`` (issue 34). The modules are
real compiles (fixtures/generate_merged_dots.py: jax 0.12.0.1 and 0.10.2); the chains below were
read by hand in fixtures/merged_dots/llama_jax012/optimized.hlo.txt:

- ``dynamic-update-slice-start.1.0`` (region_0.5_spmd.clone) moves ``bitcast.113.0`` =
  ``loop_transpose_fusion.4(get-tuple-element.491)``, element 19 of the peeled loop's tuple, which
  main.27_spmd fills with ``bitcast.1281.0`` = ``input_transpose_fusion.6``, whose fused root
  transposes ``slice.40.1``, ``slice={[640:768], [0:256]}`` of ``loop_reduce_fusion.2``: the split-K
  sum of ``gemm_fusion_dot.118``, whose dot reads ``concatenate.16(param_1.25 [512,512],
  param_2.6 [512,128], param_3.1 [512,128]), dimensions={1}``: rows 640:768 are ``param_3.1`` =
  ``bitcast.724.0`` = element 3 of the combined ``all-gather.37`` = ``bitcast.129.0`` =
  ``wrapped_slice.2(%param.9)``, entry ``parameter(7)``, ``op_name="params['layers']['wk']"``: the
  weight of ``key_proj``. Every one of those slices carries ``stack_frame_id=37``, the query line.
- In the same dot, rows 0:512 are ``params['layers']['wq']`` and 512:640 ``params['layers']['wv']``
  (``all-gather.37`` elements 1 and 2, ``wrapped_slice`` of ``param.10`` and ``wrapped_slice.1`` of
  ``param.8``): XLA concatenated them q, v, k, not in program order.

In ``shared_weight_jax012`` (``tests/compile/intent/steps.py``'s ``maxtext_switches``: ``x @ w``,
``sin(x) @ w``, ``cos(x) @ w``) the dot reads ``concatenate.3.1(param_0.83, sin.2.1, cos.2.1),
dimensions={0}`` and ``fused_add_slice`` slices rows 0:32, 32:64, 64:96, all three with the query
line's ``stack_frame_id=15``: ``cos.2.1`` (the value's line) names rows 64:96; rows 0:32 are the
layer's input, computed at no name's line, and take the one name left, ``query_proj``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hloscope.analysis.intent.naming import find_named_transfers
from hloscope.analysis.kinds import Direction, NameBasis
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.name_records import name_records
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.hlo.parser import parse_hlo

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "merged_dots"

#: transfer -> checkpoint name, read by hand in the jax 0.12 llama module (module docstring).
LLAMA_012 = {
    "dynamic-update-slice-start.6": "query_proj", "dynamic-update-slice-start.1.0": "key_proj",
    "dynamic-update-slice-start.2.0": "value_proj", "dynamic-update-slice-start.3.0": "query_proj",
    "dynamic-update-slice-start.4.0": "key_proj", "dynamic-update-slice-start.5.0": "value_proj",
    "dynamic-slice-start.3": "query_proj", "dynamic-slice-start.1.0": "key_proj",
    "dynamic-slice-start.2.0": "value_proj",
}
SHARED_WEIGHT_012 = {
    "dynamic-update-slice-start.2.0": "query_proj", "dynamic-update-slice-start.4": "query_proj",
    "dynamic-update-slice-start.1.0": "value_proj", "dynamic-update-slice-start.3.0": "value_proj",
    "dynamic-slice-start.2": "query_proj", "dynamic-slice-start.1.0": "value_proj",
}


def _named(folder: str, strip: bool = False) -> tuple[list[HostTransfer], list[dict[str, Any]]]:
    module = parse_hlo((FIXTURES / folder / "optimized.hlo.txt").read_text())
    records = json.loads((FIXTURES / folder / "tensor_names.json").read_text())
    if strip:  # the records as hloscope read them before it read each name's dot
        records = [{k: v for k, v in r.items() if k not in ("weights", "inputs")} for r in records]
    return find_named_transfers(ModuleIndex(module), names=name_records(records)), records


def test_the_records_say_which_weight_each_projection_multiplies() -> None:
    _, records = _named("llama_jax012")
    assert {r["name"]: r["weights"] for r in records} == {
        "query_proj": ["params['layers']['wq']"], "key_proj": ["params['layers']['wk']"],
        "value_proj": ["params['layers']['wv']"]}
    _, shared = _named("shared_weight_jax012")
    inputs = {r["name"]: [i.rsplit(":", 1)[1] for i in r["inputs"]] for r in shared}
    lines = {r["name"]: str(r["producer_line"]) for r in shared}
    # sin(x) and cos(x) are computed on the key's and the value's lines; x in no equation of the layer
    assert inputs["query_proj"] == [] and inputs["key_proj"] == [lines["key_proj"]]
    assert inputs["value_proj"] == [lines["value_proj"]]


@pytest.mark.parametrize("folder", ["llama_jax012", "llama_jax010"])
def test_llama_transfers_are_named_by_the_weight_of_their_part(folder: str) -> None:
    transfers, records = _named(folder)
    line = {r["name"]: r["producer_line"] for r in records}
    got = {t.instruction.name: t.checkpoint_name for t in transfers}
    if folder == "llama_jax012":
        assert got == LLAMA_012
    assert Counter(got.values()) == {"query_proj": 3, "key_proj": 3, "value_proj": 3}
    for t in transfers:
        assert t.name_basis is NameBasis.DATA_FLOW and t.source is not None
        assert t.source.line == line[t.checkpoint_name], t.instruction.name  # each at its own line
        # 8 query heads, 2 key/value heads of 64 bf16 over 256 positions per device
        kib = 256 if t.checkpoint_name == "query_proj" else 64
        assert t.bytes == kib * 1024, t.instruction.name


def test_frames_alone_name_every_jax_0_12_llama_transfer_query() -> None:
    # What hloscope gave before it read the merged dots (issue 34): the slices' frames are the query's.
    transfers, _ = _named("llama_jax012", strip=True)
    assert {t.checkpoint_name for t in transfers} == {"query_proj"} and len(transfers) == 9
    # jax 0.10.2's XLA gave each slice its own dot's frame: the same names either way
    old, _ = _named("llama_jax010", strip=True)
    new, _ = _named("llama_jax010")
    assert [t.checkpoint_name for t in old] == [t.checkpoint_name for t in new]


@pytest.mark.parametrize("folder", ["shared_weight_jax012", "shared_weight_jax010"])
def test_dots_sharing_their_weight_are_named_by_their_input(folder: str) -> None:
    transfers, _ = _named(folder)
    got = {t.instruction.name: t.checkpoint_name for t in transfers}
    assert got == SHARED_WEIGHT_012  # the same instruction names and names on both versions
    to_host = [t for t in transfers if t.direction is Direction.TO_HOST]
    assert len(to_host) == 4
    stripped, _ = _named(folder, strip=True)
    if folder == "shared_weight_jax012":
        assert {t.checkpoint_name for t in stripped} == {"query_proj"}
