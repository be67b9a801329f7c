"""XLA's rematerialization clones in a module that keeps buffers in host memory.

Pass: ``count_remat_clones(index, cost, host_space) -> RematClones``.

XLA's ``HloRematerialization`` names each instruction it recomputes ``<name>.remat``
(``.remat2``, ... on later rounds). On XLA:GPU it tracks memory without regard to memory
spaces unless ``--xla_gpu_enable_host_memory_offloading=true``: only then does
``GpuCompiler`` hand it a ``HostMemoryOffloadConfig`` with the host memory space color
(S(5)) and the link's bandwidths (``CreateHloAnalysisOpts`` in ``gpu_compiler.cc``), so
without it pinned-host buffers count against the device memory limit and it clones work
to make room that the device never needed (marin-community/marin's logbook: 143 clones,
0.633 s per step, -0.157 s with the flag). The pass counts the clones of scheduled
computations (times their runs per step), their FLOPs (the cost model's) and the
collectives among them, and whether the module holds host buffers at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.opclass import collective_kind, is_free

#: The flag that makes XLA:GPU's rematerialization count host buffers as host memory.
HOST_MEMORY_OFFLOADING_FLAG = "xla_gpu_enable_host_memory_offloading"
_REMAT = re.compile(r"\.remat\d*(\.|$)")


@dataclass(frozen=True)
class RematClones:
    """clones: instructions named ``*.remat*`` that do work (not bitcasts, tuples...) in scheduled
    computations (each counted once);
    clones_per_step: the same, times the runs per step of their computation. flops_per_step:
    their FLOPs per step (cost model). collectives: clones that are collectives (a re-gather).
    host_buffers: some value of the module lives in host memory (S(host_space)). names: the
    first few clone names, in text order."""

    clones: int
    clones_per_step: int
    flops_per_step: float
    collectives: int
    host_buffers: bool
    names: tuple[str, ...]

    @property
    def suspicious(self) -> bool:
        """Clones in a module with host buffers: the case the flag addresses."""
        return self.clones > 0 and self.host_buffers


def count_remat_clones(index: ModuleIndex, cost: CostModel, host_space: int) -> RematClones:
    module = index.module
    clones = per_step = colls = 0
    flops = 0.0
    names: list[str] = []
    host = False
    for cname, comp in module.computations.items():
        scheduled = index.is_scheduled_computation(cname)
        runs = index.executions(cname)
        for ins in comp.instructions:
            if not host and ins.shape.in_memory_space(host_space):
                host = True
            if not scheduled or not _REMAT.search(ins.name) or is_free(ins):
                continue
            clones += 1
            per_step += runs
            flops += cost.op_cost(ins).flops * runs
            colls += bool(collective_kind(ins))
            if len(names) < 5:
                names.append(ins.name)
    return RematClones(clones, per_step, flops, colls, host, tuple(names))
