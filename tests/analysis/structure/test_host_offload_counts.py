"""Bytes and executions per step of the host copies XLA's remat pass adds under host-memory offloading.

``fixtures/llama405b_hostmem.hlo.txt``: the llama3-405b preset with 32 layers, 8 compile-only
devices (h100-sxm), compiled with ``--xla-flag xla_gpu_enable_host_memory_offloading=true``
(jaxlib 0.10.2; ``hloscope compile --workload llama3-405b --set layers=32 --xla-flag ...``,
its ``optimized.hlo.txt``). Read by hand: the entry runs the backward layer loop ``while.108``
(body ``region_17.33_spmd``, ``known_trip_count`` 32), which runs the attention-chunk loops
``while.104`` (body ``region_18.20_spmd``) and ``while.105`` (``region_24.27_spmd``), 16 trips each.
In ``region_18.20_spmd`` (op_name ``.../checkpoint/rematted_computation/while/body``) the score
matmul ``gemm_fusion_dot.99`` (bf16[16,8192,8192], 2 GiB) goes to host by ``copy-start.66`` and
comes straight back by ``copy-start.67`` (started on ``copy-done.66``), beside the mask
(pred[8192,512], 4 MiB: copy-start.64/.65) and f32[2,8,512,16] (512 KiB: copy-start.68/.69):
XLA's rematerialization, given the host memory space, offloads these instead of recomputing
them. 2 GiB x 32 x 16 = 1 TiB per step for that one copy: the per-step terabytes the report
gives for this flag are the module's own, not a counting error.
"""

from __future__ import annotations

from hloscope.analysis.kinds import Direction
from tests.conftest import fixture_report

GIB, MIB, KIB = 2**30, 2**20, 2**10


def test_the_offloaded_score_runs_once_per_chunk_per_layer() -> None:
    report = fixture_report("llama405b_hostmem.hlo.txt")
    by = {(t.computation, t.instruction.name): t for t in report.transfers}
    out, back = by[("region_18.20_spmd", "copy-start.66")], by[("region_18.20_spmd", "copy-start.67")]
    assert out.direction is Direction.TO_HOST and back.direction is Direction.TO_DEVICE
    assert out.bytes == back.bytes == 16 * 8192 * 8192 * 2 == 2 * GIB
    assert report.index.executions("region_18.20_spmd") == 32 * 16
    assert report.index.executions("region_17.33_spmd") == 32
    loops = {lp.computation: lp for lp in report.summary.loops}
    chunk = loops["region_18.20_spmd"]
    assert chunk.executions == 512
    assert chunk.to_host_bytes == 2 * GIB + 4 * MIB + 512 * KIB
    # The step's total is the sum over computations of bytes per execution times executions.
    total = sum(lp.to_host_bytes * lp.executions for lp in report.summary.loops)
    assert total == sum(t.bytes * report.index.executions(t.computation) for t in report.transfers
                        if t.direction is Direction.TO_HOST)
    assert total > 7 * 2**40
