"""Fused matmul chains: a fusion in which one matmul's result is contracted by a second matmul.

XLA's TPU compiler fuses an MLP's two matmuls into one output fusion (``gelu(LN(x) @ W1) @ W2 + x``:
a ``convolution`` one of whose operands is a nested fusion holding the first ``convolution``). On a
TPU v5e such a fusion takes longer when the first matmul's activation input (``x``) lies in HBM than
when it lies in VMEM, by a time proportional to that input's bytes (fixtures/measured/tpu_v5e_blocks,
the ``gx*`` runs: docs/cost-model.md, "Fused matmul chains"): the chip computes the chain a slice of
the intermediate at a time and reads the whole activation again for each slice. The cost model prices
that time (``CostProfile.chain_input_us``); this module finds the inputs.

Contract: :meth:`ChainFinder.inputs` takes a fused computation and returns the numbers of its
parameters that flow into the *re-read* input of a chain's first matmul. A chain is a matmul ``M2``
(a ``dot`` or a ``convolution``) with an operand computed from the result of a matmul ``M1`` in the
same fusion (nested fusions opened). ``M1 = A x B`` contracts ``K1`` elements; ``M2`` contracts ``K2``.
The input re-read is the one whose *other* input's free size (its elements over ``K1``) is ``K2``:
the chain is sliced along the dimension ``M2`` contracts, and every slice needs all of that input.
Neither matches in an attention fusion ``p @ (x @ Wv)`` (``M2`` contracts the tokens, ``x``'s own
free dimension): it is not charged, as the chip showed (``gpt2xl_remat``'s ``fusion.424``).
XLA writes a TPU matmul as a ``convolution`` with its operands in either order, so sizes decide, not
operand positions. Parameters flow through any instruction (elementwise work, converts, slices).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from hloscope.hlo.model import Computation, Instruction

__all__ = ["ChainFinder"]

_MATMULS = frozenset({"dot", "convolution"})

#: ``reach(name)``: the top computation's parameter numbers that flow into a value (by its name).
Reach = Callable[[str], frozenset[int]]


def _elements(ins: Instruction) -> int:
    n = 1
    for d in ins.shape.dims:
        n *= d
    return n


class ChainFinder:
    """The chains of one module's fused computations, each walked once (answers cached by name).

    computations: the module's, by name (to open nested fusions). flops: a ``dot``'s or a
    ``convolution``'s FLOPs (the cost model's), from which each matmul's contracted size is read.
    """

    def __init__(self, computations: Mapping[str, Computation], flops: Callable[[Instruction], float]) -> None:
        self.computations = computations
        self.flops = flops
        self._has_matmul: dict[str, bool] = {}
        self._chain: dict[str, frozenset[int]] = {}

    def _nested(self, ins: Instruction) -> Computation | None:
        if ins.opcode != "fusion" or not ins.called_computations:
            return None
        return self.computations.get(ins.called_computations[0])

    def has_matmul(self, comp: Computation) -> bool:
        got = self._has_matmul.get(comp.name)
        if got is None:
            self._has_matmul[comp.name] = False  # guards against recursion
            got = any(self._is_matmul(i) for i in comp.instructions)
            self._has_matmul[comp.name] = got
        return got

    def _is_matmul(self, ins: Instruction) -> bool:
        if ins.opcode in _MATMULS:
            return True
        nested = self._nested(ins)
        return nested is not None and self.has_matmul(nested)

    @staticmethod
    def _reach(comp: Computation) -> Reach:
        """Which of ``comp``'s parameters flow into each of its values, computed in order."""
        reach: dict[str, frozenset[int]] = {}
        for ins in comp.instructions:
            if ins.opcode == "parameter":
                reach[ins.name] = frozenset({int(ins.literal or 0)})
            else:
                got: frozenset[int] = frozenset()
                for o in ins.operands:
                    got |= reach.get(o, frozenset())
                reach[ins.name] = got
        return lambda name: reach.get(name, frozenset())

    def _contracted(self, ins: Instruction) -> float:
        """Elements one output element of matmul ``ins`` sums over (its FLOPs over twice its outputs)."""
        out = _elements(ins)
        return self.flops(ins) / (2.0 * out) if out else 0.0

    def _into(self, fusion: Instruction, nested: Computation, to_top: Reach) -> Reach:
        """The map from a value of ``nested`` (called by ``fusion``) to the top computation's
        parameters: through the nested parameters it reads, the caller's operands, ``to_top``."""
        inner = self._reach(nested)

        def mapped(name: str) -> frozenset[int]:
            out: frozenset[int] = frozenset()
            for i in inner(name):
                if i < len(fusion.operands):
                    out |= to_top(fusion.operands[i])
            return out
        return mapped

    def _matmuls_at(self, ins: Instruction, comp: Computation,
                    to_top: Reach) -> list[tuple[Instruction, Computation, Reach]] | None:
        """``ins`` of ``comp`` if it is a matmul, or every matmul of the nested fusion it is, each with the
        computation it lies in and the map from that computation's values to the top computation's
        parameters; None when ``ins`` holds no matmul."""
        if ins.opcode in _MATMULS:
            return [(ins, comp, to_top)]
        nested = self._nested(ins)
        if nested is None or not self.has_matmul(nested):
            return None
        into = self._into(ins, nested, to_top)
        return [m for x in nested.instructions for m in self._matmuls_at(x, nested, into) or ()]

    def _upstream(self, comp: Computation, start: str, reach: Reach) -> list[tuple[Instruction, Computation, Reach]]:
        """The nearest matmuls upstream of value ``start`` of ``comp`` (a walk up the operands that
        stops at a matmul or a nested fusion holding one)."""
        found: list[tuple[Instruction, Computation, Reach]] = []
        seen: set[str] = set()
        todo = [start]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            ins = comp.by_name.get(name)
            if ins is None:
                continue
            matmuls = self._matmuls_at(ins, comp, reach)
            if matmuls is not None:
                found.extend(matmuls)
            else:
                todo.extend(ins.operands)
        return found

    def _reread(self, m1: Instruction, comp: Computation, k2: float) -> list[str]:
        """The operand of first matmul ``m1`` the chain reads once per slice (module docstring)."""
        k1 = self._contracted(m1)
        if k1 <= 0 or len(m1.operands) < 2:
            return []
        a, b = (comp.by_name.get(o) for o in m1.operands[:2])
        if a is None or b is None:
            return []
        out = []
        if abs(_elements(b) / k1 - k2) < 0.5:
            out.append(a.name)
        if abs(_elements(a) / k1 - k2) < 0.5:
            out.append(b.name)
        return out

    def inputs(self, comp: Computation) -> frozenset[int]:
        """The parameter numbers of fused computation ``comp`` that flow into a chain's re-read input
        (module docstring); empty when ``comp`` holds no chain."""
        got = self._chain.get(comp.name)
        if got is not None:
            return got
        self._chain[comp.name] = frozenset()  # guards against recursion
        derived: dict[str, bool] = {}  # a value computed from a matmul's result, in this computation
        out: set[int] = set()
        reach = self._reach(comp)
        for ins in comp.instructions:
            if ins.opcode in _MATMULS:
                k2 = self._contracted(ins)
                for o in ins.operands[:2]:
                    if derived.get(o, False):
                        for m1, where, to_top in self._upstream(comp, o, reach):
                            for name in self._reread(m1, where, k2):
                                out |= to_top(name)
            nested = self._nested(ins)
            if nested is not None:
                for i in self.inputs(nested):  # a chain inside the nested fusion
                    if i < len(ins.operands):
                        out |= reach(ins.operands[i])
            derived[ins.name] = self._is_matmul(ins) or any(derived.get(o, False) for o in ins.operands)
        got = self._chain[comp.name] = frozenset(out)
        return got
