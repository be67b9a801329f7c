"""One program in both of XLA's printings gives one report (issue 52).

XLA's dump writes an async-wrapped op as ``async-start(...), calls=%async_computation.N`` with the
computation; ``compiled.as_text()`` (what ``hloscope compile`` writes and what a user pastes) writes it
sugared, ``dynamic-update-slice-start(...)``, without one, and prints the computations in another
order. ``fixtures/as_text/`` holds the ``as_text()`` printing of dump-printed fixtures, made by XLA's
own parser and printer (``fixtures/generate_as_text.py``; ``tests/xla/test_two_printings_vs_xla.py``
checks them against the installed jaxlib). Each pair must give the same JSON report byte for byte,
but for what names the file: ``source_path``, and each transfer's ``line`` in it (the printings
place an instruction on different lines; the sugared one has no wrapped computations). The text
report, likewise, and ``hloscope diff`` of the two finds nothing changed.

Read by hand from the files (the facts the reports must carry):
- TPU v5e scan (``tpu_v5e/offload_scan_8x128MiB``): the dump's ``%dynamic-update-slice-start =
  ... async-start(%get-tuple-element.152, %bitcast.70, ...), calls=%async_computation`` (root
  ``dynamic_update_slice.18`` into ``bf16[8,8192,8192]...S(5)``) is ``dynamic-update-slice-start(...)``
  in ``as_text()``; four ``slice-start`` into VMEM (``S(1)``) likewise. Its op is
  ``dynamic-update-slice`` in both, moving one layer's ``bf16[1,8192,8192]`` (128 MiB) x8.
- MaxText 405B (``tpu_maxtext405b``): 6 ``dynamic-update-slice-start`` and 3 ``dynamic-slice-start``
  in ``as_text()``, and two sparse-core ``call-start`` (one with late-bound operands on its
  ``call-update``); the never-read host writes are 576 MiB per step from either printing.
- GPU (``dump_mlp_offload``, jax 0.10.2 and 0.12): ``reduce-scatter``/``all-gather``, dynamic
  (update-)slices, fusions and a pad wrapped in ``async-start`` in the dump, sugared in ``as_text()``;
  ``all-gather-start``/``all-reduce-start`` and ``copy-start`` are XLA's own opcodes, printed alike.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from hloscope.cli.main import main
from tests.conftest import FIXTURES


@dataclass(frozen=True)
class Printings:
    dump: str  # the dump-printed module, under fixtures/
    as_text: str  # its as_text() printing, under fixtures/as_text/
    target: str


CASES: dict[str, Printings] = {
    "TPU v5e scan: dynamic-(update-)slice into S(5), slices into VMEM S(1)": Printings(
        "tpu_v5e/offload_scan_8x128MiB.hlo.txt", "tpu_v5e_offload_scan_8x128MiB.hlo.txt", "tpu-v5e"),
    "TPU v5e optimizer state on host: 44 slice-starts, copies": Printings(
        "measured/tpu_v5e/opt_host/step.hlo.txt", "tpu_v5e_opt_host.hlo.txt", "tpu-v5e"),
    "MaxText 405B v5p-128, 2 layers: Q/K/V to host, sparse-core gathers": Printings(
        "tpu_maxtext405b/module_0000.jit_train_step.cl_1004524046.after_optimizations.txt",
        "tpu_maxtext405b_train_step.hlo.txt", "tpu-v5p"),
    "GPU jax 0.10.2 mlp offload: wrapped reduce-scatter, dynamic slices, copies, collectives": Printings(
        "dump_mlp_offload/module_6045.jit_step.sm_9.0a_gpu_after_optimizations.txt",
        "gpu_dump_mlp_offload.hlo.txt", "h100-sxm"),
    # The dump written with --xla_dump_compact_gte=false: as_text() writes no compact tuple elements either,
    # and hloscope takes XLA 0.12's stream model for a bare file only when it sees them (analysis/structure/
    # streams.py stream_model): the compact dump and as_text() of one 0.12 compile differ there, not here.
    "GPU jax 0.12 mlp offload: wrapped all-gather, fusions, dynamic slices": Printings(
        "jax012/dump_mlp_offload_expanded_gte/module_0001.jit_step.sm_9.0a_gpu_after_optimizations.txt",
        "gpu_jax012_dump_mlp_offload.hlo.txt", "h100-sxm"),
}
_LINE = re.compile(r'\n( *)"line": \d+,')


def _both(tmp_path: Path, case: Printings) -> tuple[Path, Path]:
    """The two printings under neutral names (a dump file's name and folder say more than its text)."""
    dump, as_text = tmp_path / "dump.hlo.txt", tmp_path / "as_text.hlo.txt"
    shutil.copyfile(FIXTURES / case.dump, dump)
    shutil.copyfile(FIXTURES / "as_text" / case.as_text, as_text)
    return dump, as_text


def _report(capsys: pytest.CaptureFixture[str], path: Path, *options: str) -> str:
    assert main(["analyze", str(path), *options]) == 0
    return capsys.readouterr().out.replace(str(path), "SOURCE")


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_both_printings_give_one_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             case: Printings) -> None:
    dump, as_text = _both(tmp_path, case)
    a = _report(capsys, dump, "--target", case.target, "--json")
    b = _report(capsys, as_text, "--target", case.target, "--json")
    # Given the reports without what places the instructions in their files, when compared, then equal.
    assert _LINE.sub(r'\n\1"line": 0,', a) == _LINE.sub(r'\n\1"line": 0,', b)
    doc = json.loads(a)
    assert doc["transfers"] and "async-start" not in {t["op"] for t in doc["transfers"]}
    assert "async_wrapped" not in b and "async_computation" not in a  # no printing's computation names leak


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_both_printings_give_one_text_report_and_diff_finds_no_change(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], case: Printings) -> None:
    dump, as_text = _both(tmp_path, case)
    assert _report(capsys, dump, "--target", case.target) == _report(capsys, as_text, "--target", case.target)
    assert main(["diff", str(dump), str(as_text), "--target", case.target]) == 0
    out = capsys.readouterr().out
    assert "0 regression(s)" in out and "no change beyond the tolerances" in out, out
    assert "lost" not in out and "new" not in out.split(":", 1)[1], out


