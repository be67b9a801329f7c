"""A simple roofline cost model, in microseconds. Every figure is an estimate.

- An op's time is ``max(flops / peak_flops(dtype), hbm_bytes / hbm_bandwidth)``.
- FLOPs: ``2 * prod(result dims) * prod(contracting dims)`` for each ``dot``
  (inside fusions too, recursively), GEMM custom calls read their contracting
  dims from ``backend_config``; convolutions ``2 * prod(result) * prod(kernel) /
  output features``. Other ops: 0 FLOPs.
- HBM bytes: operands plus result at the op's boundary, leaving out buffers in
  host memory; an in-place ``dynamic-update-slice`` counts its update twice.
- A host transfer takes ``bytes / host link bandwidth`` (one direction).
- A collective takes ``bytes / interconnect bandwidth`` (one direction).
Launch overheads, caches, contention and overlap between kernels are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

from hloscope.analysis.callgraph import trip_count
from hloscope.analysis.opclass import (
    COLLECTIVE_OPCODES,
    collective_kind,
    custom_call_target,
    is_done,
    is_free,
    is_start,
)
from hloscope.hlo.model import Instruction, Module
from hloscope.hlo.shape import HOST_MEMORY_SPACE
from hloscope.targets import Target


@dataclass(frozen=True)
class OpCost:
    """flops: floating-point operations; hbm_bytes: bytes read+written; us: estimate."""

    flops: float
    hbm_bytes: int
    us: float


class CostModel:
    def __init__(self, module: Module, target: Target, host_space: int = HOST_MEMORY_SPACE) -> None:
        self.module = module
        self.target = target
        self.host = host_space
        self._comp_flops: dict[str, tuple[float, str]] = {}
        self._body_us: dict[str, float] = {}

    def _dot_flops(self, ins: Instruction) -> tuple[float, str]:
        table = self.module.computations[ins.computation].by_name
        lhs = table.get(ins.operands[0]) if ins.operands else None
        if lhs is None:
            return 0.0, ins.shape.element_type
        if ins.opcode == "convolution":
            rhs = table.get(ins.operands[1]) if len(ins.operands) > 1 else None
            if rhs is None or not rhs.shape.dims:
                return 0.0, lhs.shape.element_type
            k = rhs.shape.num_elements / max(rhs.shape.dims[-1], 1)
            return 2.0 * ins.shape.num_elements * k, lhs.shape.element_type
        contracting = 1
        dims = ins.attr("lhs_contracting_dims").strip("{}")
        for d in dims.split(","):
            if d.strip().isdigit() and int(d) < len(lhs.shape.dims):
                contracting *= lhs.shape.dims[int(d)]
        return 2.0 * ins.shape.num_elements * contracting, lhs.shape.element_type

    def computation_flops(self, name: str) -> tuple[float, str]:
        """FLOPs of dots/convolutions in a (fused) computation, and their dtype."""
        if name in self._comp_flops:
            return self._comp_flops[name]
        self._comp_flops[name] = (0.0, "f32")
        total, dtype = 0.0, ""
        for ins in self.module.computations[name].instructions:
            if ins.opcode in ("dot", "convolution"):
                f, t = self._dot_flops(ins)
            elif ins.opcode == "fusion" or (ins.opcode == "custom-call" and ins.called_computations):
                f, t = 0.0, ""
                for c in ins.called_computations:
                    cf, ct = self.computation_flops(c)
                    f += cf
                    t = t or ct
            else:
                continue
            total += f
            dtype = dtype or t
        self._comp_flops[name] = (total, dtype or "f32")
        return self._comp_flops[name]

    def _gemm_flops(self, ins: Instruction) -> tuple[float, str]:
        table = self.module.computations[ins.computation].by_name
        lhs = table.get(ins.operands[0]) if ins.operands else None
        if lhs is None:
            return 0.0, "bf16"
        cfg = ins.backend_config.get("gemm_backend_config", {})
        dims = cfg.get("dot_dimension_numbers", {}).get("lhs_contracting_dimensions", [])
        contracting = 1
        for d in dims:
            if int(d) < len(lhs.shape.dims):
                contracting *= lhs.shape.dims[int(d)]
        result = ins.shape.tuple_element(0) if ins.shape.is_tuple else ins.shape
        n = result.num_elements if result is not None else 0
        return 2.0 * n * contracting, lhs.shape.element_type

    def hbm_bytes(self, ins: Instruction) -> int:
        table = self.module.computations[ins.computation].by_name
        if ins.opcode == "fusion":
            root = self.module.computations[ins.called_computations[0]].root if ins.called_computations else None
            if root is not None and root.opcode == "dynamic-update-slice" and len(root.operands) > 1:
                upd = self.module.computations[root.computation].by_name.get(root.operands[1])
                if upd is not None:
                    return 2 * upd.shape.byte_size
        total = 0
        for o in ins.operands:
            src = table.get(o)
            if src is not None:
                total += sum(leaf.byte_size for leaf in src.shape.leaves() if leaf.memory_space != self.host)
        total += sum(leaf.byte_size for leaf in ins.shape.leaves() if leaf.memory_space != self.host)
        return total

    def op_cost(self, ins: Instruction) -> OpCost:
        """Estimated cost of one execution of a compute instruction."""
        if is_free(ins):
            return OpCost(0.0, 0, 0.0)
        flops, dtype = 0.0, ins.shape.element_type
        if ins.opcode in ("dot", "convolution"):
            flops, dtype = self._dot_flops(ins)
        elif ins.opcode == "fusion":
            for c in ins.called_computations:
                f, t = self.computation_flops(c)
                flops += f
                dtype = t if f else dtype
        elif ins.opcode == "custom-call":
            target = custom_call_target(ins).lower()
            if "gemm" in target or "matmul" in target:
                flops, dtype = self._gemm_flops(ins)
        nbytes = self.hbm_bytes(ins)
        us = max(flops / self.target.peak_flops(dtype), nbytes / self.target.hbm_bandwidth) * 1e6
        return OpCost(flops, nbytes, us)

    def transfer_us(self, nbytes: int, direction: str) -> float:
        bw = self.target.host_link_to_host if direction == "to_host" else self.target.host_link_to_device
        return nbytes / bw * 1e6

    def collective_us(self, ins: Instruction) -> float:
        """Estimated time of a collective from the bytes it produces."""
        shape = ins.shape
        if ins.opcode.endswith("-start") or ins.opcode == "async-start":
            # Start results bundle operands and results; the last array-ish element is the output.
            shape = shape.tuple_element(1) or shape if shape.is_tuple else shape
        nbytes = shape.byte_size
        if not collective_kind(ins) and ins.opcode not in COLLECTIVE_OPCODES:
            return 0.0
        return nbytes / self.target.interconnect_bandwidth * 1e6

    def computation_us(self, name: str) -> float:
        """Estimated time of one run of a scheduled computation (loops times trips)."""
        if name in self._body_us:
            return self._body_us[name]
        self._body_us[name] = 0.0  # guards against recursion
        total = sum(self.instruction_us(i) for i in self.module.computations[name].instructions)
        self._body_us[name] = total
        return total

    def instruction_us(self, ins: Instruction) -> float:
        """Estimated compute time of one instruction of a scheduled computation.

        Async halves, collectives and free ops cost 0 here (they are judged
        separately); a while loop costs its body times its trip count.
        """
        if is_free(ins) or is_start(ins) or is_done(ins) or ins.opcode == "async-update":
            return 0.0
        if ins.opcode == "while":
            trip = trip_count(self.module, ins) or 1
            return trip * self.computation_us(ins.attr("body").lstrip("%"))
        if ins.opcode in ("call", "conditional"):
            return max((self.computation_us(c) for c in ins.called_computations), default=0.0)
        if collective_kind(ins):
            return 0.0
        return self.op_cost(ins).us
