"""hloscope's per-op estimates beside XLA's, by op class: how far the two cost models agree.

``compare_op_costs(cost, log)`` takes the cost model of a step and the figures read from
its compile's scheduler log (``hloscope.hlo.xla_log``) and groups every instruction both
priced by the source of XLA's figure:

- ``fusion``: XLA's GPU performance model (``Fusion cost from gpu_performance_model``);
- ``matmul <type>``: XLA's measured GEMM tables (``Matmul cost from matmul_interpolator``),
  split by the GEMM's input and result types (``bf16->bf16``, ``bf16->f32``...);
- ``fallback``: XLA's small fixed cost (copies, custom calls it does not model), only the
  instructions hloscope does not count as free;
- ``collective``: async collectives, XLA's ``Computed collective time`` against
  hloscope's collective time.

Per class: how many instructions, the sum of each side's µs, and the median and the
10th/90th percentiles of ours/XLA's per instruction (instructions XLA priced at 0 are
left out of the ratios, not of the sums). docs/cost-model.md quotes these figures for
each change of the model. Figures are per execution of each instruction (no trip counts).
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.structure.opclass import collective_kind, is_free, is_start
from hloscope.hlo.model import Instruction
from hloscope.hlo.xla_log import CostSource, LatencySource, XlaLog

__all__ = ["ClassComparison", "compare_op_costs", "format_comparison"]

_CLASS_OF = {
    CostSource.PERFORMANCE_MODEL: "fusion",
    CostSource.MATMUL_INTERPOLATOR: "matmul",
    CostSource.FALLBACK: "fallback",
}
CLASSES = ("fusion", "matmul", "fallback", "collective")


def _matmul_type(cost: CostModel, ins: Instruction) -> str:
    """``bf16->f32``: the GEMM's input type and its result's."""
    out = ins.shape.element_type if not ins.shape.is_tuple else "tuple"
    for c in ins.called_computations:
        flops, dtype = cost.computation_flops(c)
        if flops:
            return f"{dtype}->{out}"
    return f"?->{out}"


@dataclass(frozen=True)
class ClassComparison:
    """One op class: ``count`` instructions priced by both; sums in µs; ratios ours/XLA's."""

    op_class: str
    count: int
    ours_us: float
    xla_us: float
    median_ratio: float | None
    p10_ratio: float | None
    p90_ratio: float | None


def _quantile(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def compare_op_costs(cost: CostModel, log: XlaLog) -> tuple[ClassComparison, ...]:
    """One :class:`ClassComparison` per op class XLA priced (see the module docstring)."""
    by_name: dict[str, Instruction] = {}
    for comp in cost.module.computations.values():
        for x in comp.instructions:
            by_name[x.name] = x
    rows: dict[str, list[tuple[float, float]]] = {"fusion": []}
    for name, node in log.node_costs.items():
        cls = _CLASS_OF.get(node.source)
        ins = by_name.get(name)
        if cls is None or ins is None or is_free(ins) or is_start(ins) or collective_kind(ins):
            continue
        if ins.opcode in ("while", "call", "conditional") or ins.opcode.endswith("-done"):
            continue
        if cls == "matmul":
            cls = f"matmul {_matmul_type(cost, ins)}"
        rows.setdefault(cls, []).append((cost.op_cost(ins).us, node.us))
    for name, lat in log.async_latency.items():
        ins = by_name.get(name)
        if lat.source is LatencySource.DEFAULT or ins is None or not collective_kind(ins):
            continue
        rows.setdefault("collective", []).append((cost.collective_us(ins), lat.us))
    out = []
    order = {c: i for i, c in enumerate(CLASSES)}
    for cls in sorted(rows, key=lambda c: (order.get(c.split(" ")[0], 9), c)):
        pairs = rows[cls]
        if not pairs:
            continue
        ratios = [o / x for o, x in pairs if x > 0]
        out.append(ClassComparison(cls, len(pairs), sum(o for o, _ in pairs), sum(x for _, x in pairs),
                                   _quantile(ratios, 0.5), _quantile(ratios, 0.1), _quantile(ratios, 0.9)))
    return tuple(out)


def format_comparison(rows: tuple[ClassComparison, ...]) -> str:
    """A small plain-text table of :func:`compare_op_costs` (for docs and the terminal)."""

    def r(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    lines = [f"{'class':<17} {'ops':>5} {'ours us':>11} {'xla us':>11} {'median':>7} {'p10':>7} {'p90':>7}"]
    for c in rows:
        lines.append(f"{c.op_class:<17} {c.count:>5} {c.ours_us:>11.1f} {c.xla_us:>11.1f} "
                     f"{r(c.median_ratio):>7} {r(c.p10_ratio):>7} {r(c.p90_ratio):>7}")
    return "\n".join(lines)
