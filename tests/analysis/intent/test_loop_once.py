"""An offload in a loop that runs once is removed by XLA, and the accounting says why (issue 34).

``fixtures/loop_once/`` is the artifact folder of ``tests/compile/intent/steps.py:layers_offload_step``
with one layer (jax 0.10.2, h100-sxm, 1 device; fixtures/README.md): the layer scan's forward
and backward while loops each run once. XLA inlines both (simplify-while-loops), the copy to
host meets the copy back, and nothing of the offload is left. MaxText's 1 dense + 1 MoE
DeepSeek does the same (docs/offload-happened.md#a-loop-that-runs-once).
"""

from __future__ import annotations

import re
from pathlib import Path

from hloscope.analysis.intent.account import account_annotations_only
from hloscope.analysis.intent.outcome import Fact, Why
from hloscope.analysis.structure.callgraph import build_call_graph, enclosing_loops
from hloscope.artifact import load_report
from hloscope.hlo.loader import load_module
from hloscope.render.intent_words import detail_words

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "loop_once"


def test_fixture_facts_read_by_hand() -> None:
    # What the files say, read without hloscope's accounting: the unoptimized module places the
    # tagged value in host memory inside a scan's loop body and brings it back in the other loop;
    # each loop counts i from 0 while i < 1. The optimized module has no loop and nothing in host memory.
    unopt = (FIXTURE / "unoptimized.hlo.txt").read_text()
    opt = (FIXTURE / "optimized.hlo.txt").read_text()
    assert len(re.findall(r'annotate_device_placement".*_xla_buffer_placement="pinned_host"', unopt)) == 1
    assert len(re.findall(r" while\(", unopt)) == 2
    bounds = re.findall(r"compare\(%\S+, %(constant\.\d+)\), direction=LT", unopt)
    assert len(bounds) == 2
    assert all(re.search(rf"%{b} = s32\[\] constant\(1\)", unopt) for b in bounds)  # i < 1
    assert re.search(r"%constant\.22 = s32\[\] constant\(0\)", unopt)  # both loops start i at 0
    assert re.search(r"tuple\(%constant\.22, %x\.1,", unopt) and re.search(r"tuple\(%constant\.22, %broadcast", unopt)
    assert not re.search(r" while\(|S\(5\)|copy-start", opt)


def test_enclosing_loops_walks_up_through_calls() -> None:
    module = load_module(str(FIXTURE / "unoptimized.hlo.txt"))
    graph = build_call_graph(module)
    [put] = [i for c in module.computations.values() for i in c.instructions
             if i.name == "device_put.1"]
    [loop] = enclosing_loops(graph, put.computation) or ()
    assert loop.opcode == "while" and loop.name == "while.11" and graph.trip_count(loop) == 1
    assert enclosing_loops(graph, module.entry_name) is None  # the entry runs outside any loop


def test_removed_offload_in_a_loop_that_runs_once_says_so() -> None:
    report = load_report(str(FIXTURE))
    assert report.intent is not None
    [item] = report.intent.items
    assert item.asked.what == "x" and item.why is Why.REMOVED_BY_XLA and not item.transfers
    once = item.detail[-1]
    assert once.fact is Fact.LOOP_RUNS_ONCE and once.arg("loops") == "while.11" and once.arg("trip") == 1
    words = detail_words(item.detail)
    assert "no transfer of the optimized module moves its bytes (xla#20373); the loop(s) holding it " \
           "(while.11) run(s) once (trip count 1), and XLA removed the loop and the offload with it " \
           "(simplify-while-loops" in words
    assert words.endswith("with 2 or more iterations it offloads")


def test_annotations_only_account_says_so_too() -> None:
    report = load_report(str(FIXTURE))
    unoptimized = load_module(str(FIXTURE / "unoptimized.hlo.txt"))
    acc = account_annotations_only(report.verdicts, report.module, unoptimized)
    assert {a.why for a in acc.items} == {Why.REMOVED_BY_XLA} and len(acc.items) == 2  # to host and back
    loops = sorted(str(a.detail[-1].arg("loops")) for a in acc.items if a.detail[-1].fact is Fact.LOOP_RUNS_ONCE)
    assert loops == ["while.11", "while.16"]  # the forward loop's copy to host, the backward loop's copy back
