"""Measured-profile readers on real files: a jax.profiler trace of this machine's CPU and PGLE profiles.

fixtures/measured/cpu_step/ holds a real jax.profiler trace (made by make.py there) of three executions
of jit_step. Read by hand in step.trace.json.gz: each execution (run_id) runs ynn_fusion,
multiply_add_fusion, dot and multiply_subtract_fusion; the executions start at 502.569, 3670.602 and
4163.347 µs and their ops end at 3616.632, 4154.814 and 4496.283 µs (spans 3114.063, 484.212 and
332.936 µs); dot lasts 2893.093, 247.759 and 171.926 µs.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from hloscope.analysis.cost.calibration import parse_profile, parse_profile_file
from hloscope.analysis.measured.read import parse_measured
from hloscope.cli.main import main
from hloscope.errors import HloscopeError
from hloscope.hlo.profile_files import read_measured_file, read_profile_file
from tests.conftest import FIXTURES

CPU = FIXTURES / "measured" / "cpu_step"


def _check_cpu_profile(p) -> None:  # type: ignore[no-untyped-def]
    assert p.module == "jit_step"
    assert p.step_us == pytest.approx((3114.063, 484.212, 332.936))
    assert p.median_step_us == pytest.approx(484.212)
    assert set(p.ops) == {"ynn_fusion", "multiply_add_fusion", "dot", "multiply_subtract_fusion"}
    assert p.ops["dot"].median_us == pytest.approx(247.759)
    assert p.ops["dot"].spread_us == pytest.approx(2893.093 - 171.926)
    assert [iv.name for iv in p.intervals] == ["ynn_fusion", "multiply_add_fusion", "dot", "multiply_subtract_fusion"]


def test_chrome_trace_json() -> None:
    p = parse_measured(read_measured_file(CPU / "step.trace.json.gz"))
    assert p.kind == "trace"
    _check_cpu_profile(p)


def test_xplane_without_jaxlib_reads_the_same_events() -> None:
    p = parse_measured(read_measured_file(CPU / "step.xplane.pb"))
    assert p.kind == "xplane"
    _check_cpu_profile(p)


def test_analyze_with_an_xplane(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(CPU / "step.hlo.txt"), "--measured", str(CPU / "step.xplane.pb")]) == 0
    assert "coverage: 4 of 4 measured ops" in capsys.readouterr().out


def test_truncated_trace_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = (CPU / "step.trace.json.gz").read_bytes()
    cut = tmp_path / "cut.trace.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    assert main(["analyze", str(CPU / "step.hlo.txt"), "--measured", str(cut)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "truncated" in err[0]
    plain = tmp_path / "cut.json"
    plain.write_bytes(gzip.decompress(data)[:1500])
    with pytest.raises(HloscopeError, match="truncated"):
        parse_measured(read_measured_file(plain))


PGLE_TEXT = ('costs { name: "fusion.12" cost_us: 41.5 }\ncosts { name: "all-gather-start.1" cost_us: 67 }\n'
             'latencies { source: "all-gather-start.1" target: "all-gather-done.1" latency_us: 70.25 }\n')


def _binary_pgle() -> bytes:
    """The same profile as a binary ProfiledInstructionsProto, encoded by the protobuf library from a
    descriptor built here (field numbers of tsl/profiler/protobuf/profiled_instructions.proto)."""
    descriptor_pb2 = pytest.importorskip("google.protobuf.descriptor_pb2")
    from google.protobuf import descriptor_pool, message_factory

    f = descriptor_pb2.FileDescriptorProto(name="pi_test.proto", package="t", syntax="proto3")
    top = f.message_type.add(name="ProfiledInstructionsProto")
    cost = top.nested_type.add(name="InstructionCost")
    cost.field.add(name="name", number=1, type=9, label=1)
    cost.field.add(name="cost_us", number=2, type=1, label=1)
    lat = top.nested_type.add(name="Latency")
    lat.field.add(name="source", number=1, type=9, label=1)
    lat.field.add(name="target", number=2, type=9, label=1)
    lat.field.add(name="latency_us", number=3, type=1, label=1)
    top.field.add(name="costs", number=1, type=11, label=3, type_name=".t.ProfiledInstructionsProto.InstructionCost")
    top.field.add(name="latencies", number=2, type=11, label=3, type_name=".t.ProfiledInstructionsProto.Latency")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("t.ProfiledInstructionsProto"))
    msg = cls()
    for name, us in (("fusion.12", 41.5), ("all-gather-start.1", 67.0)):
        msg.costs.add(name=name, cost_us=us)
    msg.latencies.add(source="all-gather-start.1", target="all-gather-done.1", latency_us=70.25)
    return bytes(msg.SerializeToString())


def test_binary_profile_pb_reads_like_its_text(tmp_path: Path) -> None:
    binary = tmp_path / "profile.pb"
    binary.write_bytes(_binary_pgle())
    assert (parse_profile_file(read_profile_file(binary)) == parse_profile(PGLE_TEXT)
            == {"fusion.12": 41.5, "all-gather-start.1": 70.25})
    p = parse_measured(read_measured_file(binary))
    assert p.kind == "pgle" and p.ops["fusion.12"].median_us == 41.5 and not p.step_us


def test_truncated_binary_profile_is_one_line(tmp_path: Path) -> None:
    cut = tmp_path / "profile.pb"
    cut.write_bytes(_binary_pgle()[:-5])
    with pytest.raises(HloscopeError, match="profile"):
        parse_profile_file(read_profile_file(cut))


def test_archive_without_pyarrow_names_the_extra(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    archive = FIXTURES / "measured" / "pax_fsdp4_proc0.nsys.zip"
    assert main(["analyze", str(FIXTURES / "mlp_offload.hlo.txt"), "--measured", str(archive)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'hloscope[measured]'" in err[0]
