"""HloProto reading (hloscope.hlo.hloproto) on the step module of a real PAXML FSDP run on A100s.

Fixture: fixtures/measured/pax_fsdp4_proc0.step.hlo.pb.xz, the optimized module nsys-jax dumped
(NVIDIA JAX-Toolbox test data, Apache-2.0; fixtures/measured/README.md). Facts read by hand in the
archive (README of ../shared/measured): the entry has 10 all-gather-start, 9 all-reduce-start and
4 async-start (reduce-scatter); it ran on 4 partitions; no host memory space anywhere.
"""

from __future__ import annotations

import lzma
from collections import Counter
from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.errors import HloscopeError
from hloscope.hlo.hloproto import parse_hlo_proto
from hloscope.hlo.loader import load_module
from hloscope.hlo.shape import HOST_MEMORY_SPACE

STEP = Path(__file__).resolve().parents[2] / "fixtures" / "measured" / "pax_fsdp4_proc0.step.hlo.pb.xz"


@pytest.fixture(scope="module")
def step():  # type: ignore[no-untyped-def]
    return load_module(str(STEP))


def test_step_module_reads_with_its_schedule(step) -> None:  # type: ignore[no-untyped-def]
    step.self_check()
    assert step.name == "pjit__wrapped_step_fn" and step.is_scheduled and step.num_partitions == 4
    ops = Counter(i.opcode for i in step.entry.instructions)
    assert ops["all-gather-start"] == 10 and ops["all-reduce-start"] == 9
    assert [i.wrapped_opcode or i.opcode for i in step.entry.instructions if i.opcode == "async-start"] == \
        ["async-start"] * 4
    starts = [i for i in step.entry.instructions if i.opcode == "async-start"]
    assert {step.computations[i.called_computations[0]].root.opcode for i in starts} == {"reduce-scatter"}
    assert not any(i.shape.in_memory_space(HOST_MEMORY_SPACE) for c in step.computations.values()
                   for i in c.instructions)
    # GEMMs are cuBLAS custom calls with their dot dimensions in backend_config.
    gemm = next(i for i in step.entry.instructions if i.attr("custom_call_target") == '"__cublas$gemm"')
    assert gemm.backend_config["gemm_backend_config"]["dot_dimension_numbers"]["lhs_contracting_dimensions"]
    assert step.source_location(gemm) is not None


def test_xz_and_plain_read_alike(tmp_path: Path) -> None:
    raw = lzma.decompress(STEP.read_bytes())
    plain = tmp_path / "step.hlo.pb"
    plain.write_bytes(raw)
    a, b = parse_hlo_proto(raw, "a"), load_module(str(plain))
    assert [i.name for i in a.entry.instructions] == [i.name for i in b.entry.instructions]


@pytest.mark.parametrize("cut", [0, 9, 100_000], ids=["empty", "header only", "cut mid-module"])
def test_truncated_proto_is_one_line(tmp_path: Path, cut: int, capsys: pytest.CaptureFixture[str]) -> None:
    raw = lzma.decompress(STEP.read_bytes())
    bad = tmp_path / "cut.hlo.pb"
    bad.write_bytes(raw[:cut])
    assert main(["analyze", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hloscope: error: ") and "Traceback" not in err[0]


def test_broken_xz_is_an_error() -> None:
    with pytest.raises(HloscopeError, match="truncated"):
        parse_hlo_proto(STEP.read_bytes()[:5000], "cut.xz")
