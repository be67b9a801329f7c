"""One shape for every pass: the context a pass reads and the table row that declares it.

A pass is a function ``run(ctx) -> T``. It reads the step from one :class:`StepContext`
(the loader's :class:`~hloscope.analysis.inputs.StepInputs`, the target, the
:class:`~hloscope.analysis.simulate.options.AnalysisOptions`, the shared
:class:`~hloscope.analysis.structure.index.ModuleIndex` and the :class:`~hloscope.analysis.cost.roofline.CostModel`)
and the results of the passes before it (``ctx[TIMELINE]``), and returns its typed result.
A :class:`Pass` row names the :class:`~hloscope.analysis.report.Report` field that result
fills; the ordered table is ``hloscope.analysis.passes.PASSES`` and docs/passes.md shows how
one is added.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.inputs import StepInputs
from hloscope.analysis.platforms import PlatformBackend, backend_for
from hloscope.analysis.simulate.options import AnalysisOptions
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.hlo.model import Module
from hloscope.targets import Target

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


@dataclass(frozen=True)
class Pass(Generic[T_co]):
    """One row of the pass table.

    name: the :class:`~hloscope.analysis.report.Report` field the result fills (and the key
    later passes read it by). run: the pass, ``run(ctx) -> T_co``.
    """

    name: str
    run: Callable[[StepContext], T_co]


class StepContext:
    """What every pass reads: the step's inputs and settings, and the results so far.

    inputs: what the loader read. target: the hardware the step is judged for. backend: its
    platform's room (``hloscope.analysis.platforms``), chosen once here. options: the
    analysis settings. index: the one module index. cost: the one cost model (lazy: an op is
    costed when a pass first asks). ``ctx[row]`` is the result of an earlier row of the table
    (a ``KeyError`` names a row that has not run yet: the table's order is wrong).
    """

    __slots__ = ("_results", "backend", "cost", "index", "inputs", "options", "target")

    def __init__(self, inputs: StepInputs, target: Target, options: AnalysisOptions) -> None:
        self.inputs = inputs
        self.target = target
        self.backend: PlatformBackend = backend_for(target)
        self.options = options
        self.index = ModuleIndex(inputs.module)
        self.cost = CostModel(self.index, target, options.host_space, options.link_mode,
                              dict(options.measured_us) or None)
        self._results: dict[str, Any] = {}

    @property
    def module(self) -> Module:
        """The optimized module (``inputs.module``)."""
        return self.inputs.module

    def __getitem__(self, row: Pass[T]) -> T:
        result: T = self._results[row.name]
        return result

    def run(self, passes: Iterable[Pass[object]]) -> dict[str, Any]:
        """Run ``passes`` in order; their results by row name."""
        for p in passes:
            self._results[p.name] = p.run(self)
        return dict(self._results)
