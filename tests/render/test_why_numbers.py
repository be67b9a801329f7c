"""Numbers that must not read as contradictions (#21): an exposed time longer than the transfer
says why beside it; a hidden transfer with no compute in its window says what hid it; memory in
a baseline comparison uses the same binary units as everything else."""

from __future__ import annotations

import re

import pytest

from hloscope.check.baseline import Snapshot, compare
from hloscope.cli.main import main
from hloscope.render.why import explain, exposed_clause, slowed_by_link
from tests.conftest import FIXTURES, fixture_report, fixture_text


def _window(text: str, start: str, done: str) -> str:
    a = text.index(f"%{start} = ")
    return text[a:text.index(f"%{done} = ", a)]


def test_exposed_longer_than_the_transfer_names_the_shared_link() -> None:
    report = fixture_report("llama_offload.hlo.txt")
    slowed = [v for v in report.verdicts if v.est_exposed_us > v.est_transfer_us + 0.05]
    assert slowed  # the llama step has such transfers: two to-device reads issued back to back
    for v in slowed:
        assert slowed_by_link(v)
        t = v.timing
        assert t is not None and t.duration_us > t.transfer_us
        text = exposed_clause(v)
        arrow = "D->H" if v.transfer.direction.value == "to_host" else "H->D"
        assert f"longer than the transfer alone (~{v.est_transfer_us:.1f} us)" in text
        assert f"slowed to ~{t.duration_us:.1f} us" in text and f"on the {arrow} link" in text
        assert "slowed" in explain(v)  # the table's why says it too
    # The HLO shows why for one of them: another to-device read is issued inside its window.
    v = next(v for v in slowed if v.transfer.instruction.name == "dynamic-slice-start.2.0")
    assert v.done is not None
    window = _window(fixture_text("llama_offload.hlo.txt"), "dynamic-slice-start.2.0", v.done.name)
    assert re.search(r"%dynamic-slice-start[\w.]* = ", window[1:])
    assert v.timing is not None and len(v.timing.beside_transfers) >= 1


def test_exposed_within_the_transfer_keeps_the_short_form() -> None:
    report = fixture_report("llama_offload.hlo.txt")
    v = next(v for v in report.verdicts if v.pair is not None and v.est_exposed_us <= v.est_transfer_us)
    assert exposed_clause(v) == f"exposed ~{v.est_exposed_us:.1f} of ~{v.est_transfer_us:.1f} us per execution"


def test_check_output_says_slowed_instead_of_more_than_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(FIXTURES / "llama_offload.hlo.txt"), "--no-config", "--no-exposed"]) == 1
    out = capsys.readouterr().out
    for m in re.finditer(r"exposed ~([\d.]+) of ~([\d.]+) us per execution", out):
        assert float(m.group(1)) <= float(m.group(2))  # never "2.1 of 1.2"
    assert "slowed to ~" in out
    per_step = re.findall(r"~([\d.]+) us per step \(~([\d.]+) us x(\d+)\)", out)
    assert per_step
    for total, each, n in per_step:  # the per-step figure is the per-execution one times the executions
        assert abs(float(total) - float(each) * int(n)) <= 0.1 * int(n)


def test_hidden_with_only_collectives_in_the_window_says_so() -> None:
    from dataclasses import replace

    from hloscope.analysis.kinds import VerdictKind

    report = fixture_report("llama_offload.hlo.txt")
    # A hidden transfer whose window holds one collective (read from the HLO: an all-gather between start and done).
    v = next(v for v in report.verdicts if v.verdict is VerdictKind.HIDDEN and v.collectives)
    assert v.done is not None
    window = _window(fixture_text("llama_offload.hlo.txt"), v.transfer.instruction.name, v.done.name)
    in_window = set(re.findall(r"%((?:all-gather|all-reduce|reduce-scatter)-start[\w.]*) = ", window))
    assert in_window and {c.name for c in v.collectives} <= in_window
    # Its facts without the compute (what a window with collectives only looks like): the words say what hid it.
    only_coll = replace(v, compute=())
    assert f"hidden behind {len(v.collectives)} collective(s)" in explain(only_coll)
    assert "hidden behind" not in explain(v)  # with compute in the window nothing extra is said


def test_baseline_memory_uses_binary_units_like_the_rest() -> None:
    base = Snapshot("a", (), device_bytes=30_000_000, hbm_bytes=80 * 2**30, fits=True)
    new = Snapshot("b", (), device_bytes=62_000_000, hbm_bytes=80 * 2**30, fits=True)
    change = next(c for c in compare(base, new).changes if c.kind == "memory")
    assert change.before == "28.6 MiB device allocation (fits)" and change.after == "59.1 MiB device allocation (fits)"
