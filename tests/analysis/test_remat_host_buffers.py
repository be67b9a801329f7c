"""XLA's rematerialization clones work in a module that keeps buffers on the host.

``fixtures/llama405b_hostbuf.hlo.txt``: the llama3-405b preset with 32 layers on 8 compile-only
h100-sxm GPUs (``hloscope compile --workload llama3-405b --set layers=32``, jaxlib 0.10.2, its
``optimized.hlo.txt``): Q/K/V offloaded to pinned host memory (9 host copies, 18 GiB per step), a
device allocation of 190.4 GiB, so XLA's remat pass runs, and without
``--xla_gpu_enable_host_memory_offloading=true`` it counts the host buffers as device memory.
Read by hand: 68 instructions named ``*.remat*``, of which 50 are fusions (the rest bitcasts and
get-tuple-elements): 17 in the entry, 9 in the backward layer body ``region_17.33_spmd`` (32 runs),
5 each in the attention-chunk bodies ``region_18.20_spmd`` and ``region_24.27_spmd`` (16 x 32 =
512 runs), 10 in the forward layer body ``region_2.9_spmd.clone`` (31 runs), 2 in its chunk body
``region_4.6_spmd`` (496 runs) and 2 in the peeled first layer's ``region_4.6_spmd.clone`` (16):
17 + 9*32 + 5*512 + 5*512 + 10*31 + 2*496 + 2*16 = 6,759 runs per step. None is a collective.
The same compile with the flag (``fixtures/llama405b_hostmem.hlo.txt``) has 25 fusion clones: 10 in
the entry, 7 in ``region_2.9_spmd.clone``, 5 in ``region_17.33_spmd``, one each in
``region_24.27_spmd``, ``region_4.6_spmd`` and ``region_4.6_spmd.clone``: 10 + 7*31 + 5*32 + 512 +
496 + 16 = 1,411 runs per step.
"""

from __future__ import annotations

from hloscope.render.memory_text import remat_lines
from tests.conftest import fixture_report

_CLONES = {"main.37_spmd": 17, "region_17.33_spmd": 9, "region_18.20_spmd": 5, "region_24.27_spmd": 5,
           "region_2.9_spmd.clone": 10, "region_4.6_spmd": 2, "region_4.6_spmd.clone": 2}
_RUNS = {"main.37_spmd": 1, "region_17.33_spmd": 32, "region_18.20_spmd": 512, "region_24.27_spmd": 512,
         "region_2.9_spmd.clone": 31, "region_4.6_spmd": 496, "region_4.6_spmd.clone": 16}


def test_the_remat_clones_of_a_step_with_host_buffers_are_counted_and_named() -> None:
    report = fixture_report("llama405b_hostbuf.hlo.txt")
    fusions = {c: sum(1 for i in report.module.computations[c].instructions
                      if ".remat" in i.name and i.opcode == "fusion") for c in _CLONES}
    assert fusions == _CLONES
    assert {c: report.index.executions(c) for c in _RUNS} == _RUNS
    r = report.remat
    assert r is not None and r.host_buffers and r.suspicious
    assert r.clones == sum(_CLONES.values()) == 50
    assert r.clones_per_step == sum(n * _RUNS[c] for c, n in _CLONES.items()) == 6759
    assert r.collectives == 0 and r.flops_per_step > 0
    line = remat_lines(report)[0]
    assert "cloned 50 instruction(s) (6759 run(s) per step" in line
    assert "xla_gpu_enable_host_memory_offloading=true" in line


def test_with_the_flag_xla_clones_less() -> None:
    with_flag = fixture_report("llama405b_hostmem.hlo.txt").remat
    without = fixture_report("llama405b_hostbuf.hlo.txt").remat
    assert with_flag is not None and without is not None
    assert (with_flag.clones, with_flag.clones_per_step) == (25, 1411)
    assert with_flag.clones < without.clones and with_flag.clones_per_step < without.clones_per_step
