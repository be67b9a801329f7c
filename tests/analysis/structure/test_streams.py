"""XLA's execution streams (hloscope.analysis.structure.streams) against XLA's own assignment, and what sharing one costs.

``fixtures/opt_state_offload.hlo.txt`` is the JAX guide's optimizer-state offload (Adam moments
of four f32[4096,4096] weights, FSDP over 8 GPUs, in pinned host memory), compiled deviceless
with jaxlib 0.10.2 by ``fixtures/generate_streams.py``; the same compile logged XLA's
``ExecutionStreamAssignment`` (``TF_CPP_VMODULE=execution_stream_assignment=3``) into
``fixtures/xla-logs/opt_state_offload.streams.log``. Read by hand: 16 ``copy-start`` (8
H->D moment fetches, 8 D->H write-backs of f32[512,4096] = 8 MiB each); XLA gives them
compute streams 0..3 in rotation, in post order from the root tuple: copy-start.1.0 -> 0,
.16 -> 1, .3.0 -> 2, .2.0 -> 3, ..., .12.0 -> 0, .13.0 -> 1, .14.0 -> 2, .15.0 -> 3. The schedule
issues the write-backs in pairs, back to back (copy-start.13.0 then .9.0, lines 440 and 443,
neither done before the other starts): both pairs of a stream land on one stream, so the
second of each pair waits for the first.
"""

from __future__ import annotations

import re

import pytest

from hloscope.analysis.structure.streams import ExecutionStream, StreamKind, assign_execution_streams
from hloscope.render.verdict_words import stream_queue_clause
from tests.conftest import FIXTURES, fixture_report

pytestmark = pytest.mark.jax_version  # XLA's stream assignment differs between 0.10 and 0.12

_LINE = re.compile(r"Start new (\w+) execution scope: instr=(\S+) stream=(\w+)_stream\[(\d+)\]")
_KIND = {"computation": StreamKind.COMPUTE, "communication": StreamKind.COMMUNICATION}


def _xla_log() -> dict[str, ExecutionStream]:
    text = (FIXTURES / "xla-logs" / "opt_state_offload.streams.log").read_text()
    return {m[2]: ExecutionStream(_KIND[m[3]], int(m[4])) for m in _LINE.finditer(text)}


def test_every_scope_start_gets_the_stream_xla_logged() -> None:
    report = fixture_report("opt_state_offload.hlo.txt")
    ours = assign_execution_streams(report.index)
    xla = _xla_log()
    assert len(xla) == 23 and sum(s.kind is StreamKind.COMPUTE for s in xla.values()) == 16
    assert {name: ours.stream_of(c, name) for (c, name) in ours.streams} == xla
    assert "#compute_streams=4 #communication_streams=1" in (
        FIXTURES / "xla-logs" / "opt_state_offload.streams.log").read_text()


def test_report_names_the_stream_of_each_transfer() -> None:
    report = fixture_report("opt_state_offload.hlo.txt")
    streams = {v.transfer.instruction.name: v.timing.stream.label for v in report.verdicts if v.timing and v.timing.stream}
    assert streams["copy-start.13.0"] == streams["copy-start.9.0"] == "compute:1"
    assert streams["copy-start.12.0"] == streams["copy-start.8.0"] == "compute:0"
    d = {t["name"]: t for t in report.to_dict()["transfers"]}
    assert d["copy-start.15.0"]["xla_stream"] == "compute:3"


def test_a_write_back_queued_behind_another_on_its_stream_says_so() -> None:
    report = fixture_report("opt_state_offload.hlo.txt")
    by = {v.transfer.instruction.name: v for v in report.verdicts}
    # 9.0 is issued right behind 13.0 on compute stream 1: its bytes wait for all of 13.0's.
    t = by["copy-start.9.0"].timing
    assert t is not None and t.queued_behind == ("copy-start.13.0",)
    first = by["copy-start.13.0"].timing
    assert first is not None and first.queued_us == 0.0
    # It waits exactly as long as 13.0 takes alone (8 MiB at the target's D->H rate, plus its DMA setup).
    assert abs(t.queued_us - first.transfer_us) < 1e-6
    clause = stream_queue_clause(by["copy-start.9.0"])
    assert clause is not None and "compute stream 1" in clause and "copy-start.13.0" in clause
    # The first of each pair did not queue. Of the fetches, only .4.0 did: issued at done.1.0 on
    # compute stream 1 while .16, on the same stream, was still waiting for the H->D copy engine
    # behind .1.0 (one engine per direction); the others were alone on their streams in flight.
    assert stream_queue_clause(by["copy-start.13.0"]) is None
    assert all(stream_queue_clause(by[f"copy-start.{n}.0"]) is None for n in (1, 2, 3, 5, 6, 7))
    fetch = by["copy-start.4.0"].timing
    assert fetch is not None and fetch.queued_behind == ("copy-start.16",)
    clause = stream_queue_clause(by["copy-start.4.0"])
    assert clause is not None and "compute stream 1" in clause and "copy-start.16" in clause