def test_the_v5e_scans_transfers_read_the_same_from_either(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = CASES["TPU v5e scan: dynamic-(update-)slice into S(5), slices into VMEM S(1)"]
    dump, as_text = _both(tmp_path, case)
    for path in (dump, as_text):
        doc = json.loads(_report(capsys, path, "--target", "tpu-v5e", "--json"))
        got = {(t["name"], t["direction"], t["op"], t["bytes"], t["executions"]) for t in doc["transfers"]}
        assert got == {("dynamic-update-slice-start", "to_host", "dynamic-update-slice", 128 << 20, 8),
                       ("dynamic-slice-start", "to_device", "dynamic-slice", 128 << 20, 8)}


def test_the_405b_steps_never_read_host_writes_are_found_from_as_text(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # The 576 MiB per step of tests/analysis/structure/test_unread_host_writes.py, from compile's printing.
    case = CASES["MaxText 405B v5p-128, 2 layers: Q/K/V to host, sparse-core gathers"]
    _, as_text = _both(tmp_path, case)
    doc = json.loads(_report(capsys, as_text, "--target", "tpu-v5p", "--json"))
    unread = doc["unread_host_writes"]
    assert unread["bytes_per_step"] == 576 << 20
    assert {w["reason"] for w in unread["writes"]} == {"slot_not_read"}
    assert sum(1 for t in doc["transfers"] if t["op"] == "dynamic-update-slice") == 6


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_a_sugared_start_gets_the_computation_the_dump_prints(case: Printings) -> None:
    from hloscope.hlo.model import Computation
    from hloscope.hlo.parser import NATIVE_ASYNC, parse_hlo

    dump = parse_hlo((FIXTURES / case.dump).read_text())
    sugared = parse_hlo((FIXTURES / "as_text" / case.as_text).read_text())
    dump.self_check()
    sugared.self_check()
    starts = 0
    for comp in dump.computations.values():
        for ins in comp.instructions:
            if ins.opcode != "async-start":
                continue
            other = sugared.computations[comp.name].by_name[ins.name]
            if other.opcode == f"{ins.wrapped_opcode}-start":
                # An async all-gather prints as all-gather-start, which XLA's parser (jaxlib 0.12 too) reads as
                # its own all-gather-start opcode: so does hloscope, and the reports still agree (a collective).
                assert other.opcode in NATIVE_ASYNC, ins.name
                continue
            assert other.opcode == "async-start" and other.wrapped_opcode == ins.wrapped_opcode, ins.name
            a = dump.computations[ins.called_computations[0]]
            b = sugared.computations[other.called_computations[0]]
            # The same parameters (shapes, in order; late-bound ones too) and the same op on them.
            def params(c: Computation) -> list[str]:
                return [str(i.shape) for i in sorted((i for i in c.instructions if i.opcode == "parameter"),
                                                     key=lambda i: int(i.literal))]

            assert params(a) == params(b), ins.name
            assert a.root is not None and b.root is not None
            assert (b.root.opcode, str(b.root.shape), b.execution_thread) == \
                   (a.root.opcode, str(a.root.shape), a.execution_thread), ins.name
            for key in ("dynamic_slice_sizes", "slice", "kind", "dimensions", "replica_groups"):
                assert b.root.attr(key) == a.root.attr(key), (ins.name, key)
            assert other.attr("metadata") == ins.attr("metadata").replace(
                ins.metadata.get("stack_frame_id", "-"), other.metadata.get("stack_frame_id", "-")), ins.name
            starts += 1
    assert starts > 0
    # What the dump names a wrapped computation and its op, the sugared printing does not print: XLA's
    # parser's names (async_wrapped, async_param) stand in for them.
    assert any(n.startswith("async_wrapped") for n in sugared.computations)
