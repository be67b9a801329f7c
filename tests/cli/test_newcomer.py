"""What a new user trips over first, tried from the command line (issue 27).

Each test runs the CLI as a user types it (``main([...])``) on real inputs: the
fixtures' XLA dumps (a GPU one compiled deviceless, a CPU one run with JAX on this
machine: fixtures/generate_cpu_dump.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CPU_DUMP = ROOT / "fixtures" / "cpu" / "dump_grad_step"
CPU_TEXT = CPU_DUMP / "module_0006.jit_step.cpu_after_optimizations.txt"
GPU_DUMP = ROOT / "fixtures" / "dump_mlp_offload"


@pytest.mark.parametrize("sizes", ["0", "4,-1", "8,0,16"])
def test_bad_batch_sizes_refused_before_compiling(sizes: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "mlp", "--batch-sizes", sizes]) == 2
    out, err = capsys.readouterr()
    if sizes == "0":
        assert err.strip().removeprefix("hloscope: error: ") in (ROOT / "docs" / "cli.md").read_text().replace("\n", " ")
    bad = next(b for b in sizes.split(",") if int(b) < 1)
    assert out == "" and err == (f"hloscope: error: --batch-sizes: {bad} is not a per-device batch size "
                                 f"(want integers >= 1, got '{sizes}')\n")


def test_a_cpu_dump_says_it_is_not_a_gpu_module(capsys: pytest.CaptureFixture[str]) -> None:
    # The folder's one module file is XLA:CPU's (dump.cc named it *.cpu_after_optimizations.txt).
    assert main(["analyze", str(CPU_DUMP)]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[0] == (
        "hloscope: note: this module was compiled for the CPU, not a GPU (XLA named the dump file "
        "module_0006.jit_step.cpu_after_optimizations.txt): its schedule says nothing about a GPU; the figures "
        "below model it on h100-sxm anyway, and --fail-on exits 8 on it (nothing to judge)")
    assert "module jit_step (scheduled)" in out
    assert err.splitlines()[0] in (ROOT / "docs" / "cli.md").read_text()  # the doc shows what it prints
    # As a gate it fails: nothing to judge (exit 8), never a pass.
    assert main(["analyze", str(CPU_DUMP), "--fail-on", "exposed"]) == 8


def test_cpu_text_on_stdin_is_known_by_its_backend_config(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # No file name: XLA:CPU's backend config (outer_dimension_partitions) on the fusion shows it.
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.StringIO(CPU_TEXT.read_text()))
    assert main(["analyze", "-"]) == 0
    err = capsys.readouterr().err
    assert "compiled for the CPU, not a GPU (XLA's CPU backend config on ynn_fusion)" in err


def test_a_gpu_dump_gets_no_backend_note(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(GPU_DUMP)]) == 0
    assert "compiled for the CPU" not in capsys.readouterr().err


def test_svg_text_asks_for_fonts_a_plain_machine_has(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The layout is measured in DejaVu Sans (graphviz-pure has its metrics; with a list of families
    # it falls back to narrow Times, and the text would overflow); the SVG lists fallbacks after it.
    out = tmp_path / "s.svg"
    assert main(["dot", str(ROOT / "fixtures" / "llama_offload.hlo.txt"), "--schedule", "main.27_spmd",
                 "-o", str(out), "--renderer", "graphviz-pure"]) == 0
    import re

    families = set(re.findall(r'font-family="([^"]*)"', out.read_text()))
    assert families == {"DejaVu Sans, Verdana, Helvetica, Arial, sans-serif"}
    assert "no hard-coded metrics" not in capsys.readouterr().err


def test_argparse_errors_name_the_command_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dot", str(ROOT / "fixtures" / "llama_offload.hlo.txt")]) == 2
    err = capsys.readouterr().err
    assert err == "hloscope: error: dot: one of the arguments --transfer --computation --schedule --calls is required\n"


def test_markdown_escapes_only_what_markdown_acts_on() -> None:
    from hloscope.render.check.markdown import md

    assert md("hloscope-out/step/llama.py:67 a.b, 3+4=7; 50% 'q' \"d\" {x} ^") == \
        "hloscope-out/step/llama.py:67 a.b, 3+4=7; 50% 'q' \"d\" {x} ^"
    # What GitHub acts on stays inert: cells, code, links (also bare autolinks), emphasis, mentions, math.
    assert md("a|b `c` [d](e) http://x.y www.x.y *f* _g_ ~h~ @team #1 $m$ <i> &") == (
        "a\\|b \\`c\\` \\[d\\]\\(e\\) http\\://x.y www\\.x.y \\*f\\* \\_g\\_ \\~h\\~ \\@team \\#1 \\$m\\$ &lt;i&gt; &amp;")


def test_gb200_fallback_reason_is_explained_in_the_scheduler_line() -> None:
    # The manifest's scheduler record of the README's API example (gb200, 8 devices, a module with no
    # collective; jaxlib 0.10.2): XLA's reason lists 72 device ids, those of its own collective table's
    # GB200 entry (an all-reduce over iota groups 4 x 18 of 72 devices, in the plugin's default table),
    # not the step's. Issue 36 item 11: the line read as an error, with 72 devices for the 8 asked for.
    from hloscope.analysis.inputs import ScheduleRun
    from hloscope.render.scheduler_text import scheduler_line

    groups = ",".join("{" + ",".join(str(i) for i in range(k, k + 18)) + "}" for k in (0, 18, 36, 54))
    run = ScheduleRun.from_record({"name": "lhs", "estimator": "approximate", "requested": "lhs",
                                   "source": "optimized HLO and XLA's log", "sol_table": "default",
                                   "reason": "FAILED_PRECONDITION: Non homogenous replica group: {" + groups + "}"})
    line = scheduler_line(run)
    assert line == (
        "scheduler: lhs, approximate estimator (XLA's speed-of-light estimator did not start: the collective "
        "table XLA carries for this GPU, with replica groups over 72 devices, does not load in this XLA, whatever "
        "the step; nothing in this compile failed; docs/targets.md)")
    assert "FAILED" not in line and "Non homogenous" not in line
    assert "Non homogenous replica group" in run.reason  # the JSON and the manifest keep XLA's words


def test_a_wide_transfer_window_is_capped_with_what_was_left_out(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # dynamic-update-slice-start.6 in the llama fixture: an 80-instruction window (31 compute, 1
    # collective). At 150 nodes it drew 5119 x 2022 pt; now 48 nodes, both ends of the window kept.
    out = tmp_path / "t.svg"
    assert main(["dot", str(ROOT / "fixtures" / "llama_offload.hlo.txt"), "--transfer",
                 "dynamic-update-slice-start.6", "-o", str(out), "--renderer", "graphviz-pure"]) == 0
    err = capsys.readouterr().err
    import re

    note = next(ln for ln in err.splitlines() if ln.startswith("hloscope: note: showing 48 of "))
    m = re.search(r"(\d+) window op\(s\) #(\d+)\.\.#(\d+), the rest neighbours\); widen with --max-nodes (\d+)", note)
    assert m is not None, note
    width, height = (float(x) for x in re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"',
                                                 out.read_text()).groups())  # type: ignore[union-attr]
    assert width <= 24 * 72 and height <= 16 * 72
    # the ops right after the start and right before the done are drawn; the middle was cut
    from hloscope.render.dot.draw import build_view
    from tests.conftest import fixture_report

    report = fixture_report("llama_offload.hlo.txt")
    v = next(v for v in report.verdicts if v.transfer.instruction.name == "dynamic-update-slice-start.6")
    window = v.window_instructions(report.module)
    source = build_view(report, "transfer", "dynamic-update-slice-start.6").graph.source
    assert f"/{window[0].name}\"" in source and f"/{window[-1].name}\"" in source
    assert int(m.group(2)) > window[0].position and int(m.group(3)) < window[-1].position
