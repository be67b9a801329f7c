"""A request only some of whose loops run once: DeepSeek's shape, 1 dense layer then 2 MoE layers (issue 46).

``fixtures/dense_then_moe/`` is the artifact folder of ``tests/compile/intent/steps.py:dense_then_moe_step``
(jax 0.10.2, h100-sxm, 1 device; fixtures/README.md): a scan of 1 dense layer, then a scan of 2
"MoE" layers, both tagging their input ``x`` and offloading it with ``prevent_cse=False`` (as
MaxText's scanned layers do). Read by hand in the files:

- unoptimized: 4 placement annotations, all of ``f32[32,256]`` (32,768 B): ``device_put.1`` (to
  ``pinned_host``) in ``closed_call.2``, called by ``region_0.4``, the body of ``while.21`` whose
  condition ``region_1.5`` is ``i < 1`` (the dense scan, stack ``f32[1,32,256]``); ``device_put.3``
  (to ``pinned_host``) in ``closed_call_1.7``, called by ``region_2.9``, the body of ``while.26``,
  ``i < 2`` (the MoE scan, stack ``f32[2,32,256]``); ``device_put.5`` and ``.7`` (back to ``device``)
  in the backward loops ``while.31`` (MoE, ``i < 2``) and ``while.36`` (dense, ``i < 1``).
- optimized: one buffer in host memory, ``f32[2,32,256]{2,1,0:S(5)}``: the MoE stack. The dense
  stack is gone (XLA inlined its loops, which run once). 4 transfers of one ``f32[1,32,256]`` slice
  (32,768 B) each, every one run once per step: ``dynamic-update-slice-start.2`` in the peeled MoE
  forward loop's body ``region_2.9.clone`` (trip count 1 after peeling), ``dynamic-update-slice-start.1.0``
  in the entry (the peeled iteration), ``dynamic-slice-start.2`` in the backward loop's body
  ``region_4.0`` and ``dynamic-slice-start.1.0`` in the entry.

So by bytes and executions alone ``device_put.1`` (32,768 B run once) could take either MoE
transfer to host (each 32,768 B run once), leaving ``device_put.3`` (run twice) one transfer short:
the wrong pairing issue 46 saw. The host buffer tells them apart: the transfers' buffer holds 2
slices, what ``device_put.3`` places per step, not ``device_put.1``'s 1.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hloscope.analysis.intent.account import account_annotations_only, loops_run_once
from hloscope.analysis.intent.annotations import Fate, host_buffer_bytes, match_annotations, placement_annotations
from hloscope.analysis.intent.outcome import Fact, Why
from hloscope.analysis.kinds import Direction
from hloscope.analysis.structure.callgraph import build_call_graph
from hloscope.artifact import load_report
from hloscope.cli.main import main
from hloscope.hlo.loader import load_module
from hloscope.render.intent_text import intent_headline, intent_lines, mark
from hloscope.render.intent_words import detail_words

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "dense_then_moe"
SLICE = 32 * 256 * 4  # f32[32,256]


def test_fixture_facts_read_by_hand() -> None:
    unopt = (FIXTURE / "unoptimized.hlo.txt").read_text()
    opt = (FIXTURE / "optimized.hlo.txt").read_text()
    placed = re.findall(r'%(device_put\.\d+) = f32\[32,256\]\{1,0\} custom-call\(.*_xla_buffer_placement="(\w+)"', unopt)
    assert placed == [("device_put.1", "pinned_host"), ("device_put.3", "pinned_host"),
                      ("device_put.5", "device"), ("device_put.7", "device")]
    assert re.search(r"%while\.21 = .* condition=%region_1\.5, body=%region_0\.4", unopt)
    assert re.search(r"%while\.26 = .* condition=%region_3\.10, body=%region_2\.9", unopt)
    assert re.search(r"call\(.*\), to_apply=%closed_call\.2,", unopt) and re.search(r"to_apply=%closed_call_1\.7,", unopt)
    # the dense loop counts to 1, the MoE loop to 2
    assert re.search(r"%constant\.13 = s32\[\] constant\(1\)\n\s+ROOT %lt\.1 = pred\[\] compare\(%get-tuple-element\.12, "
                     r"%constant\.13\), direction=LT", unopt)
    assert re.search(r"%constant\.21 = s32\[\] constant\(2\)\n\s+ROOT %lt\.3 = pred\[\] compare\(%get-tuple-element\.28, "
                     r"%constant\.21\), direction=LT", unopt)
    # only the MoE stack lives in host memory after optimization
    assert set(re.findall(r"f32\[(\d+),32,256\]\{2,1,0:S\(5\)\}", opt)) == {"2"}
    starts = re.findall(r"%((?:dynamic-update-slice|dynamic-slice)-start\.[\d.]+) = ", opt)
    assert sorted(starts) == ["dynamic-slice-start.1.0", "dynamic-slice-start.2", "dynamic-update-slice-start.1.0",
                              "dynamic-update-slice-start.2"]


def test_each_annotation_pairs_with_the_transfers_of_its_own_scan() -> None:
    report = load_report(str(FIXTURE))
    transfers = [v.transfer for v in report.verdicts]
    assert {(t.bytes, t.executions) for t in transfers} == {(SLICE, 1)}
    assert {host_buffer_bytes(t) for t in transfers} == {2 * SLICE}  # the MoE stack of 2 slices
    unoptimized = load_module(str(FIXTURE / "unoptimized.hlo.txt"))
    matches = {m.annotation.instruction.name: m for m in
               match_annotations(placement_annotations(unoptimized), transfers, 1)}
    assert {n: (m.annotation.bytes, m.annotation.executions) for n, m in matches.items()} == {
        "device_put.1": (SLICE, 1), "device_put.3": (SLICE, 2), "device_put.5": (SLICE, 2), "device_put.7": (SLICE, 1)}
    # the MoE annotations take the MoE transfers (their host buffer holds 2 slices) ...
    assert sorted(t.instruction.name for t in matches["device_put.3"].became) == [
        "dynamic-update-slice-start.1.0", "dynamic-update-slice-start.2"]
    assert sorted(t.instruction.name for t in matches["device_put.5"].became) == [
        "dynamic-slice-start.1.0", "dynamic-slice-start.2"]
    assert matches["device_put.3"].by_buffer and matches["device_put.5"].by_buffer
    # ... and the dense ones, whose loops XLA removed, none
    assert matches["device_put.1"].fate is Fate.REMOVED and matches["device_put.7"].fate is Fate.REMOVED


def test_loops_that_run_once_are_counted_per_loop() -> None:
    unoptimized = load_module(str(FIXTURE / "unoptimized.hlo.txt"))
    graph = build_call_graph(unoptimized)
    every = placement_annotations(unoptimized)
    by_name = {a.instruction.name: a for a in every}
    both = [by_name["device_put.1"], by_name["device_put.3"]]
    some = loops_run_once(graph, both, every)
    assert some is not None and some.fact is Fact.SOME_LOOPS_RUN_ONCE
    assert (some.arg("n"), some.arg("of"), some.arg("names"), some.arg("loops")) == (1, 2, "device_put.1", "while.21")
    alone = loops_run_once(graph, [by_name["device_put.1"]], every)
    assert alone is not None and alone.fact is Fact.LOOP_RUNS_ONCE and alone.arg("loops") == "while.21"
    assert loops_run_once(graph, [by_name["device_put.3"]], every) is None  # the MoE loop runs twice


def test_the_request_reads_partly_removed_not_ok() -> None:
    report = load_report(str(FIXTURE))
    assert report.intent is not None
    [item] = report.intent.items
    assert item.asked.what == "x" and item.why is Why.PARTLY_REMOVED and mark(item) == "PART"
    assert len(item.transfers) == 4 and item.bytes_per_step[Direction.TO_HOST] == 2 * SLICE
    part = next(d for d in item.detail if d.fact is Fact.PART_REMOVED)
    assert (part.arg("n"), part.arg("of"), part.arg("names")) == (1, 2, "device_put.1")
    once = item.detail[-1]
    assert once.fact is Fact.LOOP_RUNS_ONCE and once.arg("loops") == "while.21"
    words = detail_words(item.detail)
    assert "but 1 of its 2 placement annotation(s) to host (device_put.1) became no transfer" in words
    assert "the loop(s) holding it (while.21) run(s) once (trip count 1)" in words
    assert report.intent.missing == (item,) and not report.intent.unaccounted
    assert intent_headline(report.intent) == ("offloads asked for: 1 request(s); 1 became transfers only in PART "
                                              "(offload 'x')")
    assert "  PART    offload 'x'" in "\n".join(intent_lines(report.intent))


def test_check_fails_the_offload_the_dense_scan_lost(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(FIXTURE), "--no-config", "--no-sync"]) == 1
    out = capsys.readouterr().out
    assert "FAIL intent-accounted" in out
    assert "offload 'x' [save_and_offload_only_these_names(offload=['x'], save=[], device->pinned_host)] became " \
           "transfers only in part: partly-removed:" in out


def test_annotations_only_account_agrees() -> None:
    report = load_report(str(FIXTURE))
    unoptimized = load_module(str(FIXTURE / "unoptimized.hlo.txt"))
    acc = account_annotations_only(report.verdicts, report.module, unoptimized)
    got = {a.asked.what.split(" ")[0]: a.why for a in acc.items}
    assert got == {"device_put.1": Why.REMOVED_BY_XLA, "device_put.3": Why.TRANSFERRED,
                   "device_put.5": Why.TRANSFERRED, "device_put.7": Why.REMOVED_BY_XLA}
    loops = {a.asked.what.split(" ")[0]: a.detail[-1].arg("loops") for a in acc.items if a.why is Why.REMOVED_BY_XLA}
    assert loops == {"device_put.1": "while.21", "device_put.7": "while.36"}


MAXTEXT = FIXTURE.parent / "maxtext_rope"


def test_maxtexts_q_k_v_annotations_each_pair_with_one_tensors_transfers() -> None:
    # fixtures/maxtext_rope/ (docs/maxtext.md's tiny llama, 8 devices), read by hand: its unoptimized module
    # places 3 values of bf16[8,512,4,64] (2,097,152 B, in the layer scan run twice) in host memory:
    # device_put.3 and .4 the RoPE adds add.18 / add.19 (Q and K, embeddings.py:265), device_put.5 the
    # dot dot_general.12 (V, linears.py:162), each through a sharding_constraint; and 3 back. The optimized
    # module moves 12 slices of 262,144 B (bytes / 8 devices), each run once, into host buffers of 2
    # slices (tests/analysis/structure/test_rope_names.py names each). By bytes all 12 fit any annotation.
    unopt = (MAXTEXT / "unoptimized.hlo.txt").read_text()
    for put, value in (("3", "sharding_constraint.17"), ("4", "sharding_constraint.18"), ("5", "sharding_constraint.19")):
        assert re.search(rf"%device_put\.{put} = bf16\[8,512,4,64\]\{{3,2,1,0\}} custom-call\(%{value}\), "
                         r'custom_call_target="annotate_device_placement".*_xla_buffer_placement="pinned_host"', unopt)
    assert re.search(r"%sharding_constraint\.17 = .*custom-call\(%add\.18\)", unopt)
    assert re.search(r"%sharding_constraint\.18 = .*custom-call\(%add\.19\)", unopt)
    assert re.search(r"%sharding_constraint\.19 = .*custom-call\(%dot_general\.12\)", unopt)
    report = load_report(str(MAXTEXT))
    unoptimized = load_module(str(MAXTEXT / "unoptimized.hlo.txt"))
    matches = {m.annotation.instruction.name: m for m in
               match_annotations(placement_annotations(unoptimized), [v.transfer for v in report.verdicts], 8)}
    assert len(matches) == 6 and all(m.fate is Fate.ASYNC and m.shards == 8 and m.by_buffer for m in matches.values())
    names = {n: sorted({t.checkpoint_name or "" for t in m.became}) for n, m in matches.items()}
    # V (its own line) takes V's two slices, the loop body's and the peeled layer's; Q and K (one line,
    # one size) each take one tensor's two, never one of each: which of the two is whose, nothing tells
    assert names["device_put.5"] == ["value_proj"] and matches["device_put.5"].by_source
    assert {t.instruction.name for t in matches["device_put.5"].became} == {
        "dynamic-update-slice-start.2.0", "dynamic-update-slice-start.5.0"}  # the scan body's and the entry's
    assert {tuple(names[n]) for n in ("device_put.3", "device_put.4")} == {("key_proj",), ("query_proj",)}
    assert all(len(v) == 1 for v in names.values())