def test_steps_without_a_shared_stream_show_no_stream_hint() -> None:
    """mlp and llama offload: at most four host copies in flight, each alone on its stream."""
    for name in ("mlp_offload.hlo.txt", "llama_offload.hlo.txt", "llama_offload_nolhs.hlo.txt"):
        report = fixture_report(name)
        assert report.streams is not None and report.streams.streams
        assert all(stream_queue_clause(v) is None for v in report.verdicts), name
        assert all(v.timing is None or v.timing.queued_us == 0.0 for v in report.verdicts), name


def test_the_trace_has_a_lane_per_stream_on_each_host_link() -> None:
    """Each write-back pair shares a stream and the second is issued while the first runs: a second lane."""
    import json

    from hloscope.render import render_to_string

    report = fixture_report("opt_state_offload.hlo.txt")
    doc = json.loads(render_to_string("trace", report))
    names = {e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"}
    assert {f"host link H->D · compute:{n}" for n in range(4)} <= names
    assert {f"host link D->H · compute:{n} (2)" for n in range(4)} <= names


# XLA 0.12 (jaxlib 0.12.0.1): fixtures/jax012/mlp_offload.hlo.txt and, from the same compile, XLA's own
# assignment (fixtures/jax012/xla-logs/mlp_offload.streams.log, module jit_step; the log's other modules
# are autotuning sub-modules with no async starts). Read by hand there: 9 scope starts, "#compute_streams=4
# #communication_streams=1"; all-gather-start.2 -> communication_stream[0]; the host copies on the memcpy
# streams (dynamic-update-slice-start.1.0 and .2 -> memcpy_d2h_stream, dynamic-slice-start.1 ->
# memcpy_h2d_stream); the five device-side slice fusions (fusion-start .. fusion-start.4, async-starts
# wrapping loop dynamic-(update-)slice fusions) rotate over computation_stream[0..3]: 0, 1, 2, 3, 0.
JAX012 = FIXTURES / "jax012"
_LINE012 = re.compile(r"Start new (\w+) execution scope: instr=(\S+) stream=(\w+?)_stream(?:\[(\d+)\])?$", re.M)
_KIND012 = {**_KIND, "memcpy_d2h": StreamKind.MEMCPY_D2H, "memcpy_h2d": StreamKind.MEMCPY_H2D}


def _xla_log_012() -> dict[str, ExecutionStream]:
    text = (JAX012 / "xla-logs" / "mlp_offload.streams.log").read_text()
    step = text[text.index("Assign execution streams to module jit_step:"):]
    return {m[2]: ExecutionStream(_KIND012[m[3]], int(m[4]) if m[4] else (0 if m[3] == "memcpy_d2h" else 1))
            for m in _LINE012.finditer(step)}


def _module_012():  # type: ignore[no-untyped-def]
    from hloscope.analysis.structure.index import ModuleIndex
    from hloscope.hlo.parser import parse_hlo

    return ModuleIndex(parse_hlo((JAX012 / "mlp_offload.hlo.txt").read_text(), "mlp_offload.hlo.txt"))


def test_xla_012_puts_host_copies_on_the_memcpy_streams() -> None:
    from hloscope.analysis.structure.streams import XLA_0_12

    xla = _xla_log_012()
    assert len(xla) == 9 and "#async_start_instructions=9" in (JAX012 / "xla-logs" / "mlp_offload.streams.log").read_text()
    ours = assign_execution_streams(_module_012(), model=XLA_0_12)
    assert {name: ours.stream_of(c, name) for (c, name) in ours.streams} == xla
    assert xla["dynamic-slice-start.1"] == ExecutionStream(StreamKind.MEMCPY_H2D, 1)
    assert [xla[n].number for n in ("fusion-start", "fusion-start.1", "fusion-start.2", "fusion-start.3",
                                    "fusion-start.4")] == [0, 1, 2, 3, 0]


def test_the_010_model_would_rotate_the_host_copies_with_the_slice_fusions() -> None:
    """What the 0.10.2 model gives the same module (the mistake a 0.12 step got before): every host
    copy on a compute stream, in the rotation with the five slice fusions."""
    from hloscope.analysis.structure.streams import XLA_0_10

    ours = assign_execution_streams(_module_012(), model=XLA_0_10)
    by_name = {name: s for (_, name), s in ours.streams.items()}
    host = ("dynamic-update-slice-start.1.0", "dynamic-update-slice-start.2", "dynamic-slice-start.1")
    assert all(by_name[n].kind is StreamKind.COMPUTE for n in host)
    assert by_name != _xla_log_012()


def test_the_model_follows_the_jaxlib_that_compiled_it() -> None:
    from hloscope.analysis.structure.streams import XLA_0_10, XLA_0_12, stream_model
    from hloscope.hlo.parser import parse_hlo

    compact = parse_hlo((JAX012 / "dump_mlp_offload" / "module_0001.jit_step.sm_9.0a_gpu_after_optimizations.txt")
                        .read_text(), "compact")
    plain = _module_012().module  # XLA 0.12's as_text(): no compact operands, no version
    assert stream_model("0.12.0.1") is XLA_0_12 and stream_model("0.13.0") is XLA_0_12
    assert stream_model("0.10.2", compact) is XLA_0_10 and stream_model("0.11.1") is XLA_0_10
    assert stream_model(None, compact) is XLA_0_12 and stream_model("not installed", compact) is XLA_0_12
    assert stream_model(None, plain) is XLA_0_10 and stream_model(None) is XLA_0_10


def test_a_012_compile_is_simulated_on_its_memcpy_streams() -> None:
    from hloscope.analysis.inputs import StepInputs
    from hloscope.analysis.report import analyze_step
    from hloscope.analysis.structure.pairs import pair_async_ops
    from hloscope.targets import get_target

    index = _module_012()
    report = analyze_step(StepInputs(index.module, "mlp_offload.hlo.txt", versions={"jaxlib": "0.12.0.1"}),
                          get_target("h100-sxm"))
    assert report.streams is not None and report.streams.model.memcpy_streams
    streams = {v.transfer.instruction.name: v.timing.stream.label for v in report.verdicts
               if v.timing and v.timing.stream}
    assert streams == {"dynamic-update-slice-start.1.0": "memcpy_d2h", "dynamic-update-slice-start.2": "memcpy_d2h",
                       "dynamic-slice-start.1": "memcpy_h2d"}
    # The simulation's async set holds 0.12's async slice fusions: every fusion-start is paired with its done.
    starts = {p.start.name for p in pair_async_ops(index)}
    assert {"fusion-start", "fusion-start.1", "fusion-start.2", "fusion-start.3", "fusion-start.4"} <= starts
    assert len(starts) == 9


def test_a_custom_fusion_is_not_read_as_a_host_copy() -> None:
    """XLA 0.12 unwraps only a non-custom fusion to find the host dynamic-slice: the same line with
    kind=kCustom (edited here) takes the compute rotation."""
    from hloscope.analysis.structure.index import ModuleIndex
    from hloscope.analysis.structure.streams import XLA_0_12
    from hloscope.hlo.parser import parse_hlo

    text = (JAX012 / "mlp_offload.hlo.txt").read_text()
    line = next(ln for ln in text.splitlines() if ln.lstrip().startswith("%dynamic-slice-start.1 = "))
    assert "kind=kLoop, calls=%wrapped_dynamic-slice_computation" in line
    edited = text.replace(line, line.replace("kind=kLoop", "kind=kCustom"))
    ours = assign_execution_streams(ModuleIndex(parse_hlo(edited, "edited")), model=XLA_0_12)
    kinds = {name: s.kind for (_, name), s in ours.streams.items()}
    assert kinds["dynamic-slice-start.1"] is StreamKind.COMPUTE
    assert kinds["dynamic-update-slice-start.2"] is StreamKind.MEMCPY_D2H
