"""How many host copies of one direction move bytes at once: the target's copy engines.

``fixtures/opt_state_offload.hlo.txt`` (the JAX guide's optimizer-state offload, h100-sxm: 55 GB/s
each way, 2 us DMA setup, 8 MiB per copy = 152.52 us of bytes), read by hand: copy-start.2.0 and
.3.0 (lines 382, 384) are issued together at the start of the step, nothing before them on the
H->D link, and copy-done.2.0 (line 385) comes right after them. The eight D->H write-backs
(lines 445-481) are a chain in which each copy-start comes before the previous copy-done.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from hloscope.api import analyze
from hloscope.hlo.parser import parse_hlo
from hloscope.targets import BUILTIN_TARGETS, COPY_ENGINE_COUNTS, get_target
from tests.conftest import fixture_text

_WRITE_BACKS = ("copy-start.13.0", "copy-start.9.0", "copy-start.12.0", "copy-start.8.0", "copy-start.10.0",
                "copy-start.14.0", "copy-start.11.0", "copy-start.15.0")


def _reports():  # type: ignore[no-untyped-def]
    m = parse_hlo(fixture_text("opt_state_offload.hlo.txt"), "opt_state_offload.hlo.txt")
    h100 = get_target("h100-sxm")
    one = analyze(m, h100)
    # 16 engines: more than the copies ever in flight, so every copy in flight shares the link (the old model).
    shared = analyze(m, dataclasses.replace(h100, host_copy_engines=16))
    return one, shared


def test_two_fetches_issued_together_run_one_after_another_and_the_last_ends_as_with_sharing() -> None:
    one, shared = _reports()
    assert one.timeline is not None and shared.timeline is not None
    f1 = {s: one.timeline.transfers[("main.0_spmd", s)] for s in ("copy-start.2.0", "copy-start.3.0")}
    fs = {s: shared.timeline.transfers[("main.0_spmd", s)] for s in ("copy-start.2.0", "copy-start.3.0")}
    alone = f1["copy-start.2.0"].transfer_us  # 2 + 152.52 us
    bytes_us = alone - 2.0
    assert f1["copy-start.2.0"].issue_us == f1["copy-start.3.0"].issue_us == 0.0
    # One engine: .2.0 (first in the schedule) ends after its own time, .3.0 after both copies' bytes.
    assert f1["copy-start.2.0"].finish_us == pytest.approx(alone)
    assert f1["copy-start.3.0"].finish_us == pytest.approx(alone + bytes_us)
    assert f1["copy-start.3.0"].engine_wait_us == pytest.approx(bytes_us)
    # Sharing: both end together, at the same moment the last one ends with one engine (bandwidth is the
    # only limit: the link moves the same 16 MiB either way). done.2.0 waits half as long with one engine.
    assert fs["copy-start.2.0"].finish_us == fs["copy-start.3.0"].finish_us == pytest.approx(alone + bytes_us)
    assert f1["copy-start.3.0"].finish_us == pytest.approx(fs["copy-start.3.0"].finish_us)
    assert f1["copy-start.2.0"].wait_us == pytest.approx(alone) and fs["copy-start.2.0"].wait_us == pytest.approx(
        alone + bytes_us)


def test_the_write_back_chain_ends_at_the_same_time_but_its_copies_finish_in_turn() -> None:
    one, shared = _reports()
    assert one.timeline is not None and shared.timeline is not None
    [d1] = [d for d in one.drains if d.starts == _WRITE_BACKS]
    [ds] = [d for d in shared.drains if d.starts == _WRITE_BACKS]
    # First issue to last finish: 1230.2 us with either model (8 x 152.52 us of bytes + setups not hidden).
    assert d1.drain_us == pytest.approx(ds.drain_us, abs=1e-6)
    t1 = {s: one.timeline.transfers[("main.0_spmd", s)] for s in _WRITE_BACKS}
    ts = {s: shared.timeline.transfers[("main.0_spmd", s)] for s in _WRITE_BACKS}
    bytes_us = t1["copy-start.13.0"].transfer_us - 2.0
    # .9.0 runs behind .13.0 on its stream, then has the engine to itself: 2 x its own time from its
    # issue, where sharing the link with .12.0 (issued at done.13.0) stretched it to 2.6x.
    assert t1["copy-start.9.0"].duration_us == pytest.approx(2 * t1["copy-start.9.0"].transfer_us)
    assert ts["copy-start.9.0"].duration_us > 2.5 * ts["copy-start.9.0"].transfer_us
    # .12.0 is ready at done.13.0 + 2 us, while .9.0 moves: it waits for the engine, then runs alone.
    t12 = t1["copy-start.12.0"]
    assert t12.engine_wait_us > 0 and t12.finish_us - t12.issue_us - t12.engine_wait_us == pytest.approx(
        2.0 + bytes_us)
    # With one engine no two write-backs move at once: their byte intervals do not overlap.
    spans = sorted((t.finish_us - bytes_us, t.finish_us) for t in t1.values())
    assert all(a[1] <= b[0] + 1e-6 for a, b in itertools.pairwise(spans))


def test_every_built_in_target_has_one_engine_per_direction_and_each_published_count_names_a_target() -> None:
    assert all(t.host_copy_engines == 1 for t in BUILTIN_TARGETS.values())
    assert {c.target for c in COPY_ENGINE_COUNTS} <= set(BUILTIN_TARGETS)
    assert all(c.async_engines >= 2 and c.source for c in COPY_ENGINE_COUNTS)


def test_the_fetch_that_waited_for_the_engine_names_the_copy_ahead_of_it() -> None:
    from hloscope.render.verdict_words import engine_wait_clause, explain

    one, _ = _reports()
    by = {v.transfer.instruction.name: v for v in one.verdicts}
    t3 = by["copy-start.3.0"].timing
    assert t3 is not None and t3.engine_behind == ("copy-start.2.0",)
    clause = engine_wait_clause(by["copy-start.3.0"])
    assert clause == f"it waited ~{t3.engine_wait_us:.1f} us behind copy-start.2.0 for a H->D copy engine before its " \
                     "bytes moved"
    assert clause in explain(by["copy-start.3.0"])
    # .2.0 had the engine at once: nothing to say; .4.0 waited on its stream, not for the engine.
    assert engine_wait_clause(by["copy-start.2.0"]) is None and engine_wait_clause(by["copy-start.4.0"]) is None
    j = {t["name"]: t for t in one.to_dict()["transfers"]}
    assert j["copy-start.3.0"]["simulated"]["engine_behind"] == ["copy-start.2.0"]
    assert j["copy-start.3.0"]["simulated"]["engine_wait_us"] == round(t3.engine_wait_us, 3)
