"""Every cost the simulation reads, computed once per op before it runs (:class:`CostTable`).

``cost_table(module, cost, transfers, callgraph) -> CostTable``: each computation the step runs, its
schedule classified into step codes with each op's unscaled time (the programs), and what the event
loop reads beside the times: each op's HBM bytes, which ops are memory-bound, each conditional's
branch, the host links' figures and each host transfer's time alone on its link. The event loop
(``hloscope.analysis.simulate.engine``) and the pass (``hloscope.analysis.simulate.step``) read the
table, never the cost model: the table asks the cost model's public methods
(:class:`~hloscope.analysis.cost.roofline.CostModel`) once per op, for the ops the simulation runs
and no other (the cost model's :meth:`~hloscope.analysis.cost.roofline.CostModel.implausible` lists
the ops priced so far: the table prices the same ones the event loop once priced as it went).
One table serves every re-simulation of one module, cost model and set of transfers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from hloscope.analysis.cost.roofline import CostModel
from hloscope.analysis.kinds import Direction
from hloscope.analysis.structure.callgraph import CallGraph, callee_name
from hloscope.analysis.structure.opclass import OpClass, collective_kind
from hloscope.analysis.structure.transfers import HostTransfer
from hloscope.hlo.model import Instruction, Module
from hloscope.vocab import LinkMode

# Step codes of a computation's program (Final: a compiled build reads them as constants).
WORK: Final = 1
START: Final = 2
DONE: Final = 3
SYNC_XFER: Final = 4
SYNC_COLL: Final = 5
WHILE: Final = 6
CALL: Final = 7

#: One computation's program: (step code, instruction, unscaled µs) in schedule order.
Program = list[tuple[int, Instruction, float]]


@dataclass(frozen=True)
class CostTable:
    """What one step's simulation reads of the cost model, per op.

    programs: per computation the simulation may run (and, ``every_called``, every computation a
    loop, call or conditional of those names), its schedule classified: free ops and async updates
    left out, work of no time left out, each op's unscaled time (work: ``op_cost``; an async start: its
    measured time, else ``collective_us`` for a collective, else ``op_cost``; a host transfer's start:
    0, the links time it; a synchronous collective: ``collective_us``).
    device_bytes: HBM bytes one execution of each op with time reads and writes (work, and async ops
    but collectives and host transfers; ``moved_bytes(...).device``).
    memory_bound: the work ops whose HBM keeps busy (``OpCost.memory_bound``).
    branch: per conditional the simulation runs, its branch run (the most expensive,
    ``computation_us``). link_bandwidth: per direction, bytes/s (``link_bandwidth``).
    dma_latency_us: a host copy's DMA setup (``transfer_latency_us``). transfer_us: per host transfer
    (computation, start), its time alone on its link (``transfer_us``). hbm_bandwidth: bytes/s;
    host_copy_engines: the target's. link_mode: the cost model's.
    """

    programs: dict[str, Program]
    device_bytes: dict[Instruction, int]
    memory_bound: frozenset[Instruction]
    branch: dict[Instruction, str]
    link_bandwidth: dict[Direction, float]
    dma_latency_us: float
    transfer_us: dict[tuple[str, str], float]
    hbm_bandwidth: float
    host_copy_engines: int
    link_mode: LinkMode


def _program(module: Module, cost: CostModel, name: str, transfers: Mapping[tuple[str, str], HostTransfer],
             device_bytes: dict[Instruction, int], bound: set[Instruction]) -> Program:
    """Computation ``name``'s schedule classified, each op's time unscaled; its ops' bytes added to
    ``device_bytes`` and ``bound``."""
    prog: Program = []
    instructions = module.computations[name].instructions
    for ins, cls in zip(instructions, cost.index.op_classes(name), strict=True):
        if cls is OpClass.FREE or cls is OpClass.UPDATE:
            continue
        key = (name, ins.name)
        if cls is OpClass.WORK:
            if key in transfers and not transfers[key].is_annotation:
                prog.append((SYNC_XFER, ins, 0.0))
                continue
            c = cost.op_cost(ins)
            if c.us > 0:
                prog.append((WORK, ins, c.us))
                device_bytes[ins] = cost.moved_bytes(ins).device
                if c.memory_bound:
                    bound.add(ins)
        elif cls is OpClass.CONTROL:
            prog.append((WHILE if ins.opcode == "while" else CALL, ins, 0.0))
        elif cls is OpClass.START:
            measured = cost.measured_us(ins)  # a profile's time (by the wrapped op's name too)
            if key in transfers:
                prog.append((START, ins, 0.0))
            elif collective_kind(ins):
                prog.append((START, ins, measured if measured is not None else cost.collective_us(ins)))
            else:
                us = measured if measured is not None else cost.op_cost(ins).us
                prog.append((START, ins, us))
                if us:
                    device_bytes[ins] = cost.moved_bytes(ins).device
        elif cls is OpClass.DONE:
            prog.append((DONE, ins, 0.0))
        elif key in transfers and not transfers[key].is_annotation:  # a synchronous host copy
            prog.append((SYNC_XFER, ins, 0.0))
        else:  # a synchronous collective
            prog.append((SYNC_COLL, ins, cost.collective_us(ins)))
    return prog


def cost_table(module: Module, cost: CostModel, transfers: Mapping[tuple[str, str], HostTransfer],
               callgraph: CallGraph, every_called: bool = False) -> CostTable:
    """The table of one step's simulation (:class:`CostTable`), for the computations it runs: the entry,
    each loop's condition and, when it runs at least once (its trip count, 1 when unknown), its body,
    every computation a call runs, and each conditional's most expensive branch.
    ``every_called``: the programs of every computation those ops name too (the what-ifs' program
    positions, ``Simulation.entry_positions``; their other figures are not priced)."""
    comps = module.computations
    programs: dict[str, Program] = {}
    device_bytes: dict[Instruction, int] = {}
    bound: set[Instruction] = set()
    branch: dict[Instruction, str] = {}
    named: list[str] = []  # computations named by a control op but not run
    todo = [module.entry_name]
    while todo:
        name = todo.pop()
        if name in programs:
            continue
        prog = programs[name] = _program(module, cost, name, transfers, device_bytes, bound)
        for code, ins, _us in prog:
            if code not in (WHILE, CALL):
                continue
            called = [c for c in ins.called_computations if c in comps]
            named += called
            if code == WHILE:
                body, cond = callee_name(ins, "body"), callee_name(ins, "condition")
                if body not in comps:
                    continue
                known = callgraph.trip_count(ins)
                if cond in comps:
                    todo.append(cond)
                if (known if known is not None else 1) > 0:
                    todo.append(body)
            elif ins.opcode == "conditional" and called:
                branch[ins] = max(called, key=cost.computation_us)
                todo.append(branch[ins])
            else:
                todo += called
    while every_called and named:
        name = named.pop()
        if name not in programs:
            programs[name] = prog = _program(module, cost, name, transfers, device_bytes, bound)
            named += [c for code, ins, _us in prog if code in (WHILE, CALL)
                      for c in ins.called_computations if c in comps]
    links = {d: cost.link_bandwidth(d) for d in Direction}
    return CostTable(programs, device_bytes, frozenset(bound), branch, links, cost.transfer_latency_us,
                     {k: cost.transfer_us(t.bytes, t.direction) for k, t in transfers.items() if not t.is_annotation},
                     cost.target.hbm_bandwidth, cost.target.host_copy_engines, cost.link_mode)
