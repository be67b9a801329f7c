"""One name per transfer (analysis/intent/naming.py, analysis/structure/transfer_names.py), the same in every view.

What the fixtures say, read by hand in ``fixtures/llama_offload.hlo.txt`` (the Quick-start llama
step: Q/K/V of 2 scanned layers offloaded, compiled when llama.py tagged them on lines 69, 70, 71;
XLA merged the three projections into one gemm per layer, ``gemm_fusion_dot.120`` in the peeled
layer of ``main.27_spmd``, whose concatenated weight is ``wv`` (columns 0:128), ``wk`` (128:256),
``wq`` (256:768): the loop state's elements 7 and 8 are the entry's ``params['layers']['wv']``
(param.8) and ``['wk']`` (param.9)):

- ``dynamic-update-slice-start.2.0`` (line 1866, in the loop body ``region_0.5_spmd.clone``)
  writes ``bitcast.116.0`` <- ``input_transpose_fusion.5`` <- ``get-tuple-element.470``, loop
  state element 20, which the peeled layer fills with ``bitcast.1380.0`` <-
  ``loop_slice_fusion.6`` (line 3322): the 0:128 slice, V; its frame is llama.py:71.
- ``dynamic-update-slice-start.1.0`` (line 1871) writes element 19 <- ``bitcast.1378.0`` <-
  ``get-tuple-element.393`` of the slice-transpose fusion of columns 128:256, K (llama.py:70).
- ``dynamic-update-slice-start.6`` (line 1877) writes element 18 <- ``loop_slice_fusion.5``, Q.
- In ``main.27_spmd``, ``.5.0`` / ``.4.0`` / ``.3.0`` (lines 3375, 3380, 3386) write the loop's
  last values of elements 4, 3, 2: ``loop_slice_fusion.4`` (V), ``get-tuple-element.353`` (K),
  ``loop_slice_fusion.3`` (Q) of the body's own gemm.
- The three ``dynamic-slice-start`` of the backward loop read the host buffers those wrote.

K and V are both bf16[1,1,256,2,64] per device (64 KiB): only data flow tells them apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hloscope.analysis.intent.manifest import intent_to_dict
from hloscope.analysis.intent.model import AskKind, Intent, Policy, PolicyKind, Tag, Where
from hloscope.analysis.kinds import Direction, NameBasis
from hloscope.analysis.structure.value_flow import frames
from hloscope.artifact import load_report
from hloscope.cli.main import main
from hloscope.hlo.hloproto import parse_hlo_proto
from hloscope.hlo.parser import parse_hlo
from hloscope.render.intent_text import intent_lines
from hloscope.render.name_words import GUESS_MARK as RENDER_GUESS_MARK
from hloscope.render.table import TableRenderer
from hloscope.tui.format import GUESS_MARK, checkpoint_name
from hloscope.tui.widgets.intent import intent_text
from tests.conftest import DATA, FIXTURES, fixture_text

LINES = {"query_proj": 69, "key_proj": 70, "value_proj": 71}

#: Read by hand (module docstring): each transfer's tensor.
BY_HAND = {
    "dynamic-update-slice-start.2.0": "value_proj", "dynamic-update-slice-start.1.0": "key_proj",
    "dynamic-update-slice-start.6": "query_proj", "dynamic-update-slice-start.5.0": "value_proj",
    "dynamic-update-slice-start.4.0": "key_proj", "dynamic-update-slice-start.3.0": "query_proj",
    "dynamic-slice-start.2.0": "value_proj", "dynamic-slice-start.1.0": "key_proj",
    "dynamic-slice-start.3": "query_proj",
}


def test_text_and_proto_read_one_stack_frame_chain() -> None:
    # stack_frames_step.py: f (line 16) calls g (line 20, col 24 calls h), h computes cos at line 24,
    # and <module> (line 28) calls f. XLA's text printer writes each frame's parent one above the
    # proto's id: the proto says 5 -> 4 -> 2 -> 1 -> root for cos.1.
    text = parse_hlo((DATA / "stack_frames.hlo.txt").read_text(), "text")
    proto = parse_hlo_proto((DATA / "stack_frames.hlo.pb").read_bytes())
    for module in (text, proto):
        cos = module.computations[module.entry_name].by_name["cos.1"]
        assert [(f.function, f.line) for f in frames(module, cos)] == [("h", 24), ("g", 20), ("f", 16),
                                                                        ("<module>", 28)]
    assert text.stack_frames == proto.stack_frames


def _llama_file() -> str:
    return next(line.split('"')[1] for line in fixture_text("llama_offload.hlo.txt").splitlines()
                if line.strip().endswith('llama.py"'))


def _artifact(tmp_path: Path, with_names: bool) -> Path:
    """An artifact folder of the fixture: its optimized and unoptimized module, and what its trace
    recorded (the policy, the three tags JAX copied to host; the name records when ``with_names``)."""
    llama = _llama_file()
    folder = tmp_path / ("named" if with_names else "unnamed")
    folder.mkdir()
    (folder / "optimized.hlo.txt").write_text(fixture_text("llama_offload.hlo.txt"))
    (folder / "unoptimized.hlo.txt").write_text(fixture_text("llama_offload.before_optimizations.hlo.txt"))
    intent = Intent((Policy(PolicyKind.SAVE_AND_OFFLOAD, offloaded=tuple(sorted(LINES)), offload_src="device",
                            offload_dst="pinned_host", differentiated=True),),
                    tuple(Tag(n, Where(llama, line), host_copy=True, producer=Where(llama, line), host_copies=1)
                          for n, line in LINES.items()))
    manifest: dict[str, Any] = {"target": "h100-sxm", "devices": 8, "intent": intent_to_dict(intent)}
    if with_names:
        manifest["tensor_names"] = [{"name": n, "file": llama, "line": line, "function": "layer",
                                     "producer_file": llama, "producer_line": line, "role": None}
                                    for n, line in LINES.items()]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_k_and_v_are_told_apart_by_data_flow(tmp_path: Path) -> None:
    report = load_report(str(_artifact(tmp_path, with_names=True)))
    assert {t.instruction.name: t.checkpoint_name for t in report.transfers} == BY_HAND
    assert {t.name_basis for t in report.transfers} == {NameBasis.DATA_FLOW}


def test_each_request_lists_exactly_the_transfers_that_carry_its_name(tmp_path: Path) -> None:
    # Given the step as the trace recorded it
    report = load_report(str(_artifact(tmp_path, with_names=True)))
    account = report.intent
    assert account is not None and [a.asked.kind for a in account.items] == [AskKind.OFFLOAD_NAME] * 3
    # Then each request lists the transfers named after it, each once, all of them
    listed = [(a.asked.what, v.transfer.instruction.name) for a in account.items for v in a.transfers]
    assert sorted(listed) == sorted((n, i) for i, n in BY_HAND.items())
    # K and V: two transfers to host and one back each, 128 KiB/step each way
    for a in account.items:
        bytes_per_step = a.bytes_per_step
        if a.asked.what != "query_proj":
            assert bytes_per_step == {Direction.TO_HOST: 128 << 10, Direction.TO_DEVICE: 128 << 10}
    # And the section says so where the table does
    text = "\n".join(intent_lines(account))
    value = text[text.index("offload 'value_proj'"):]
    assert "dynamic-update-slice-start.2.0 (to_host" in value
    assert "dynamic-update-slice-start.2.0" not in text[text.index("offload 'key_proj'"):text.index("offload 'query")]
    assert "GUESS" not in text and "guessed" not in text


def test_a_name_only_bytes_decide_is_a_guess_in_every_view(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    # Given a trace with no name records: data flow reaches no tagged op, the unoptimized module's
    # annotations (device_put.3/4/5 at lines 69/70/71) are matched with transfers by their bytes
    folder = _artifact(tmp_path, with_names=False)
    report = load_report(str(folder))
    to_host = [t for t in report.transfers if t.direction is Direction.TO_HOST]
    assert all(t.name_guessed and t.name_basis is NameBasis.BYTES for t in report.transfers)
    # Q's bytes are its own (256 KiB): its two writes carry its name; K and V share theirs (64 KiB)
    assert {t.instruction.name for t in to_host if t.checkpoint_name == "query_proj"} == {
        "dynamic-update-slice-start.6", "dynamic-update-slice-start.3.0"}
    # Then the accounting lists each transfer once, and says the names are guesses and whose bytes match
    account = report.intent
    assert account is not None
    listed = [v.transfer.instruction.name for a in account.items for v in a.transfers]
    assert sorted(listed) == sorted(t.instruction.name for t in report.transfers)
    section = "\n".join(intent_lines(account))
    assert section.count("name guessed by bytes") == len(report.transfers)
    assert "a GUESS" in section and "value_proj move(s) as many bytes" in section
    # the table marks each name and says what the mark means
    table = "\n".join(TableRenderer().lines(report))
    assert "value_proj?" in table and "key_proj?" in table and "query_proj?" in table
    assert "name?: a guess" in table
    # the TUI's transfer table and its Offloads-asked tab
    assert all(checkpoint_name(t).endswith(GUESS_MARK) for t in report.transfers)
    tab = intent_text(account).plain
    assert tab.count("name guessed by bytes") == len(report.transfers) and "a GUESS" in tab
    # the JSON report
    assert main(["analyze", str(folder), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {(t["name_basis"], t["name_guessed"]) for t in data["transfers"]} == {("bytes", True)}
    assert all(r["guessed_transfers"] == r["transfers"] for r in data["intent"]["requests"])
    assert any(f["fact"] == "named-by-bytes" for r in data["intent"]["requests"] for f in r["facts"])
    # a check naming a tensor says the names it saw are guesses, in every format
    for fmt, said in (("text", "a guess (only the bytes"), ("markdown", "a guess \\(only the bytes"),
                      ("json", "a guess (only the bytes"), ("sarif", "a guess (only the bytes"),
                      ("junit", "a guess (only the bytes"), ("github", "a guess (only the bytes")):
        code = main(["check", str(folder), "--no-config", "--expect-offloaded", "out_proj", "--format", fmt])
        out = capsys.readouterr().out
        assert code == 1 and said in out, fmt
    # a transfer's own violation names its tensor as a guess
    main(["check", str(folder), "--no-config", "--no-exposed"])
    assert "(a guess: by bytes only)" in capsys.readouterr().out
    # the diagram labels it so
    assert main(["dot", str(folder), "--transfer", "value_proj"]) == 0
    assert "checkpoint: value_proj (a guess: by bytes only)" in capsys.readouterr().out


def test_a_compile_from_the_fixture_names_nothing_it_was_not_asked_for(tmp_path: Path) -> None:
    # Given the trace asks to offload only query_proj, while the module offloads Q, K and V
    folder = _artifact(tmp_path, with_names=True)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["intent"]["policies"][0]["offloaded"] = ["query_proj"]
    for tag in manifest["intent"]["tags"]:
        tag["host_copy"] = tag["name"] == "query_proj"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    report = load_report(str(folder))
    # Then no transfer carries a name that was not requested; data flow still says what K and V are
    assert {t.checkpoint_name for t in report.transfers} == {"query_proj", None}
    assert {t.unrequested_name for t in report.transfers if t.checkpoint_name is None} == {"key_proj", "value_proj"}
    table = "\n".join(TableRenderer().lines(report))
    assert "moves checkpoint_name 'value_proj', which no request offloads" in table
    assert [v.transfer.checkpoint_name for a in report.intent.items for v in a.transfers] == ["query_proj"] * 3


def test_plain_fixture_without_a_trace_names_no_transfer() -> None:
    report = load_report(str(FIXTURES / "llama_offload.hlo.txt"))
    assert {t.checkpoint_name for t in report.transfers} == {None}
    assert report.intent is None


def test_frames_of_the_fixture_are_a_call_stack_not_one_frame_repeated() -> None:
    module = parse_hlo(fixture_text("llama_offload.hlo.txt"), "x")
    ins = module.computations["main.27_spmd"].by_name["loop_slice_fusion.6"]
    chain = [(f.file.rsplit("/", 1)[-1], f.line) for f in frames(module, ins)]
    # the V projection (llama.py:71), called from the remat wrapper in common.py, under the scan
    assert chain[0] == ("llama.py", 71) and len(set(chain)) > 1 and chain[1][0] == "common.py"


def test_the_tui_marks_a_guess_as_the_renderers_do() -> None:
    # the TUI keeps its own copy of the mark so that its first frame imports no renderer
    assert GUESS_MARK == RENDER_GUESS_MARK
