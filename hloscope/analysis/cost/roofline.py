"""A simple roofline cost model, in microseconds. Every figure is an estimate.

- An op's time is ``max(flops / peak_flops(dtype), hbm_bytes / hbm_bandwidth)``, both figures the
  cost profile's (on a TPU, the shares of its datasheet the chip achieves: docs/cost-model.md).
- FLOPs: ``2 * prod(result dims) * prod(contracting dims)`` for each ``dot``
  (inside fusions too, recursively), GEMM custom calls read their contracting
  dims from ``backend_config``; a ``convolution`` is read from its ``dim_labels`` and
  ``window`` (``hloscope.analysis.cost.convolution``: a window of 1 is a dot, as TPU XLA
  writes every matmul). Other ops: 0 FLOPs.
- HBM bytes: what the op really moves (:meth:`CostModel.moved_bytes`), not the
  sizes of its operands. A fusion's body is read per parameter: a parameter read
  only through ``dynamic-slice``/``slice``/``gather`` costs the slices, one that is
  the buffer of an in-place ``dynamic-update-slice`` costs nothing (the update is
  written), ``bitcast``/``reshape``/``get-tuple-element`` follow to their users, a
  nested fusion costs what its body reads; any other use reads the whole
  parameter, once. Broadcast scalars and ``iota`` read (next to) nothing. Each
  output costs its size, or its update for an in-place ``dynamic-update-slice``.
  Buffers in host memory are counted apart (host bytes), never as HBM.
- What differs by platform (the peak by type, a matmul's efficiency, the time every op
  adds, memory on the chip, collectives) is asked of the target's cost profile
  (``hloscope.analysis.cost.profile``): on a GPU every kernel adds ``Target.kernel_launch_us``
  and a GEMM's FLOPs are divided by the efficiency its output tiling reaches on the SMs
  (``hloscope.analysis.cost.kernels``).
  Fused attention custom calls (Pallas Triton ``mha_*``, cuDNN ``__cudnn$fmha*``) count
  the FLOPs of their attention matmuls (``kernels.attention_flops``).
- A fused matmul chain (an MLP's two matmuls in one TPU fusion) whose first matmul's activation lies
  in HBM adds that input's bytes at the profile's ``chain_input_rate`` (``hloscope.analysis.cost.chains``).
- A host transfer takes ``host_dma_latency_us + bytes / host link bandwidth`` (one
  direction; achieved or peak, shared among the GPUs on one link).
- A collective is a ring over its replica group on NVLink or the network
  (``hloscope.analysis.cost.collectives``; the profile's).
- An estimate beyond what the op's shapes allow at 1 % of peak is flagged
  (``OpCost.implausible``, :meth:`CostModel.implausible`; ``hloscope.analysis.cost.plausible``).
- ``measured``: µs per instruction name from a profile (``hloscope.analysis.cost.calibration``)
  replace the model's figure for those instructions.
Caches, contention and overlap between kernels are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from hloscope.analysis.cost.chains import ChainFinder
from hloscope.analysis.cost.collectives import first_replica_group
from hloscope.analysis.cost.convolution import convolution_flops, read_convolution, window_sizes
from hloscope.analysis.cost.kernels import attention_flops, dot_dims
from hloscope.analysis.cost.plausible import ImplausibleOp, ceiling_us, matmul_flops_ceiling
from hloscope.analysis.cost.profile import CostProfile, cost_profile
from hloscope.analysis.structure.callgraph import callee_name
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.opclass import (
    COLLECTIVE_OPCODES,
    collective_kind,
    custom_call_target,
    is_done,
    is_free,
    is_start,
    value_shape,
)
from hloscope.hlo.model import Computation, Instruction
from hloscope.hlo.shape import HOST_MEMORY_SPACE, Shape
from hloscope.targets import DEFAULT_LINK_MODE, Target
from hloscope.vocab import Direction, LinkMode

#: Ops that only rename their operand's bytes: a read through them is a read of what their users read.
_VIEW_OPCODES = frozenset({"bitcast", "reshape", "get-tuple-element"})
_LHS_CONTRACTING_RE = re.compile(r"(?:^|, )lhs_contracting_dims=\{([^}]*)\}")
#: TPU custom calls that only rename their operands' bytes: ``ConcatBitcast`` concatenates operands XLA placed
#: end to end (the chip times each at 0.0 us: fixtures/measured/tpu_v5e_blocks/gpt2xl_off, 20 a step).
_VIEW_CUSTOM_CALLS = frozenset({"ConcatBitcast"})
#: Ops that read only the part of operand 0 they return.
_SLICING_OPCODES = frozenset({"dynamic-slice", "slice", "gather"})


@dataclass(frozen=True)
class OpCost:
    """flops: floating-point operations; hbm_bytes: bytes read+written; us: estimate.
    memory_bound: its HBM time is at least its compute time and its launch (HBM is busy for at
    least half of its run). implausible: ``us`` exceeds what the op's shapes allow at 1 % of
    peak (``hloscope.analysis.cost.plausible``): a miscount, not a figure to print."""

    flops: float
    hbm_bytes: int
    us: float
    memory_bound: bool = False
    implausible: bool = False


@dataclass(frozen=True, slots=True)
class MovedBytes:
    """Bytes one execution of an instruction reads and writes, by memory.

    device_read / device_write: HBM bytes. host_read / host_write: bytes in host
    memory (for a transfer, what crosses the host link). chip: bytes read and written in the
    chip's own memory (a TPU's VMEM ``S(1)`` and SMEM ``S(2)``), neither HBM nor host.
    """

    device_read: int
    device_write: int
    host_read: int = 0
    host_write: int = 0
    chip: int = 0

    @property
    def device(self) -> int:
        """HBM bytes read plus written."""
        return self.device_read + self.device_write

    @property
    def host(self) -> int:
        """Host-memory bytes read plus written."""
        return self.host_read + self.host_write


_FREE_COST = OpCost(0.0, 0, 0.0)


def _contracting_size(ins: Instruction, lhs_dims: tuple[int, ...]) -> int:
    """The product of a ``dot``'s left contracting dimensions (``lhs_dims``: its left operand's). A regex
    over the raw text: splitting the whole attribute list (backend_config, metadata) for one short
    attribute costs more than the rest of the op's estimate."""
    found = _LHS_CONTRACTING_RE.search(ins.attr_text)
    size = 1
    for d in (found.group(1) if found else "").split(","):
        if d.strip().isdigit() and int(d) < len(lhs_dims):
            size *= lhs_dims[int(d)]
    return size


