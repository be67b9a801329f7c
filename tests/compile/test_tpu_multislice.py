"""Multi-slice TPU compiles (``--slices``): slices of one shape joined over the data-center network (DCN).

``get_topology_desc(..., num_slices=2)`` gives two slices' compile-only devices (ids 100000+ and 200000+,
``slice_index`` 0 and 1); the built-in workloads lay a ``data`` axis across the slices and their own axes
inside one. Read by hand in the optimized HLO of the llama below (libtpu 0.0.42 and 0.0.50): XLA:TPU
compiles one slice's program. Every collective in it stays inside the slice (``replica_groups={{0,1,2,3}}``:
the four devices of one v5e:2x2, over ICI); the reduction of the gradients across the slices is no
collective at all but pairs of ``send``/``recv`` with ``is_host_transfer=true`` handed to the host's
``xla_megascale_runtime`` (``_xla_megascale_transfer_type="ALL_REDUCE"``): DCN traffic leaves the chip
through its host. Skipped without libtpu (``pip install 'hloscope[tpu]'``).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from hloscope.compile.tpu.runtime import libtpu_version

pytestmark = [pytest.mark.xla,
              pytest.mark.skipif(libtpu_version() is None, reason="needs libtpu: pip install 'hloscope[tpu]'")]

#: A small llama: the built-in workload's two layers, narrower (compiles in ~30-80 s on 2 shared cores).
SMALL = (("dim", "256"), ("ffn", "512"), ("seq", "128"))
MEGASCALE = '_xla_host_transfer_handler_name="xla_megascale_runtime"'


def test_two_v5e_slices_compile_one_slices_program_with_the_dcn_reduction_through_the_host() -> None:
    from hloscope.api import StepReport
    from hloscope.compile.run.jobs import analyze_result, compile_request_result
    from hloscope.request import CompileRequest
    from hloscope.targets import get_target

    # Given the built-in llama for two v5e:2x2 slices (8 devices)
    request = CompileRequest("tpu-v5e", 8, workload="llama", sets=SMALL, topology="v5e:2x2", slices=2)
    result, _ = compile_request_result(request)
    # Then it is compiled for 8 devices, data parallel across the two slices and fsdp inside each
    assert result.devices == 8 and result.mesh_shape == {"data": 2, "fsdp": 4}
    assert result.topology == "v5e:2x2 (v5e-4: 4 chips, topology 2x2, 1 device per chip, 2 slices over DCN)"
    hlo = result.optimized_hlo
    # and every collective in the module is inside one slice: the program is one slice's
    groups = Counter(re.findall(r"replica_groups=(\{[^=]*?\}\})", hlo))
    assert set(groups) == {"{{0,1,2,3}}"}
    # while what crosses the slices goes to the host's megascale runtime: each send has its recv back.
    # libtpu 0.0.50: 19 pairs, all ALL_REDUCE (the gradients summed over DCN); 0.0.42: 17 ALL_REDUCE pairs
    # and one ALL_GATHER (a bf16[1,128,256] activation of each slice gathered into bf16[2,128,256])
    sends = [ln for ln in hlo.splitlines() if " send(" in ln and MEGASCALE in ln]
    recvs = [ln for ln in hlo.splitlines() if " recv(" in ln and MEGASCALE in ln]
    assert sends and len(sends) == len(recvs) and all("is_host_transfer=true" in ln for ln in sends + recvs)
    kinds = Counter(re.search(r'_xla_megascale_transfer_type="(\w+)"', ln).group(1)  # type: ignore[union-attr]
                    for ln in sends)
    assert kinds["ALL_REDUCE"] >= 17 and set(kinds) <= {"ALL_REDUCE", "ALL_GATHER"}
    # A known limit (docs/targets.md, "Several slices"): the report takes those sends and recvs for host
    # transfers and prices them on the host link (PCIe: the leg the bytes do cross to reach the host's NIC),
    # with no DCN figure; the offloaded Q/K/V are the other transfers
    report = analyze_result(result, get_target("tpu-v5e"), extra={"workload": "llama"},
                            report_type=StepReport).to_dict()
    ops = Counter(t["op"] for t in report["transfers"])
    assert ops["send"] == len(sends) and ops["recv"] == len(recvs)
    assert {t["checkpoint_name"] for t in report["transfers"] if t["op"] not in ("send", "recv")} \
        <= {"query_proj", "key_proj", "value_proj", None}


def test_a_slice_count_for_a_gpu_or_that_does_not_split_the_devices_is_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    from hloscope.cli.main import main

    # Given --slices on a GPU target, a count that does not split --devices, and 0
    assert main(["compile", "--workload", "llama", "--target", "h100-sxm", "--slices", "2"]) == 2
    assert capsys.readouterr().err == "hloscope: error: --slices is for a TPU target; h100-sxm is not a TPU target\n"
    assert main(["compile", "--workload", "llama", "--target", "tpu-v5e", "--devices", "6", "--slices", "4"]) == 2
    assert capsys.readouterr().err == ("hloscope: error: --devices 6 does not split into 4 slices of equal size: "
                                       "give slices x devices per slice\n")
    assert main(["compile", "--workload", "llama", "--target", "tpu-v5e", "--slices", "0"]) == 2
    assert capsys.readouterr().err == "hloscope: error: --slices must be at least 1, got 0\n"


@pytest.mark.slow  # 60-80 s on 2 shared cores; the argv is tests/unit/test_maxtext_args.py's too
@pytest.mark.skipif(sys.version_info < (3, 12) or importlib.util.find_spec("maxtext") is None,
                    reason="needs MaxText: pip install 'hloscope[maxtext,tpu]' (Python 3.12+)")
def test_maxtext_compiles_for_two_slices_with_its_own_dcn_data_axis(tmp_path: Path) -> None:
    import hloscope

    # Given issue 34's tiny llama (tests/compile/test_maxtext_tpu.py) on two v5e-4 slices through MaxText's own
    # train_compile (compile_topology_num_slices=2)
    tiny = ("base_emb_dim=256", "base_num_query_heads=4", "base_num_kv_heads=4", "base_mlp_dim=512",
            "base_num_decoder_layers=2", "head_dim=64", "vocab_size=1024", "per_device_batch_size=1",
            "max_target_length=512", "remat_policy=qkv_proj_offloaded")
    out = tmp_path / "mt"
    result, report = hloscope.compile_maxtext(*tiny, target="tpu-v5e", devices=8, slices=2, out=out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert {"compile_topology=v5e-4", "compile_topology_num_slices=2"} <= set(manifest["maxtext"]["argv"])
    # Then MaxText's mesh puts its DCN axis (dcn_data_parallelism: -1) across the slices, fsdp inside one
    assert manifest["mesh"]["data"] == 2 and manifest["mesh"]["fsdp"] == 4 and result.devices == 8
    assert result.topology == "v5e:2x2 (v5e-4: 4 chips, topology 2x2, 1 device per chip, 2 slices over DCN)"
    # and, as for the built-in llama, one slice's program: collectives inside it, the gradients summed across
    # the slices by the megascale runtime (21 ALL_REDUCE pairs read, libtpu 0.0.50)
    hlo = result.optimized_hlo
    assert set(re.findall(r"replica_groups=(\{[^=]*?\}\})", hlo)) == {"{{0,1,2,3}}"}
    sends = [ln for ln in hlo.splitlines() if " send(" in ln and MEGASCALE in ln]
    assert sends and all('_xla_megascale_transfer_type="ALL_REDUCE"' in ln for ln in sends)
    # the offloaded Q/K/V are those of one slice: 2.25 MiB out, 1.5 MiB back per step, as on one v5e-8
    qkv = [t for t in report.transfers if t.instruction.text_opcode not in ("send", "recv")]
    moved = Counter(str(t.direction) for t in qkv for _ in range(t.bytes // (512 * 4 * 64 * 2)))
    assert moved == {"to_host": 9, "to_device": 6}
    assert {t.checkpoint_name for t in qkv} == {"query_proj", "key_proj", "value_proj"}
