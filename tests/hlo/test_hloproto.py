"""HloProto reading (hloscope.hlo.hloproto) on the step module of a real PAXML FSDP run on A100s.

Fixture: fixtures/measured/pax_fsdp4_proc0.nsys.zip, which keeps unchanged the optimized module
nsys-jax dumped (NVIDIA JAX-Toolbox test data, Apache-2.0; fixtures/measured/README.md). Facts read by hand in the
archive (README of ../shared/measured): the entry has 10 all-gather-start, 9 all-reduce-start and
4 async-start (reduce-scatter); it ran on 4 partitions; no host memory space anywhere.
"""

from __future__ import annotations

import lzma
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.errors import HloscopeError
from hloscope.hlo.hloproto import parse_hlo_proto
from hloscope.hlo.loader import load_module
from hloscope.hlo.shape import HOST_MEMORY_SPACE

ARCHIVE = Path(__file__).resolve().parents[2] / "fixtures" / "measured" / "pax_fsdp4_proc0.nsys.zip"
MEMBER = "dump/module_0040.pjit__wrapped_step_fn.sm_8.0_gpu_after_optimizations.hlo.pb.xz"


@pytest.fixture(scope="module")
def step_xz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("proto") / "step.hlo.pb.xz"
    with zipfile.ZipFile(ARCHIVE) as z:
        out.write_bytes(z.read(MEMBER))
    return out


@pytest.fixture(scope="module")
def step():  # type: ignore[no-untyped-def]
    return load_module(str(ARCHIVE))  # the archive's (only) optimized module


def test_step_module_reads_with_its_schedule(step) -> None:  # type: ignore[no-untyped-def]
    step.self_check()
    assert step.name == "pjit__wrapped_step_fn" and step.is_scheduled and step.num_partitions == 4
    ops = Counter(i.opcode for i in step.entry.instructions)
    assert ops["all-gather-start"] == 10 and ops["all-reduce-start"] == 9
    # The printer writes an async op that wraps one op inline (reduce-scatter-start, no calls=).
    starts = [i for i in step.entry.instructions if i.opcode == "async-start"]
    assert [(i.text_opcode, i.wrapped_opcode) for i in starts] == [("reduce-scatter-start", "reduce-scatter")] * 4
    # The parser gives each the computation XLA's parser builds (hlo/async_sugar.py): the op, with the
    # attributes the printer wrote on the start, is that computation's root.
    wrapped = [step.computations[i.called_computations[0]].root for i in starts]
    assert all(w.opcode == "reduce-scatter" and w.attr("dimensions") and w.attr("to_apply") and w.attr("replica_groups")
               for w in wrapped)
    assert not any(i.attr("to_apply") or i.attr("replica_groups") for i in starts)
    # XLA names such an op's thunk after the op it wraps: the module keeps that name.
    assert sorted(step.async_wrapped.values()) == sorted(i.name for i in starts)
    assert not any(i.shape.in_memory_space(HOST_MEMORY_SPACE) for c in step.computations.values()
                   for i in c.instructions)
    # GEMMs are cuBLAS custom calls with their dot dimensions in backend_config.
    gemm = next(i for i in step.entry.instructions if i.attr("custom_call_target") == '"__cublas$gemm"')
    assert gemm.backend_config["gemm_backend_config"]["dot_dimension_numbers"]["lhs_contracting_dimensions"]
    assert step.source_location(gemm) is not None


def test_xz_and_plain_read_alike(tmp_path: Path, step_xz: Path) -> None:
    raw = lzma.decompress(step_xz.read_bytes())
    plain = tmp_path / "step.hlo.pb"
    plain.write_bytes(raw)
    a, b = parse_hlo_proto(raw, "a"), load_module(str(plain))
    assert [i.name for i in a.entry.instructions] == [i.name for i in b.entry.instructions]


@pytest.mark.parametrize("cut", [0, 9, 100_000], ids=["empty", "header only", "cut mid-module"])
def test_truncated_proto_is_one_line(tmp_path: Path, cut: int, step_xz: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    raw = lzma.decompress(step_xz.read_bytes())
    bad = tmp_path / "cut.hlo.pb"
    bad.write_bytes(raw[:cut])
    assert main(["analyze", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hloscope: error: ") and "Traceback" not in err[0]


def test_broken_xz_is_an_error(step_xz: Path) -> None:
    with pytest.raises(HloscopeError, match="truncated"):
        parse_hlo_proto(step_xz.read_bytes()[:5000], "cut.xz")