class CostModel:
    """Roofline estimates for one module on one target.

    link_mode: the host-link figure read, ``achieved`` (default) or ``peak`` (:class:`LinkMode`);
    :meth:`link_bandwidth` and :meth:`transfer_us` are the one place a transfer's time is
    made (the windows and the simulation read them).
    index: the module's shared :class:`ModuleIndex` (trip counts, users); the model reads its module.
    measured: µs per instruction name (a profile) that replace the model's figure for those.
    profile: what the platform decides (``hloscope.analysis.cost.profile``); the target's by default.
    """

    def __init__(self, index: ModuleIndex, target: Target, host_space: int = HOST_MEMORY_SPACE,
                 link_mode: LinkMode | str = DEFAULT_LINK_MODE, measured: Mapping[str, float] | None = None,
                 profile: CostProfile | None = None) -> None:
        self.index = index
        self.module = index.module
        self.target = target
        self.profile = profile if profile is not None else cost_profile(target)
        self.host = host_space
        target.host_link_bandwidth(Direction.TO_HOST, link_mode)  # refuses an unknown mode now
        self.link_mode = LinkMode(link_mode)
        self.measured: Mapping[str, float] = measured or {}
        self._comp_flops: dict[str, tuple[float, str]] = {}
        self._comp_eff_flops: dict[str, float] = {}  # FLOPs divided by each dot's tiling efficiency
        self._comp_ceiling: dict[str, float] = {}  # the FLOPs its shapes allow, over the same efficiencies
        self._body_us: dict[str, float] = {}
        self._param_reads: dict[str, tuple[int, ...]] = {}
        self._views: dict[str, bool] = {}  # fused computations that only rename their parameter
        self._root_writes: dict[str, tuple[int, ...] | None] = {}
        self._moved: dict[Instruction, MovedBytes] = {}
        self._op_cost: dict[Instruction, OpCost] = {}
        self._ins_us: dict[Instruction, float] = {}
        self._sizes: dict[int, int] = {}  # id(shape) -> byte_size; the module keeps its shapes alive
        self._chains = ChainFinder(self.module.computations, lambda x: self._dot_flops(x)[0])

    def _nbytes(self, shape: Shape) -> int:
        """``shape.byte_size``, once per shape object of the module (the parser interns shapes by
        their text, so a module holds a few hundred distinct ones)."""
        got = self._sizes.get(id(shape))
        if got is None:
            got = self._sizes[id(shape)] = shape.byte_size
        return got

    def _dot_flops(self, ins: Instruction) -> tuple[float, str]:
        table = self.module.computations[ins.computation].by_name
        lhs = table.get(ins.operands[0]) if ins.operands else None
        if lhs is None:
            return 0.0, ins.shape.element_type
        if ins.opcode == "convolution":
            rhs = table.get(ins.operands[1]) if len(ins.operands) > 1 else None
            if rhs is None or not rhs.shape.dims:
                return 0.0, lhs.shape.element_type
            conv = read_convolution(ins.attr_text)
            got = (convolution_flops(conv, lhs.shape.dims, rhs.shape.dims, ins.shape.dims)
                   if conv is not None else None)
            if got is None:  # no dim_labels: the kernel's output features taken as its last dimension
                got = 2.0 * ins.shape.num_elements * rhs.shape.num_elements / max(rhs.shape.dims[-1], 1)
            return got, lhs.shape.element_type
        contracting = _contracting_size(ins, lhs.shape.dims)
        dtype = lhs.shape.element_type
        rhs = table.get(ins.operands[1]) if len(ins.operands) > 1 else None
        if (rhs is not None and rhs.shape.element_type != dtype
                and self.profile.peak_flops(rhs.shape.element_type) < self.profile.peak_flops(dtype)):
            dtype = rhs.shape.element_type  # mixed inputs run at the slower one's rate
        return 2.0 * ins.shape.num_elements * contracting, dtype

    def _dot_efficiency(self, ins: Instruction) -> float:
        """The fraction of peak a ``dot``'s or ``convolution``'s output reaches (the profile's
        ``matmul_efficiency``: a convolution's output is ``(elements / output features) x output
        features``, as an implicit GEMM)."""
        if not ins.operands:
            return 1.0
        table = self.module.computations[ins.computation].by_name
        if ins.opcode == "convolution":
            conv = read_convolution(ins.attr_text)
            rhs = table.get(ins.operands[1]) if len(ins.operands) > 1 else None
            if conv is None or rhs is None or "o" not in conv.rhs or len(conv.rhs) != len(rhs.shape.dims):
                return 1.0
            n = max(1, rhs.shape.dims[conv.rhs.index("o")])
            k = max(1, rhs.shape.num_elements // n)  # input features x window: what each output sums over
            return (self.profile.matmul_efficiency(1, max(1, ins.shape.num_elements // n), n)
                    * self.profile.contraction_efficiency(k))
        if ins.opcode != "dot":
            return 1.0
        lhs = table.get(ins.operands[0])
        if lhs is None:
            return 1.0
        batch, m, n = dot_dims(ins.attr_text, lhs.shape.dims, ins.shape.num_elements)
        k = _contracting_size(ins, lhs.shape.dims)
        return self.profile.matmul_efficiency(batch, m, n) * self.profile.contraction_efficiency(k)

    def _matmul_ceiling(self, ins: Instruction) -> float:
        """The most FLOPs a ``dot``, ``convolution`` or GEMM custom call's shapes allow
        (``plausible``: read without its dimension numbers)."""
        table = self.module.computations[ins.computation].by_name
        shapes = [table[o].shape for o in ins.operands[:2] if o in table]
        if len(shapes) < 2:
            return 0.0
        out = ins.shape.tuple_element(0) if ins.shape.is_tuple else ins.shape
        out_elements = out.num_elements if out is not None else 0
        if ins.opcode == "convolution" and any(w != 1 for w in window_sizes(ins.attr_text)):
            return 2.0 * out_elements * shapes[1].num_elements
        return matmul_flops_ceiling(shapes[0].num_elements, shapes[1].num_elements, out_elements)

    def computation_flops(self, name: str) -> tuple[float, str]:
        """FLOPs of dots/convolutions in a (fused) computation, and their dtype."""
        got = self._comp_flops.get(name)
        if got is None:
            self._scan(self.module.computations[name])
            got = self._comp_flops[name]
        return got

    def _scan(self, body: Computation) -> None:
        """One walk over a (fused) computation: its FLOPs (``computation_flops``) and what it
        reads of each parameter (``_body_param_reads``), both cached by computation name."""
        name = body.name
        self._comp_flops[name] = (0.0, "f32")  # guards against recursion
        self._param_reads[name] = ()
        self._root_writes[name] = None
        total, dtype = 0.0, ""
        effective = ceiling = 0.0
        params: dict[int, Instruction] = {}
        updates = False  # any dynamic-update-slice: only those can update a buffer in place
        for x in body.instructions:
            op = x.opcode
            if op == "parameter":
                params[int(x.literal or 0)] = x
                continue
            if op == "dynamic-update-slice":
                updates = True
                continue
            if op == "dot" or op == "convolution":
                f, t = self._dot_flops(x)
                eff = self._dot_efficiency(x) if f else 1.0
                e = f / eff if f else 0.0
                ceiling += self._matmul_ceiling(x) / eff if f else 0.0
            elif op == "fusion" or (op == "custom-call" and x.called_computations):
                f, t, e = 0.0, "", 0.0
                for c in x.called_computations:
                    cf, ct = self.computation_flops(c)
                    f += cf
                    e += self._comp_eff_flops.get(c, cf)
                    ceiling += self._comp_ceiling.get(c, cf)
                    t = t or (ct if cf else "")
            else:
                continue
            total += f
            effective += e
            if f:  # the math's type: a nested fusion without math (a bitcast fusion) has none
                dtype = dtype or t
        self._comp_flops[name] = (total, dtype or "f32")
        self._comp_eff_flops[name] = effective
        self._comp_ceiling[name] = ceiling
        in_place = self._in_place_updates(body) if updates else set()
        users = self.index.users_map(name)
        self._param_reads[name] = tuple(
            self._value_reads(body, params[i], users, in_place, 0) if i in params else 0
            for i in range(max(params, default=-1) + 1))
        root = body.root
        writes: tuple[int, ...] | None = None
        if root is not None:
            outs = [body.by_name[o] for o in root.operands] if root.opcode == "tuple" else [root]
            if all(not o.shape.is_tuple for o in outs):
                writes = (tuple(self._output_bytes(body, o, in_place) for o in outs) if in_place
                          else tuple(self._nbytes(o.shape) for o in outs))  # nothing written in place
        self._root_writes[name] = writes

    def _gemm_flops(self, ins: Instruction) -> tuple[float, str, float]:
        """FLOPs, input type and tiling efficiency of a cuBLAS/cuBLASLt GEMM custom call."""
        table = self.module.computations[ins.computation].by_name
        lhs = table.get(ins.operands[0]) if ins.operands else None
        if lhs is None:
            return 0.0, "bf16", 1.0
        cfg = ins.backend_config.get("gemm_backend_config", {})
        numbers = cfg.get("dot_dimension_numbers", {})
        dims = [int(d) for d in numbers.get("lhs_contracting_dimensions", [])]
        batch_dims = [int(d) for d in numbers.get("lhs_batch_dimensions", [])]
        contracting = 1
        for d in dims:
            if d < len(lhs.shape.dims):
                contracting *= lhs.shape.dims[d]
        result = ins.shape.tuple_element(0) if ins.shape.is_tuple else ins.shape
        n = result.num_elements if result is not None else 0
        batch = m = 1
        for i, d in enumerate(lhs.shape.dims):
            if i in batch_dims:
                batch *= d
            elif i not in dims:
                m *= d
        eff = self.profile.matmul_efficiency(batch, m, max(1, n // max(1, batch * m)))
        dtype = lhs.shape.element_type
        rhs = table.get(ins.operands[1]) if len(ins.operands) > 1 else None
        if rhs is not None and self.profile.peak_flops(rhs.shape.element_type) < self.profile.peak_flops(dtype):
            dtype = rhs.shape.element_type
        return 2.0 * n * contracting, dtype, eff

    def hbm_bytes(self, ins: Instruction) -> int:
        """HBM bytes one execution of ``ins`` reads and writes (see :meth:`moved_bytes`)."""
        return self.moved_bytes(ins).device

    def moved_bytes(self, ins: Instruction) -> MovedBytes:
        """Bytes ``ins`` really reads and writes per execution, split by memory.

        A fusion (or an async op wrapping a computation) is charged for what its
        body reads of each parameter and writes of each output; any other op for
        its operands and result, with the same slice and in-place rules.
        """
        got = self._moved.get(ins)
        if got is not None:
            return got
        table = self.module.computations[ins.computation].by_name
        operands = [table[o].shape if o in table else None for o in ins.operands]
        result = ins.shape
        called = ins.called_computations
        body = self.module.computations.get(called[0]) if called else None
        if ins.opcode in ("fusion", "async-start") and body is not None:
            if ins.opcode == "async-start":
                result = value_shape(ins)
            reads = self._body_param_reads(body)
            writes = self._body_root_writes(body)
        else:
            reads = self._op_reads(ins)
            writes = self._op_writes(ins)
        dev_r = dev_w = host_r = host_w = chip = 0
        host = self.host
        on_chip = self.profile.on_chip  # memory on the chip (TPU VMEM): neither HBM nor host bytes
        nreads = len(reads)
        for i, shape in enumerate(operands):
            if shape is None:
                continue
            n = reads[i] if i < nreads else self._nbytes(shape)
            if shape.element_type != "tuple":
                if shape.memory_space == host:
                    host_r += n
                elif not (shape.memory_space and on_chip(shape.memory_space)):
                    dev_r += n
                else:
                    chip += n
            elif n == self._nbytes(shape):
                h = sum(self._nbytes(leaf) for leaf in shape.leaves() if leaf.memory_space == host)
                c = sum(self._nbytes(leaf) for leaf in shape.leaves()
                        if leaf.memory_space and leaf.memory_space != host and on_chip(leaf.memory_space))
                host_r += h
                chip += c
                dev_r += n - h - c
            else:
                dev_r += n
        leaves = (result,) if result.element_type != "tuple" else result.leaves()
        per_leaf = writes is not None and len(writes) == len(leaves)
        for j, leaf in enumerate(leaves):
            n = writes[j] if per_leaf and writes is not None else self._nbytes(leaf)
            if leaf.memory_space == host:
                host_w += n
            elif not (leaf.memory_space and on_chip(leaf.memory_space)):
                dev_w += n
            else:
                chip += n
        got = MovedBytes(dev_r, dev_w, host_r, host_w, chip)
        self._moved[ins] = got
        return got

    def _op_reads(self, ins: Instruction) -> tuple[int, ...]:
        """Bytes a single (unfused) op reads of each operand."""
        table = self.module.computations[ins.computation].by_name
        out = []
        for i, o in enumerate(ins.operands):
            src = table.get(o)
            full = self._nbytes(src.shape) if src is not None else 0
            if i == 0 and ins.opcode in _SLICING_OPCODES:
                out.append(min(full, self._nbytes(ins.shape)))
            elif i == 0 and ins.opcode == "dynamic-update-slice":
                out.append(0)  # updated in place: only the update is written
            else:
                out.append(full)
        return tuple(out)

    def _op_writes(self, ins: Instruction) -> tuple[int, ...] | None:
        if ins.opcode == "dynamic-update-slice" and len(ins.operands) > 1:
            upd = self.module.computations[ins.computation].by_name.get(ins.operands[1])
            if upd is not None:
                return (self._nbytes(upd.shape),)
        return None

    def _body_param_reads(self, body: Computation) -> tuple[int, ...]:
        """Bytes a fused body reads of each of its parameters (by parameter number)."""
        got = self._param_reads.get(body.name)
        if got is None:
            self._scan(body)
            got = self._param_reads[body.name]
        return got

    def _value_reads(self, body: Computation, v: Instruction, users: dict[str, list[Instruction]],
                     in_place: set[str], depth: int) -> int:
        """Bytes the body reads of value ``v`` (a parameter or a view of one)."""
        full = self._nbytes(v.shape)
        total = 0
        for u in users.get(v.name, ()):
            op = u.opcode
            if op in _VIEW_OPCODES and depth < 16:
                total += self._value_reads(body, u, users, in_place, depth + 1)
            elif op in _SLICING_OPCODES and u.operands[0] == v.name:
                total += self._nbytes(u.shape)
            elif op == "dynamic-update-slice" and u.operands[0] == v.name and u.name in in_place:
                pass  # the buffer updated in place is not read
            elif op == "fusion" and u.called_computations and u.called_computations[0] in self.module.computations:
                callee = self.module.computations[u.called_computations[0]]
                if depth < 16 and self._is_view(callee):  # a nested bitcast fusion (TPU): read where it is used
                    total += self._value_reads(body, u, users, in_place, depth + 1)
                    continue
                inner = self._body_param_reads(callee)
                total += sum(inner[k] if k < len(inner) else full for k, o in enumerate(u.operands) if o == v.name)
            else:
                return full
            if total >= full:
                return full
        return total

    def _is_view(self, body: Computation) -> bool:
        """A fused computation of one parameter whose root is that parameter through ``bitcast``s and
        ``reshape``s: it renames bytes and moves none (TPU XLA nests such fusions in its matmul fusions)."""
        got = self._views.get(body.name)
        if got is None:
            x = body.root
            while x is not None and x.opcode in ("bitcast", "reshape") and x.operands:
                x = body.by_name.get(x.operands[0])
            got = self._views[body.name] = x is not None and x.opcode == "parameter"
        return got

    def _in_place_updates(self, body: Computation) -> set[str]:
        """dynamic-update-slices of a body that write in place: their buffer is a
        parameter and their result is an output (through views and the root tuple)."""
        root = body.root
        if root is None:
            return set()
        outs = list(root.operands) if root.opcode == "tuple" else [root.name]
        found: set[str] = set()
        for name in outs:
            x = body.by_name.get(name)
            while x is not None and x.opcode in ("bitcast", "reshape") and x.operands:
                x = body.by_name.get(x.operands[0])
            if x is None or x.opcode != "dynamic-update-slice" or len(x.operands) < 2:
                continue
            buf = body.by_name.get(x.operands[0])
            while buf is not None and buf.opcode in ("bitcast", "reshape") and buf.operands:
                buf = body.by_name.get(buf.operands[0])
            if buf is not None and buf.opcode == "parameter":
                found.add(x.name)
        return found

    def _body_root_writes(self, body: Computation) -> tuple[int, ...] | None:
        """Bytes a fused body writes per output leaf; None if its root is not a flat tuple/array."""
        if body.name not in self._root_writes:
            self._scan(body)
        return self._root_writes[body.name]

    def _output_bytes(self, body: Computation, out: Instruction, in_place: set[str]) -> int:
        x: Instruction | None = out
        while x is not None and x.opcode in ("bitcast", "reshape") and x.operands:
            x = body.by_name.get(x.operands[0])
        if x is not None and x.name in in_place:
            upd: Shape = body.by_name[x.operands[1]].shape
            return self._nbytes(upd)
        return self._nbytes(out.shape)

    def op_cost(self, ins: Instruction) -> OpCost:
        """Estimated cost of one execution of a compute instruction (computed once per instruction:
        the windows and the simulation read the same figures)."""
        got = self._op_cost.get(ins)
        if got is None:
            got = self._op_cost[ins] = self._compute_op_cost(ins)
        return got

    def _compute_op_cost(self, ins: Instruction) -> OpCost:
        if is_free(ins):
            return _FREE_COST
        flops, effective, dtype, nbytes = self.roofline_terms(ins)
        profile = self.profile
        peak, bandwidth, launch = profile.peak_flops(dtype), profile.hbm_bandwidth, profile.launch_us
        compute = effective / peak * 1e6
        memory = nbytes / bandwidth * 1e6
        # memory-bound: HBM is its limit and keeps busy for at least half its run (launch included)
        bound = nbytes > 0 and memory >= compute and memory >= launch
        measured = self.measured_us(ins)
        if measured is not None:
            return OpCost(flops, nbytes, measured, bound)
        us = max(compute, memory) + launch
        implausible = bool(flops) and us > ceiling_us(self._flops_ceiling(ins, effective), nbytes, peak, bandwidth,
                                                      launch)
        # the bytes it streams through the chip's own memory (a TPU's VMEM), at the rate the chip moves them;
        # a view custom call (ConcatBitcast: its operands already lie end to end) moves none
        view = ins.opcode == "custom-call" and custom_call_target(ins) in _VIEW_CUSTOM_CALLS
        on_chip = 0.0 if view else profile.on_chip_us(self.moved_bytes(ins).chip)
        if on_chip > us - launch:
            us = on_chip + launch
        if flops and profile.chain_input_rate > 0:  # a fused matmul chain re-reading its input in HBM
            us += profile.chain_input_us(self.chain_input_bytes(ins))
        return OpCost(flops, nbytes, us, bound, implausible)

    def _fused_body(self, ins: Instruction) -> Computation | None:
        if ins.opcode != "fusion" or not ins.called_computations:
            return None
        return self.module.computations.get(ins.called_computations[0])

    def chain_inputs(self, ins: Instruction) -> frozenset[int]:
        """The operand numbers of fusion ``ins`` that feed a fused matmul chain's re-read input
        (``hloscope.analysis.cost.chains``); empty for anything else."""
        body = self._fused_body(ins)
        return self._chains.inputs(body) if body is not None else frozenset()

    def chain_input_bytes(self, ins: Instruction) -> int:
        """HBM bytes of the input a fused matmul chain in fusion ``ins`` reads again per slice of its
        intermediate (:meth:`chain_inputs`; 0 for anything else, and for an input in VMEM)."""
        params = self.chain_inputs(ins)
        body = self._fused_body(ins)
        if not params or body is None:
            return 0
        table = self.module.computations[ins.computation].by_name
        reads = self._body_param_reads(body)
        on_chip = self.profile.on_chip
        total = 0
        for i in params:
            src = table.get(ins.operands[i]) if i < len(ins.operands) else None
            if src is None or src.shape.is_tuple:
                continue
            space = src.shape.memory_space
            if space == self.host or (space and on_chip(space)):
                continue
            total += reads[i] if i < len(reads) else self._nbytes(src.shape)
        return total

    def _flops_ceiling(self, ins: Instruction, effective: float) -> float:
        """The most FLOPs one execution's shapes allow, over each matmul's efficiency as the estimate
        divides them (``plausible``); ops the shapes do not bound (attention kernels) keep ``effective``."""
        op = ins.opcode
        if op in ("dot", "convolution"):
            return self._matmul_ceiling(ins) / self._dot_efficiency(ins)
        if op == "fusion":
            for c in ins.called_computations:
                self.computation_flops(c)
            return sum(self._comp_ceiling.get(c, 0.0) for c in ins.called_computations)
        if op == "custom-call" and not ins.called_computations:
            target = custom_call_target(ins).lower()
            if "gemm" in target or "matmul" in target:
                _, _, eff = self._gemm_flops(ins)
                return self._matmul_ceiling(ins) / eff
        return effective

    def implausible(self) -> tuple[ImplausibleOp, ...]:
        """The ops priced so far whose estimate is implausible (``OpCost.implausible``), largest first."""
        found = []
        for ins, c in self._op_cost.items():
            if c.implausible:
                flops, effective, dtype, nbytes = self.roofline_terms(ins)
                ceiling = self._flops_ceiling(ins, effective)
                limit = ceiling_us(ceiling, nbytes, self.profile.peak_flops(dtype), self.profile.hbm_bandwidth,
                                   self.profile.launch_us)
                found.append(ImplausibleOp(ins.name, ins.computation, c.us, limit, flops, ceiling, nbytes))
        return tuple(sorted(found, key=lambda x: (-x.us, x.instruction)))

    def roofline_terms(self, ins: Instruction) -> tuple[float, float, str, int]:
        """(FLOPs, FLOPs over the tiling efficiency, the math's element type, HBM bytes) of one
        execution of a compute instruction: what the roofline divides by the peak and the
        bandwidth (``hloscope.analysis.measured.calibrate`` fits those two against measured times)."""
        flops, dtype = 0.0, ins.shape.element_type
        effective = 0.0  # FLOPs over the tiling efficiency: what the peak is charged with
        if ins.opcode in ("dot", "convolution"):
            flops, dtype = self._dot_flops(ins)
            effective = flops / self._dot_efficiency(ins) if flops else 0.0
        elif ins.opcode == "fusion":
            for c in ins.called_computations:
                f, t = self.computation_flops(c)
                flops += f
                effective += self._comp_eff_flops.get(c, f)
                dtype = t if f else dtype
        elif ins.opcode == "custom-call":
            name = custom_call_target(ins)
            target = name.lower()
            if "gemm" in target or "matmul" in target:
                flops, dtype, eff = self._gemm_flops(ins)
                effective = flops / eff if flops else 0.0
            elif name == "__gpu$xla.gpu.triton" or target.startswith("__cudnn$fmha"):
                table = self.module.computations[ins.computation].by_name
                shapes = [table[o].shape for o in ins.operands if o in table]
                attention = attention_flops(name, ins.attr_text, [sh.dims for sh in shapes],
                                            ins.backend_config if name != "__gpu$xla.gpu.triton" else {})
                if attention:
                    flops = effective = attention
                    dtype = shapes[0].element_type
        return flops, effective, dtype, self.hbm_bytes(ins)

    def link_bandwidth(self, direction: Direction) -> float:
        """Bytes/s of one GPU's host link in ``direction`` under this model's link mode."""
        return self.target.host_link_bandwidth(direction, self.link_mode)

    @property
    def transfer_latency_us(self) -> float:
        """The DMA setup latency of a host copy before its bytes flow (``Target.host_dma_latency_us``)."""
        return self.target.host_dma_latency_us

    def transfer_us(self, nbytes: int, direction: Direction) -> float:
        """Time of a transfer alone on the link: :attr:`transfer_latency_us` plus its bytes at
        :meth:`link_bandwidth`, microseconds."""
        return self.transfer_latency_us + nbytes / self.link_bandwidth(direction) * 1e6

    def measured_us(self, ins: Instruction) -> float | None:
        """The profile's time for ``ins``: by its name, or, for an ``async-start`` that calls a
        wrapped computation (``async-start(...), calls=%wrapped_all-gather``), by the name of an op
        in it: the profile names such a collective after the wrapped op (its thunk's name), not
        after the start. None when the profile does not time it."""
        got = self.measured.get(ins.name)
        if got is None and self.measured and ins.opcode == "async-start":
            for c in ins.called_computations:
                comp = self.module.computations.get(c)
                for inner in comp.instructions if comp is not None else ():
                    got = self.measured.get(inner.name)
                    if got is not None:
                        return got
        return got

    def collective_us(self, ins: Instruction) -> float:
        """Estimated time of one execution of a collective: a ring over its first replica
        group (``hloscope.analysis.cost.collectives``), or its measured time."""
        kind = collective_kind(ins) or (ins.opcode if ins.opcode in COLLECTIVE_OPCODES else "")
        if not kind:
            return 0.0
        measured = self.measured_us(ins)
        if measured is not None:
            return measured
        nbytes = self._nbytes(value_shape(ins))
        group = first_replica_group(ins.attr_text, self.module.num_partitions)
        if kind == "reduce-scatter":
            nbytes *= len(group)  # the full buffer is the operand: N results
        return self.profile.collective_us(kind, nbytes, group, self.module.num_partitions)

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
        got = self._ins_us.get(ins)
        if got is None:
            got = self._ins_us[ins] = self._instruction_us(ins)
        return got

    def _instruction_us(self, ins: Instruction) -> float:
        if is_free(ins) or is_start(ins) or is_done(ins) or ins.opcode == "async-update":
            return 0.0
        if ins.opcode == "while":
            trip = self.index.trip_count(ins)
            # XLA's count: a zero-trip loop runs its body no time (the call graph's executions agree);
            # an unknown count is taken as one trip, as everywhere (Summary.unknown_trip_counts says so)
            return (1 if trip is None else trip) * self.computation_us(callee_name(ins, "body"))
        if ins.opcode in ("call", "conditional"):
            return max((self.computation_us(c) for c in ins.called_computations), default=0.0)
        if collective_kind(ins):
            return 0.0
        return self.op_cost(ins).us
