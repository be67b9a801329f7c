"""Names users know: checkpoint_name, role and user source line per transfer (analysis/structure/transfer_names.py)."""

from __future__ import annotations

import json

from hloscope.analysis.report import analyze_module
from hloscope.analysis.structure.name_records import NameRecord, name_records
from hloscope.analysis.structure.value_flow import op_name_checkpoint
from hloscope.hlo.parser import parse_hlo
from hloscope.targets import get_target
from tests.conftest import fixture_text

LLAMA = "/work/main/hloscope/compile/workloads/llama.py"


def _records(lines: dict[str, int]) -> list[dict[str, object]]:
    # The llama fixture was compiled when llama.py tagged Q, K and V on lines 69, 70, 71 (read from
    # the unoptimized fixture's dot_general frames: dot_general.9/10/11 -> llama.py:69/70/71).
    return [{"name": n, "file": LLAMA, "line": line, "producer_file": LLAMA, "producer_line": line, "role": n.upper()}
            for n, line in lines.items()]


def test_every_llama_transfer_gets_its_name_from_the_source_line() -> None:
    text = fixture_text("llama_offload.hlo.txt")
    # Stored paths in the fixture are absolute; match on them as recorded.
    recs = _records({"query_proj": 69, "key_proj": 70, "value_proj": 71})
    for r in recs:
        r["file"] = r["producer_file"] = next(
            line.split('"')[1] for line in text.splitlines() if line.strip().endswith('llama.py"'))
    report = analyze_module(parse_hlo(text, "llama_offload.hlo.txt"), get_target("h100-sxm"), names=recs)
    named = {(str(t.direction), t.checkpoint_name) for t in report.transfers}
    # 3 tagged tensors, each offloaded (peeled + in-loop) and fetched back.
    assert named == {(d, n) for d in ("to_host", "to_device") for n in ("query_proj", "key_proj", "value_proj")}
    by_name = {t.checkpoint_name: t for t in report.transfers}
    assert by_name["query_proj"].source is not None and by_name["query_proj"].source.line == 69
    assert by_name["value_proj"].role == "VALUE_PROJ"
    # Q is [1,256,8,64] bf16 per device, K/V [1,256,2,64]: the names follow the bytes.
    assert {t.bytes for t in report.transfers if t.checkpoint_name == "query_proj"} == {256 * 8 * 64 * 2}
    assert {t.bytes for t in report.transfers if t.checkpoint_name == "key_proj"} == {256 * 2 * 64 * 2}


def test_plain_hlo_shows_the_user_line_not_the_remat_wrapper() -> None:
    text = fixture_text("llama_offload.before_optimizations.hlo.txt")
    report = analyze_module(parse_hlo(text, "x"), get_target("h100-sxm"))
    to_host = [t for t in report.transfers if str(t.direction) == "to_host"]
    # device_put.3/4/5 offload sharding_constraint(dot_general.9/10/11), computed at llama.py:69/70/71;
    # the device_put itself is at the remat wrapper, common.py:140.
    assert sorted((t.source.file.rsplit("/", 1)[-1], t.source.line) for t in to_host if t.source) == [
        ("llama.py", 69), ("llama.py", 70), ("llama.py", 71)]
    assert all(t.checkpoint_name is None for t in report.transfers)  # JAX 0.10 records no name in HLO


def test_op_name_lookup_reads_a_name_a_future_jax_records() -> None:
    text = fixture_text("mlp_offload.before_optimizations.hlo.txt")
    line = next(ln for ln in text.splitlines() if "device_put.1 = " in ln)
    edited = line.replace('op_name="', 'op_name="jit(step)/checkpoint_name[name=hidden]/', 1)
    assert edited != line
    report = analyze_module(parse_hlo(text.replace(line, edited), "x"), get_target("h100-sxm"))
    names = {t.instruction.name: t.checkpoint_name for t in report.transfers}
    assert names["device_put.1"] == "hidden"
    assert op_name_checkpoint(report.transfers[0].instruction) in ("hidden", None)


def test_a_manifests_name_records_read_typed_and_write_back_the_same() -> None:
    # Given: MaxText's RoPE step, whose manifest lists nine records with every key (the reader's form).
    raw = json.loads(fixture_text("maxtext_rope/manifest.json"))["tensor_names"]
    # When: they are read once into typed records and written back.
    records = name_records(raw)
    # Then: the same JSON, to the byte; and the fields read by hand in the manifest.
    assert json.dumps([r.to_json() for r in records], indent=1) == json.dumps(raw, indent=1)
    q, k = records[0], records[1]
    assert (q.name, q.line, q.producer_line, k.name, k.line, k.producer_line) == (
        "query_proj", 1324, 265, "key_proj", 1325, 265)  # Q and K computed at one RoPE line, tagged apart
    assert q.producer_callers[0].endswith("maxtext/layers/embeddings.py:302") and q.weights == ()
    assert records[2].weights == ("state['model']['decoder']['layers']['self_attention']['value']['kernel'].value",)
    assert q.source.line == 265 and q.source.file.endswith("maxtext/layers/embeddings.py")


def test_a_record_made_before_the_producer_was_read_takes_its_own_line_as_the_source() -> None:
    # An older record: no producer_file / producer_line, no callers (hloscope read them later).
    rec = NameRecord.from_json({"name": "query_proj", "file": LLAMA, "line": 69, "function": "layer"})
    assert (rec.producer_file, rec.producer_line, rec.callers, rec.same_value) == (None, None, (), ())
    assert (rec.source.file, rec.source.line, rec.source.function) == (LLAMA, 69, "layer")
    # Written back (producer_file and producer_line null), it reads back the same record: not "None".
    assert rec.to_json()["producer_file"] is None and NameRecord.from_json(rec.to_json()) == rec
