"""What to do about host transfers no schedule can hide: the facts behind the report's next steps.

A transfer whose possible window (``analysis.simulate.slack``) holds less compute than the transfer
takes waits however XLA places its start and done: rescheduling cannot help, a different policy can.
:func:`find_way_forward` gathers, from passes that already ran, what each way out costs here:

- saving the values on the device instead: the bytes the step now sends to host stay in HBM
  (``bytes x executions`` of its transfers to host), and the wait at these transfers' dones goes
  (their exposed time per step, the timeline simulation's); with the step's memory figures, whether
  the device allocation plus those bytes still fits;
- recomputing them (remat): the op that produces each offloaded value runs again, its estimate
  (the cost model's) times its executions: a first-order figure (more when its own inputs are not
  kept, nothing where the backward recomputes the value anyway);
- the command that searches both per name with compiles (``hloscope tune``), with this step's own
  arguments when it was compiled here (a built-in workload, ``--fn``, ``--maxtext``).

Typed facts only; ``hloscope.render.next_steps_text`` words them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hloscope.analysis.kinds import Direction, VerdictKind
from hloscope.analysis.report import Report
from hloscope.analysis.simulate.verdict import Verdict
from hloscope.analysis.structure.value_flow import ValueFlow
from hloscope.hlo.model import Instruction

#: Ops walked through from an offloaded value back to the op that computes it.
_CARRY = frozenset({"bitcast", "copy", "reshape", "transpose", "convert"})
#: Where the walk stops without a producer: a value out of a loop, a call or a tuple is computed elsewhere.
_NOT_PRODUCERS = frozenset({"parameter", "constant", "get-tuple-element", "tuple", "while", "call", "conditional",
                            "async-done", "copy-done", "opt-barrier"})


@dataclass(frozen=True)
class Recompute:
    """The op that produces an offloaded value (``producer``, in ``computation``), its estimated time per
    execution (``us``) and its executions per step: what remat runs again."""

    transfer: str
    producer: str
    computation: str
    us: float
    executions: int

    @property
    def us_per_step(self) -> float:
        return self.us * self.executions


@dataclass(frozen=True)
class WayForward:
    """The transfers no placement hides and what each way out costs (see the module docstring).

    stuck: their verdicts (exposed or partial, with no possible window long enough). wait_us: their
    exposed time per step. step_us: the simulated step (None: not simulated). to_host_bytes: bytes per
    step they send to host, else read from it (what saving on the device keeps in HBM). device_bytes / limit_bytes: the
    step's device allocation and what it must fit in (None: memory not known). recompute: per
    offloaded value found, its producer's cost. tune: ``hloscope tune``'s arguments for this step
    (None: the step was not compiled here, so they are not known).
    """

    stuck: tuple[Verdict, ...]
    wait_us: float
    step_us: float | None
    to_host_bytes: int
    device_bytes: int | None
    limit_bytes: int | None
    recompute: tuple[Recompute, ...]
    tune: tuple[str, ...] | None

    @property
    def fits_on_device(self) -> bool | None:
        """Whether the device allocation plus the bytes now on the host fits (None: memory not known)."""
        if self.device_bytes is None or self.limit_bytes is None:
            return None
        return self.device_bytes + self.to_host_bytes <= self.limit_bytes

    @property
    def recompute_us(self) -> float:
        return sum(r.us_per_step for r in self.recompute)


def _stuck(report: Report) -> tuple[Verdict, ...]:
    out = []
    for v, s in zip(report.verdicts, report.slack, strict=False):
        if s is not None and not s.could_hide and v.verdict in (VerdictKind.EXPOSED, VerdictKind.PARTIAL) \
                and v.est_exposed_us > 0:
            out.append(v)
    return tuple(out)


def _producer(flow: ValueFlow, v: Verdict) -> Instruction | None:
    """The op computing the value ``v`` (a transfer to host) moves, walked back through ops that only carry it."""
    moved = flow.moved(v.transfer)
    node = moved[0] if len(moved) == 1 else None
    for _ in range(32):
        if node is None:
            return None
        if node.opcode in _CARRY and node.operands:
            node = flow.table(node).get(node.operands[0])
        elif node.opcode == "fusion" and (inner := _carried_parameter(flow, node)) is not None:
            passed = flow.passed_in(inner)  # a fusion that only re-lays its operand out (bitcasts): its operand
            node = passed[0] if len(passed) == 1 else None
        else:
            break
    if node is None or node.opcode in _NOT_PRODUCERS or node.opcode in _CARRY:
        return None
    return node


def _carried_parameter(flow: ValueFlow, fusion: Instruction) -> Instruction | None:
    """The fused parameter a fusion's root only carries on (through bitcasts, copies ...), else None."""
    node = flow.root(fusion)
    for _ in range(16):
        if node is None or node.opcode not in _CARRY or not node.operands:
            break
        node = flow.table(node).get(node.operands[0])
    return node if node is not None and node.opcode == "parameter" else None


def tune_arguments(compile_facts: Mapping[str, Any] | None,
                   manifest: Mapping[str, Any] | None) -> tuple[str, ...] | None:
    """``hloscope tune``'s arguments for the step a compile request describes (the manifest's ``request``),
    else None. A built-in workload keeps its ``--set``s; ``--fn`` its ``--args``; ``--maxtext`` its overrides."""
    request = (manifest or {}).get("request") or (compile_facts or {}).get("request")
    if not isinstance(request, Mapping) or not isinstance(request.get("target"), str):
        return None
    args: list[str] = []
    if isinstance(request.get("workload"), str) and request["workload"]:
        args.append(request["workload"])
        args += [f"--set {k}={v}" for k, v in request.get("sets") or [] if k != "policy"]
    elif isinstance(request.get("fn"), str) and request["fn"]:
        args += [f"--fn {request['fn']}", f"--args '{request.get('args') or ''}'"]
    elif isinstance(request.get("maxtext"), list):
        args += ["--maxtext", *(str(m) for m in request["maxtext"])]
    else:
        return None
    args += [f"--target {request['target']}", f"--devices {request.get('devices')}"]
    if request.get("topology"):
        args.append(f"--topology {request['topology']}")
    if (request.get("slices") or 1) != 1:
        args.append(f"--slices {request['slices']}")
    return tuple(args)


def _kept_bytes(stuck: tuple[Verdict, ...]) -> int:
    """Bytes per step the device would keep: what these transfers send to host (a value offloaded and read
    back moves the same bytes both ways), else what they read from it (state kept on the host)."""
    per = {d: sum(v.transfer.bytes * v.transfer.executions for v in stuck if v.transfer.direction is d)
           for d in Direction}
    return max(per.values())


def find_way_forward(report: Report) -> WayForward | None:
    """The step's :class:`WayForward`, or None when every transfer could be hidden by some placement."""
    stuck = _stuck(report)
    if not stuck:
        return None
    flow = ValueFlow(report.index)
    recompute = []
    for v in stuck:
        if v.transfer.direction is Direction.TO_HOST:
            ins = _producer(flow, v)
            if ins is not None:
                recompute.append(Recompute(v.transfer.instruction.name, ins.name, ins.computation,
                                           report.cost.instruction_us(ins), v.transfer.executions))
    step = report.summary.step
    m = report.memory
    return WayForward(stuck, sum(v.est_exposed_us * v.transfer.executions for v in stuck),
                      step.step_us if step is not None else None,
                      _kept_bytes(stuck),
                      m.device_allocation_bytes if m is not None else None, m.limit_bytes if m is not None else None,
                      tuple(recompute), tune_arguments(report.compile, report.inputs.manifest))

