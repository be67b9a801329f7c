"""Host send/recv, in-place host accesses and host-thread computations (issue 28 item 2).

Inputs: XLA's parser test SendRecvWithHostTransfer (fixtures/xla-tests), the optimized
module of tests/compile/intent/steps.py:host_compute (``compute_on("device_host")``) compiled
deviceless for one H100 with jaxlib 0.10.2 (tests/data/compute_on_host.hlo.txt), and
a dot reading a host-memory bitcast (the shape of issue 28's held-out module).
"""

from __future__ import annotations

from hloscope.analysis.kinds import Direction
from hloscope.analysis.structure.host_work import find_host_work
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.pairs import pair_async_ops
from hloscope.analysis.structure.transfers import find_host_transfers
from hloscope.hlo.parser import parse_hlo
from tests.conftest import DATA
from tests.xla_corpus import CORPUS


def test_host_send_and_recv_are_transfers_paired_with_their_done() -> None:
    # recv: (f32[], u32[], token[]) from the host, 4 B to device; send: f32[] constant(2.1), 4 B to host.
    index = ModuleIndex(parse_hlo((CORPUS / "hlo_parser/SendRecvWithHostTransfer.hlo").read_text()))
    got = {t.instruction.name: (t.direction, t.bytes, t.op, t.is_async) for t in find_host_transfers(index)}
    assert got == {"recv": (Direction.TO_DEVICE, 4, "recv", True), "send": (Direction.TO_HOST, 4, "send", True)}
    pairs = {p.start.name: p.done.name for p in pair_async_ops(index)}
    assert pairs["recv"] == "recv-done" and pairs["send"] == "send-done"


def test_host_send_in_a_loop_counts_its_trips() -> None:
    # send.88 of s32[] in while_body, which runs 3 times (the pipeliner test's loop).
    text = (CORPUS / "collective_pipeliner/UpdateSendRecvChannelIdForHostTransfers.hlo").read_text()
    [t] = find_host_transfers(ModuleIndex(parse_hlo(text)))
    assert (t.instruction.name, t.direction, t.bytes, t.computation, t.executions) == (
        "send.88", Direction.TO_HOST, 4, "while_body", 3)


def test_a_dot_reading_host_memory_is_an_in_place_access_not_a_transfer() -> None:
    text = ("HloModule m, is_scheduled=true\n\nENTRY main {\n  p0 = f32[2,2]{1,0:S(5)} parameter(0)\n"
            "  p1 = f32[2,2]{1,0} parameter(1)\n  b = f32[2,2]{1,0:S(5)} bitcast(p0)\n"
            "  ROOT d = f32[2,2]{1,0} dot(b, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n")
    index = ModuleIndex(parse_hlo(text))
    assert find_host_transfers(index) == []
    [a] = find_host_work(index).accesses
    assert (a.instruction.name, a.op, a.read_bytes, a.written_bytes, a.executions) == ("d", "dot", 16, 0, 1)


def test_host_copies_stay_transfers() -> None:
    # XLA's asyncifier test: a synchronous copy of f32[32] device -> host (128 B) is a transfer.
    text = (CORPUS / "host_memory_transfer_asyncifier/OldCopyFromDeviceToHost.hlo").read_text()
    index = ModuleIndex(parse_hlo(text))
    assert [(t.op, t.bytes) for t in find_host_transfers(index)] == [("copy", 128)]
    assert find_host_work(index).accesses == ()


def test_compute_on_host_computation_is_read_and_paired() -> None:
    # Read by hand: %called_computation (w - 0.01 * g over f32[4,256,256], 6 instructions) ends
    # '}, execution_thread="host"'; main.2 enters it with custom-call-start (HostExecute, two
    # 1 MiB operands) and leaves with custom-call-done (1 MiB).
    module = parse_hlo((DATA / "compute_on_host.hlo.txt").read_text())
    assert module.computations["called_computation"].execution_thread == "host"
    # The sugared custom-call-start's wrapped computation (hlo/async_sugar.py) runs on the start's thread.
    assert module.computations["async_wrapped"].execution_thread == "host"
    assert {c.execution_thread for n, c in module.computations.items()
            if n not in ("called_computation", "async_wrapped")} == {"main"}
    [c] = find_host_work(ModuleIndex(module)).compute
    assert c.start is not None and c.done is not None
    assert (c.computation, c.thread, c.caller, c.instructions) == ("called_computation", "host", "main.2", 6)
    assert (c.start.name, c.done.name) == ("host-call.cloned.1.call-start.1", "host-call.cloned.1.call-done.1")
    assert (c.operand_bytes, c.result_bytes) == (2 * 1024 * 1024, 1024 * 1024)


def test_json_report_carries_host_compute_and_in_place_accesses() -> None:
    from hloscope.api import analyze
    from hloscope.render.json_report import report_to_dict
    from hloscope.targets import get_target

    doc = report_to_dict(analyze(parse_hlo((DATA / "compute_on_host.hlo.txt").read_text()), get_target("h100-sxm")))
    assert doc["host_compute"] == [{
        "computation": "called_computation", "thread": "host", "instructions": 6,
        "start": "host-call.cloned.1.call-start.1", "done": "host-call.cloned.1.call-done.1", "caller": "main.2",
        "operand_bytes": 2 * 1024 * 1024, "result_bytes": 1024 * 1024}]
    assert "in_place_host_accesses" not in doc and doc["transfers"] == []
