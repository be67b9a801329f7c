"""XLA's execution streams (hloscope.analysis.streams) against XLA's own assignment, and what sharing one costs.

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

from hloscope.analysis.streams import ExecutionStream, StreamKind, assign_execution_streams
from hloscope.render.why import stream_queue_clause
from tests.conftest import FIXTURES, fixture_report

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
