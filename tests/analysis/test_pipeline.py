"""The one pipeline: loaders build StepInputs, analyze_step returns the finished, frozen report.

Facts come from real fixtures: fixtures/memory/llama_offload_big_host is a compiled llama step
(optimized module, XLA's memory dumps, the compile's figures in memory.json).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from hloscope.analysis.context import StepContext
from hloscope.analysis.inputs import StepInputs
from hloscope.analysis.kinds import Direction
from hloscope.analysis.memory import Action, Role
from hloscope.analysis.passes import PASSES, TRANSFERS, VERDICTS
from hloscope.analysis.report import Report, analyze_step, reanalyze
from hloscope.analysis.simulate.overlap import AnalysisOptions
from hloscope.api import StepReport, analyze
from hloscope.artifact import load_report, read_step
from hloscope.check.subject import load_path
from hloscope.compile.run.artifacts import MANIFEST_SCHEMA
from hloscope.hlo.parser import parse_hlo
from hloscope.hlo.xla_dumps import BUFFER_ASSIGNMENT_FILE, LIVE_AT_PEAK_FILE, MEMORY_REPORT_FILE, XlaDumpTexts
from hloscope.targets import get_target

ROOT = Path(__file__).resolve().parents[2]
BIG = ROOT / "fixtures" / "memory" / "llama_offload_big_host"
#: As if the GPU had 200 MB: the step (224,831,980 bytes of device allocation) does not fit.
SMALL_HBM = 200_000_000


def _artifact(tmp: Path, hbm: int = SMALL_HBM) -> Path:
    """An artifact folder made of the fixture's real files, with the compile's figures in its manifest."""
    meta = json.loads((BIG / "memory.json").read_text())
    out = tmp / "art"
    out.mkdir()
    shutil.copy(BIG / "optimized.hlo.txt", out / "optimized.hlo.txt")
    for name in (MEMORY_REPORT_FILE, LIVE_AT_PEAK_FILE, BUFFER_ASSIGNMENT_FILE):  # XLA's memory texts
        shutil.copy(BIG / name, out / name)
    manifest = {"schema": MANIFEST_SCHEMA, "target": "h100-sxm", "devices": meta["devices"],
                "xla_options": {}, "memory": dict(meta["memory"], device_memory_size=hbm),
                "config": meta["config"], "workload": meta["workload"]}
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


def test_artifact_report_is_finished_by_the_pipeline(tmp_path: Path) -> None:
    # Given an artifact folder of a step that does not fit,
    # when it is loaded, the report already holds the memory facts, built from the manifest's
    # figures and XLA's dumps: nothing is added to the report afterwards.
    art = _artifact(tmp_path)
    report = load_report(str(art))
    assert report.memory is not None and report.inputs.manifest is not None
    # 121,412,096 + 103,419,584 + 121,408,300 - 121,408,000 (memory.json) over 200,000,000.
    assert report.memory.device_allocation_bytes == 224_831_980 and not report.memory.fits
    assert report.memory.hbm_bytes == SMALL_HBM
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.memory = None  # type: ignore[misc]
    # The pairs are the pipeline's result, held on the report.
    assert report.pairs and all(p.start.opcode.endswith("-start") for p in report.pairs)
    # The dependency graph is built from those pairs, on the report (not cached on the index).
    async_edges = {(u, v) for u, v, d in report.dependency_graph.edges(data=True) if d["kind"] == "async"}
    assert len(async_edges) == len(report.pairs)


def test_memory_advice_names_what_the_step_offloads(tmp_path: Path) -> None:
    # The report and a check subject of the same folder carry the offloaded names in the advice
    # (check/subject.py used to build its memory facts without them).
    art = _artifact(tmp_path)
    report = load_report(str(art))
    offloaded = report.offloaded_names()
    assert offloaded, "the llama step offloads activations to host"
    assert report.memory is not None
    first = report.memory.next_steps[0]
    assert first.action is Action.OFFLOAD_SAVED and first.because is Role.SAVED_ACTIVATIONS
    assert first.offloaded == offloaded
    subject = load_path(str(art), None)
    assert subject.memory is not None and subject.memory.next_steps[0].offloaded == offloaded


def test_reanalyze_goes_through_the_pipeline(tmp_path: Path) -> None:
    report = load_report(str(_artifact(tmp_path)), options=AnalysisOptions(link_mode="achieved"))
    peak = reanalyze(report, AnalysisOptions(link_mode="peak"))
    assert peak.options.link_mode == "peak" and peak.inputs is report.inputs
    assert peak.memory == report.memory and peak.notes == report.notes
    assert [v.transfer.instruction.name for v in peak.verdicts] == [v.transfer.instruction.name
                                                                    for v in report.verdicts]


def test_manifest_read_once_into_the_inputs(tmp_path: Path) -> None:
    art = _artifact(tmp_path)
    step = read_step(str(art))
    assert step.target.name == "h100-sxm" and step.target_origin == "manifest"
    assert step.inputs.vocab_size == json.loads((BIG / "memory.json").read_text())["config"]["vocab"]
    assert step.inputs.dumps.live_range == (BIG / "live-range-at-peak.txt").read_text()
    assert any(n.startswith("artifact folder: target h100-sxm (from manifest.json)") for n in step.inputs.notes)


def test_plain_module_has_no_memory_and_same_verdicts() -> None:
    text = (BIG / "optimized.hlo.txt").read_text()
    module = parse_hlo(text, "x")
    plain = analyze_step(StepInputs(module, "x"), get_target("h100-sxm"))
    assert plain.memory is None and plain.compile is None and type(plain) is Report
    meta = json.loads((BIG / "memory.json").read_text())
    with_figures = analyze_step(StepInputs(parse_hlo(text, "x"), "x", memory_figures=meta["memory"],
                                           dumps=XlaDumpTexts()), get_target("h100-sxm"))
    assert with_figures.memory is not None and with_figures.memory.top_buffers == ()  # no dumps given
    assert [str(v.verdict) for v in plain.verdicts] == [str(v.verdict) for v in with_figures.verdicts]


def test_api_report_prints_and_analysis_report_is_data() -> None:
    report = analyze(BIG / "optimized.hlo.txt")
    assert isinstance(report, StepReport)
    assert str(report) == report.to_text() and report.to_dict()["summary"]["transfers"] == len(report.verdicts)
    assert not hasattr(Report, "to_text") and not hasattr(Report, "to_dict")


def test_report_fields_are_the_pass_table_and_no_copy_of_the_inputs() -> None:
    # Given the pass table, every Report field is an input, the context's index/cost, or one row's
    # result; what the inputs hold (module, notes, compile, scheduler) is read from them, not copied.
    names = [p.name for p in PASSES]
    assert len(names) == len(set(names))
    fields = {f.name for f in dataclasses.fields(Report)}
    assert fields == {"inputs", "target", "options", "index", "cost", *names}
    assert not fields & {"module", "notes", "compile", "scheduler"}
    inputs = StepInputs(parse_hlo((BIG / "optimized.hlo.txt").read_text(), "x"), "x", notes=("read from x",))
    report = analyze_step(inputs, get_target("h100-sxm"))
    assert report.module is inputs.module and report.notes == ("read from x",) and report.scheduler is None
    # The module's 9 async starts with an S(5) operand or result (read by hand): 3 dynamic-slice-starts
    # (host to device, lines 1263-1268) and 6 dynamic-update-slice-starts; one verdict each, same order.
    assert [v.transfer for v in report.verdicts] == list(report.transfers)
    assert sorted(t.instruction.name for t in report.transfers if t.direction is Direction.TO_DEVICE) == [
        "dynamic-slice-start.1.0", "dynamic-slice-start.2.0", "dynamic-slice-start.3"]
    assert len(report.transfers) == 9


def test_a_pass_reads_only_the_rows_before_it() -> None:
    # A row asked for before it ran is a KeyError naming the missing row: the table's order is the contract.
    ctx = StepContext(StepInputs(parse_hlo((BIG / "optimized.hlo.txt").read_text(), "x"), "x"),
                      get_target("h100-sxm"), AnalysisOptions())
    with pytest.raises(KeyError, match="transfers"):
        VERDICTS.run(ctx)  # reads TRANSFERS, which has not run
    ctx.run(PASSES[:PASSES.index(VERDICTS) + 1])
    assert len(ctx[VERDICTS]) == len(ctx[TRANSFERS])


def _replace_calls_on_reports(path: Path) -> list[int]:
    tree = ast.parse(path.read_text())
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            first = ast.unparse(node.args[0]).rsplit(".", 1)[-1]  # report, subject.report; not report.inputs
            if name == "replace" and "report" in first.lower():
                lines.append(node.lineno)
    return lines


def test_no_report_is_patched_outside_the_pipeline() -> None:
    # A report is finished once (STYLE.md 15): no dataclasses.replace(report, ...) anywhere in the package.
    found = {str(p.relative_to(ROOT)): ln for p in sorted((ROOT / "hloscope").rglob("*.py"))
             if (ln := _replace_calls_on_reports(p))}
    assert found == {}


#: What transfers, verdicts and compile results are called where they are handled.
_MADE_ONCE = ("transfer", "verdict", "result", "timing")


def _replace_calls_on_made_once(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            first = ast.unparse(node.args[0]).rsplit(".", 1)[-1].lower()
            if name == "replace" and (first in ("t", "v", "w", "r") or any(k in first for k in _MADE_ONCE)):
                out.append(f"{node.lineno}: {ast.unparse(node)[:80]}")
    return out


def test_no_transfer_verdict_or_compile_result_is_patched() -> None:
    # Names, verdicts and timings are computed before the objects that hold them are built (issue 26
    # item 5): no dataclasses.replace of a HostTransfer, Verdict or CompileResult in the package.
    found = {str(p.relative_to(ROOT)): ln for p in sorted((ROOT / "hloscope").rglob("*.py"))
             if (ln := _replace_calls_on_made_once(p))}
    assert found == {}


def test_the_patch_detector_sees_the_patches_it_forbids(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text("import dataclasses\nfrom dataclasses import replace\n"
                      "a = dataclasses.replace(t, checkpoint_name='x')\nb = replace(v, verdict=1)\n"
                      "c = replace(verdict.timing, wait_us=0)\nd = replace(compile_result, hlo='')\n"
                      "e = replace(cfg, target='h100')\n")
    assert [ln.split(":")[0] for ln in _replace_calls_on_made_once(sample)] == ["3", "4", "5", "6"]


def test_analysis_imports_no_renderer() -> None:
    for p in sorted((ROOT / "hloscope" / "analysis").rglob("*.py")):
        tree = ast.parse(p.read_text())
        for node in ast.walk(tree):
            mods = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            assert not any(m.startswith(("hloscope.render", "hloscope.cli", "hloscope.api")) for m in mods), p


def test_tui_source_reads_the_manifest_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The TUI asks a source for its target many times (status line, toast, export); the manifest
    # is read on the first question only, and a workload's target is its request's.
    import hloscope.artifact as artifact
    from hloscope.request import CompileRequest
    from hloscope.tui.load import Source

    art = _artifact(tmp_path)
    reads: list[str] = []
    real = artifact.read_manifest

    def counting(path: str) -> dict[str, object] | None:
        reads.append(str(path))
        return real(path)

    monkeypatch.setattr(artifact, "read_manifest", counting)
    source = Source(str(art))
    assert [source.target_name for _ in range(5)] == ["h100-sxm"] * 5
    assert reads == [str(art)]
    compiled = Source(None, CompileRequest("gb200", 16, workload="mlp"))
    assert compiled.target_name == "gb200" and compiled.label == "workload mlp (gb200, 16 devices)"
    assert reads == [str(art)]


def test_the_report_says_which_scheduler_ran(tmp_path: Path) -> None:
    # An artifact folder's manifest records the scheduler XLA ran (compile/cuda/scheduler.py); the
    # loader reads it into StepInputs and the report shows it in the table and the JSON.
    from hloscope.analysis.inputs import ScheduleRun
    from hloscope.render import render_to_string
    from hloscope.render.json_report import report_to_dict
    from hloscope.render.scheduler_text import scheduler_line

    art = _artifact(tmp_path)
    manifest = json.loads((art / "manifest.json").read_text())
    record = {"name": "lhs", "estimator": "sol", "requested": "lhs", "source": "optimized HLO and XLA's log",
              "sol_table": "NVIDIA H100 80GB HBM3", "reason": None}
    (art / "manifest.json").write_text(json.dumps(dict(manifest, scheduler=record)))
    report = load_report(str(art))
    assert report.scheduler == ScheduleRun("lhs", "sol", "lhs", "optimized HLO and XLA's log", "NVIDIA H100 80GB HBM3")
    text = render_to_string("table", report).splitlines()
    assert text[1] == "scheduler: lhs, speed-of-light estimator (NVIDIA H100 80GB HBM3 table)"
    assert report_to_dict(report)["scheduler"] == record
    # The words of the other runs XLA records.
    assert scheduler_line(ScheduleRun("none", requested="none")) == "scheduler: none (no latency hiding scheduler)"
    assert scheduler_line(ScheduleRun("lhs", "approximate", "lhs", reason="Non homogenous replica group")) == \
        ("scheduler: lhs, approximate estimator (XLA's speed-of-light estimator did not start: the collective "
         "table XLA carries for this GPU does not load in this XLA, whatever the step; nothing in this compile "
         "failed; docs/targets.md)")
    assert scheduler_line(ScheduleRun("lhs", "approximate", "lhs-approx")) == "scheduler: lhs, approximate estimator"
    assert scheduler_line(ScheduleRun("lhs", "sol", "none")).endswith("; asked for none")
    # A plain HLO file (or an older folder) has no record and no line.
    plain = load_report(str(BIG / "optimized.hlo.txt"))
    assert plain.scheduler is None and "scheduler" not in report_to_dict(plain)
    assert not render_to_string("table", plain).splitlines()[1].startswith("scheduler:")
    assert ScheduleRun.from_record({"name": ""}) is None and ScheduleRun.from_record(None) is None


def test_a_manifest_of_another_schema_is_one_line(tmp_path: Path) -> None:
    # The reader checks the schema the writer puts in every manifest (hloscope.hlo.folders); a
    # folder written by another layout is refused by every command alike, before any parsing.
    import shutil

    from hloscope.artifact import read_manifest
    from hloscope.cli.main import main
    from hloscope.errors import HloscopeError

    art = tmp_path / "art"
    shutil.copytree(Path(__file__).resolve().parents[1] / "check" / "data" / "mlp_sync", art)
    assert read_manifest(art)["schema"] == MANIFEST_SCHEMA  # type: ignore[index]
    data = json.loads((art / "manifest.json").read_text())
    data["schema"] = "hloscope.artifact/9"
    (art / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(HloscopeError) as e:
        read_manifest(art)
    assert e.value.exit_code == 2 and "hloscope.artifact/9" in str(e.value) and MANIFEST_SCHEMA in str(e.value)
    for argv in (["analyze", str(art)], ["check", str(art)], ["export", str(art), "-o", str(tmp_path / "x")]):
        assert main(argv) == 2, argv
    del data["schema"]  # a folder put together by hand, without one, is read
    (art / "manifest.json").write_text(json.dumps(data))
    assert read_manifest(art) is not None


def test_one_schedule_record_from_compile_to_report() -> None:
    # Given a compile's result that read which scheduler ran, the cache's record of it, the result
    # read back and the step's inputs carry the same ScheduleRun: no second record type between them.
    from hloscope.analysis.inputs import ScheduleRun
    from hloscope.compile.result import CompileResult
    from hloscope.compile.run.jobs import step_inputs

    run = ScheduleRun("lhs", "sol", None, "optimized HLO and XLA's log", "NVIDIA H100 80GB HBM3")
    result = CompileResult(optimized_hlo=(BIG / "optimized.hlo.txt").read_text(), unoptimized_hlo="", memory={},
                           options={}, versions={}, target="h100-sxm", devices=8, mesh_shape={}, scheduler=run)
    record = json.loads(json.dumps(result.to_record()))
    assert record["scheduler"] == {"name": "lhs", "estimator": "sol", "requested": None,
                                   "source": "optimized HLO and XLA's log", "sol_table": "NVIDIA H100 80GB HBM3",
                                   "reason": None}
    back = CompileResult.from_record(record)
    assert back == result and back.scheduler == run
    assert step_inputs(result).scheduler is run
    assert CompileResult.from_record(dict(record, scheduler=None)).scheduler is None


def test_compile_figures_are_derived_once_per_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a compile of the big-host llama step (its recorded figures and XLA's memory texts), its
    # manifest, its report (compile section and memory facts) and a re-read of the manifest's
    # figures all come from one derivation, typed: before, compile_figures ran for each of them.
    import hloscope.analysis.memory as memory
    import hloscope.compile.result as result_module
    from hloscope.compile.result import XLA_MEMORY_FIELDS, CompileResult
    from hloscope.compile.run.artifacts import manifest
    from hloscope.compile.run.jobs import analyze_result

    calls: list[int] = []
    derive = memory.derive_figures

    def counted(*args: object, **kw: object) -> memory.CompileFigures:
        calls.append(1)
        return derive(*args, **kw)

    monkeypatch.setattr(memory, "derive_figures", counted)
    monkeypatch.setattr(result_module, "derive_figures", counted)
    meta = json.loads((BIG / "memory.json").read_text())
    texts = {n: (BIG / n).read_text() for n in (MEMORY_REPORT_FILE, LIVE_AT_PEAK_FILE, BUFFER_ASSIGNMENT_FILE)}
    result = CompileResult(optimized_hlo=(BIG / "optimized.hlo.txt").read_text(), unoptimized_hlo="",
                           memory={k: meta["memory"][k] for k in XLA_MEMORY_FIELDS}, options={}, versions={},
                           target="h100-sxm", devices=8, mesh_shape={}, extra_files=texts)
    written = json.loads(manifest(result, {}))["memory"]
    report = analyze_result(result, "h100-sxm")
    assert calls == [1]
    # 121,412,096 + 103,419,584 + 121,408,300 - 121,408,000 (memory.json), as the compile recorded it.
    assert result.figures.device_allocation_bytes == 224_831_980 == written["device_allocation_bytes"]
    assert report.memory is not None and report.memory.device_allocation_bytes == 224_831_980
    assert report.compile is not None and report.compile["memory"] == written
    assert written == {k: v for k, v in meta["memory"].items() if k != "device_memory_size"}
