"""Host writes never read back (``hloscope.analysis.structure.unread``), on real modules.

The MaxText 405B facts were read by hand in fixtures/tpu_maxtext405b/optimized module (its README
says which lines): XLA:TPU unrolled the 2-layer scan; ``dynamic-update-slice-start.1/.3/.5`` write
layer 1's Q/K/V into slot 1 (``constant.338.clone`` = 1) of the host stacks ``custom-call.208/.209/.210``
while the stacks' only reads, ``dynamic-slice-start/.1/.2``, are at ``constant.796`` = 0; the whole
copies ``copy-start/.2/.4`` are read back by ``copy-start.1/.3/.5``.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from hloscope.analysis.kinds import Direction
from hloscope.analysis.structure.unread import UnreadReason
from hloscope.api import analyze
from hloscope.cli import main
from hloscope.hlo.parser import parse_hlo
from tests.conftest import FIXTURES, fixture_text

MIB = 1 << 20
MAXTEXT = FIXTURES / "tpu_maxtext405b"
MAXTEXT_MODULE = "tpu_maxtext405b/module_0000.jit_train_step.cl_1004524046.after_optimizations.txt"
SCAN = "tpu_v5e/offload_scan_8x128MiB.hlo.txt"


@pytest.fixture(scope="module")
def maxtext() -> Any:
    return analyze(str(MAXTEXT))


def test_maxtext_405b_writes_slot_1_of_its_qkv_stacks_and_reads_slot_0_only(maxtext: Any) -> None:
    # Given MaxText's 405B step (2 layers) compiled for v5p-128, judged on the TPU its dump names
    assert maxtext.target.name == "tpu-v5p"
    u = maxtext.unread
    # Then 1,728 MiB go to host, 1,152 MiB come back, and slot 1 of each stack is never read
    assert (u.written_bytes, u.read_bytes, u.unread_bytes) == (1728 * MIB, 1152 * MIB, 576 * MIB)
    got = {w.transfer.instruction.name: (w.reason, w.buffer, w.sliced_dims, w.slots, w.read_slots, w.readers,
                                         w.unread_bytes) for w in u.writes}
    assert got == {
        "dynamic-update-slice-start.1": (UnreadReason.SLOT_NOT_READ, "custom-call.208", (0,), ((1,),), ((0,),),
                                         ("dynamic-slice-start",), 512 * MIB),
        "dynamic-update-slice-start.3": (UnreadReason.SLOT_NOT_READ, "custom-call.209", (0,), ((1,),), ((0,),),
                                         ("dynamic-slice-start.1",), 32 * MIB),
        "dynamic-update-slice-start.5": (UnreadReason.SLOT_NOT_READ, "custom-call.210", (0,), ((1,),), ((0,),),
                                         ("dynamic-slice-start.2",), 32 * MIB),
    }
    # and the link time is the target's D->H time of those bytes
    for w in u.writes:
        assert w.link_us == pytest.approx(maxtext.cost.transfer_us(w.unread_bytes, Direction.TO_HOST))


def test_maxtext_405b_report_json_and_tui_detail_name_the_writes(maxtext: Any) -> None:
    from hloscope.tui.widgets.detail import verdict_text

    text = maxtext.to_text()
    assert "written to host and never read: 576.0 MiB per step of 1.7 GiB written (1.1 GiB read back)" in text
    assert ("never read back: it writes 512.0 MiB per step into slot 1 (dim 0) of host buffer custom-call.208; "
            "its reads (dynamic-slice-start) index slot 0 only") in text
    d = json.loads(json.dumps(maxtext.to_dict()))["unread_host_writes"]
    assert d["bytes_per_step"] == 576 * MIB and d["written_bytes_per_step"] == 1728 * MIB
    assert [w["transfer"] for w in d["writes"]] == ["dynamic-update-slice-start.1", "dynamic-update-slice-start.3",
                                                    "dynamic-update-slice-start.5"]
    assert d["writes"][0]["slots"] == [[1]] and d["writes"][0]["read_slots"] == [[0]]
    v = maxtext.verdict_for("dynamic-update-slice-start.3")
    assert "never read back: it writes 32.0 MiB per step into slot 1" in verdict_text(SimpleNamespace(report=maxtext),
                                                                                      v).plain
    v = maxtext.verdict_for("copy-start")  # the whole copy of the same value is read back: nothing to say
    assert "never read back" not in verdict_text(SimpleNamespace(report=maxtext), v).plain


def test_check_fails_no_unread_host_writes_on_maxtext_and_passes_it_where_every_write_is_read(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(MAXTEXT), "--no-unread-host-writes"]) == 1
    out = capsys.readouterr().out
    assert "FAIL no-unread-host-writes (this step: 576.0 MiB per step never read, of 1.7 GiB written to host)" in out
    assert out.count("of D->H link time and") == 3
    for path in ("llama_offload.hlo.txt", SCAN):
        assert main(["check", str(FIXTURES / path), "--no-unread-host-writes"]) == 0
        assert "pass no-unread-host-writes (this step: 0 B per step never read" in capsys.readouterr().out


@pytest.mark.parametrize("name", [
    "llama_offload.hlo.txt", "llama_offload_nopipe.hlo.txt", "mlp_offload.hlo.txt", "opt_state_offload.hlo.txt",
    "llama405b_hostbuf.hlo.txt", "llama405b_hostmem.hlo.txt", SCAN, "maxtext_rope/optimized.hlo.txt",
    "jax012/mlp_offload.hlo.txt",
])
def test_a_step_whose_writes_are_all_read_says_nothing(name: str) -> None:
    r = analyze(parse_hlo(fixture_text(name), name))
    assert r.unread.written_bytes > 0 and r.unread.writes == ()


def test_a_scan_reloading_slot_0_only_leaves_the_other_seven_of_eight_unread() -> None:
    # Given the v5e scan (a loop of 8 writes slot i of a bf16[8,8192,8192] host stack; a loop of 8
    # reads slot 7-i) with its reload's index made the constant 0 of its body
    text = fixture_text(SCAN)
    at = "async-start(%get-tuple-element.192, %subtract.2, %constant.41..sunk.1"
    assert text.count(at) == 1
    r = analyze(parse_hlo(text.replace(at, "async-start(%get-tuple-element.192, %constant.41..sunk.1, "
                                           "%constant.41..sunk.1"), SCAN))
    # Then the loop-indexed write fills slots 0..7 and slots 1..7 are never read: 7 x 128 MiB per step
    (w,) = r.unread.writes
    assert (w.transfer.instruction.name, w.reason, w.transfer.executions) == (
        "dynamic-update-slice-start", UnreadReason.SLOT_NOT_READ, 8)
    assert w.slots == tuple((i,) for i in range(1, 8)) and w.read_slots == ((0,),)
    assert w.unread_bytes == 7 * 128 * MIB


def test_a_copy_to_host_that_nothing_reads_back_is_dead() -> None:
    # Given the MaxText step with the reload of Q's whole copy reading the device value instead
    text = fixture_text(MAXTEXT_MODULE)
    at = "copy-start(%copy-done)"
    assert text.count(at) == 1
    r = analyze(parse_hlo(text.replace(at, "copy-start(%add_convert_fusion)"), MAXTEXT_MODULE), "tpu-v5p")
    # Then copy-start's 512 MiB are written and never read, beside the three stack slots
    dead = [w for w in r.unread.writes if w.reason is UnreadReason.DEAD_COPY]
    assert [(w.transfer.instruction.name, w.buffer, w.unread_bytes) for w in dead] == [
        ("copy-start", "copy-done", 512 * MIB)]
    assert r.unread.unread_bytes == (576 + 512) * MIB
