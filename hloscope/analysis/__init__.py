"""Analyses over the HLO model: passes that take the model and return results. No JAX, no UI."""

from hloscope.analysis.report import Report, analyze_module
from hloscope.analysis.simulate.overlap import judge_overlap
from hloscope.analysis.structure.callgraph import build_call_graph
from hloscope.analysis.structure.graph import build_dependency_graph
from hloscope.analysis.structure.pairs import pair_async_ops
from hloscope.analysis.structure.transfers import find_host_transfers

__all__ = [
    "Report", "analyze_module", "build_call_graph", "build_dependency_graph", "find_host_transfers",
    "judge_overlap", "pair_async_ops",
]
