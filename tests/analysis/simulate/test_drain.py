"""Host copies that the schedule keeps in flight together and that drain one after another.

``fixtures/opt_state_offload.hlo.txt`` (the JAX guide's optimizer-state offload, compiled by
``fixtures/generate_streams.py``), read by hand: the eight D->H write-backs of the Adam moments
(f32[512,4096] = 8 MiB each) are issued at lines 445-481 as a chain in which every copy-start
comes before the previous copy-done (copy-start.13.0, .9.0, copy-done.13.0, copy-start.12.0,
copy-done.9.0, ...), so two are always in flight; copy-done.11.0 and .15.0 (lines 482-483) sit
just before the root tuple: the step ends on them. The H->D fetches (lines 382-402) are the
same kind of chain: copy-start.2.0, .3.0, copy-done.2.0, copy-start.1.0, copy-done.3.0,
copy-start.16, copy-done.1.0, .4.0, done.16, .5.0, done.4.0, .6.0, done.5.0, .7.0; the dones of
.6.0/.7.0 (lines 443, 446) come after the gradient's compute.
"""

from __future__ import annotations

import pytest

from hloscope.analysis.kinds import Direction
from hloscope.render.drain_text import drain_lines
from tests.conftest import fixture_report

_WRITE_BACKS = ("copy-start.13.0", "copy-start.9.0", "copy-start.12.0", "copy-start.8.0", "copy-start.10.0",
                "copy-start.14.0", "copy-start.11.0", "copy-start.15.0")


def test_the_optimizer_write_backs_that_end_the_step_drain_in_series() -> None:
    report = fixture_report("opt_state_offload.hlo.txt")
    to_host = [d for d in report.drains if d.direction is Direction.TO_HOST]
    assert len(to_host) == 1
    d = to_host[0]
    assert d.starts == _WRITE_BACKS and d.bytes == 8 * 512 * 4096 * 4
    # 64 MiB cannot leave faster than the link moves it (55 GB/s D->H on h100-sxm), and the step ends on them.
    assert d.drain_us >= d.bytes / 55e3 - 1e-6
    assert d.drain_us > 7 * d.priced_us
    timeline = report.timeline
    assert timeline is not None
    last = max(timeline.transfers[("main.0_spmd", s)].finish_us for s in _WRITE_BACKS)
    assert abs(timeline.step_us - last) < 1.0
    assert 0 < d.lost_us_per_step <= timeline.exposed_transfer_us
    line = drain_lines(report)[0]
    assert "8 D->H copies" in line and "copy-start.13.0" in line and "4 more" in line
    j = report.to_dict()["serial_drains"]
    assert j[0]["starts"] == list(_WRITE_BACKS) and j[0]["direction"] == "to_host"


def test_the_fetch_chain_drains_in_series_on_one_copy_engine() -> None:
    """h100-sxm, one H->D copy engine, 8 MiB per fetch (152.5 us of bytes after its 2 us setup).

    Read by hand from the schedule: .2.0 and .3.0 are issued together at 0; .2.0 takes the engine
    and ends at 154.5 us, where done.2.0 lets the compute stream go on to issue .1.0, which waits
    for the engine behind .3.0 (ends at 307.0); .1.0 then runs to 459.6, .16 (issued at done.3.0)
    to 612.1; .4.0, issued at done.1.0 on .16's stream (compute:1), waits for .16 on its stream
    and runs 614.1-766.6; .5.0 behind it to 919.1; .6.0 and .7.0 run after it while the gradient's
    compute runs. Every done from .3.0 to .5.0 waits for the copy ahead of its own on the engine:
    one group of eight, the dones of .6.0 and .7.0 waiting nothing."""
    report = fixture_report("opt_state_offload.hlo.txt")
    timeline = report.timeline
    assert timeline is not None
    tt = {s: timeline.transfers[("main.0_spmd", s)] for s in
          ("copy-start.2.0", "copy-start.3.0", "copy-start.1.0", "copy-start.16", "copy-start.4.0",
           "copy-start.5.0", "copy-start.6.0", "copy-start.7.0")}
    alone = tt["copy-start.2.0"].transfer_us  # 2 us setup + 8 MiB / 55 GB/s = 154.52 us
    bytes_us = alone - 2.0
    finish = [t.finish_us for t in tt.values()]
    # .4.0 sets up its DMA only once .16 ends on their stream: 2 us more from it on.
    assert finish == pytest.approx([alone + k * bytes_us + (2.0 if k >= 4 else 0.0) for k in range(8)], abs=1e-6)
    assert tt["copy-start.3.0"].engine_wait_us == pytest.approx(bytes_us)  # behind .2.0, issued with it
    assert tt["copy-start.1.0"].engine_wait_us == pytest.approx(bytes_us - 2.0)  # issued at done.2.0
    assert tt["copy-start.4.0"].queued_behind == ("copy-start.16",) and tt["copy-start.4.0"].engine_wait_us == 0.0
    assert tt["copy-start.6.0"].wait_us == tt["copy-start.7.0"].wait_us == 0.0
    [fetch] = [d for d in report.drains if d.direction is Direction.TO_DEVICE]
    assert fetch.starts == tuple(tt)
    # Five dones (.3.0, .1.0, .16, .4.0, .5.0) each wait a copy's bytes they would not have alone.
    assert fetch.lost_us == pytest.approx(3 * bytes_us + 2 * (bytes_us - 2.0))


def test_steps_without_the_problem_show_no_serial_drain() -> None:
    """mlp and llama offload: small slices, hidden or exposed by a microsecond; no drain worth a hint."""
    for name in ("mlp_offload.hlo.txt", "llama_offload.hlo.txt", "llama_offload_nolhs.hlo.txt"):
        report = fixture_report(name)
        assert report.timeline is not None, name
        assert report.drains == () and drain_lines(report) == [], name
        assert "serial_drains" not in report.to_dict(), name
        assert "serial drain" not in report.to_text(), name


def test_the_serialized_profile_prices_drained_copies_as_they_run() -> None:
    """The profile ``--what-if-profile`` gives XLA the second time: drained copies at their simulated time."""
    import io

    from hloscope.analysis.model_profile import model_profile
    from hloscope.render.pgle import write_profile

    report = fixture_report("opt_state_offload.hlo.txt")
    plain = model_profile(report).as_dict()
    serial = model_profile(report, serialized=True).as_dict()
    timeline = report.timeline
    assert timeline is not None
    t9 = timeline.transfers[("main.0_spmd", "copy-start.9.0")]
    # copy-start.9.0 runs behind copy-start.13.0 on its stream: 2x its time alone (its setup overlaps .13.0's bytes).
    assert plain["copy-start.9.0"] == t9.transfer_us
    assert serial["copy-start.9.0"] == t9.duration_us == pytest.approx(2 * t9.transfer_us)
    # .6.0 waits for the engine behind .5.0 before its own bytes: priced at both, though its done waits nothing.
    t6 = timeline.transfers[("main.0_spmd", "copy-start.6.0")]
    assert serial["copy-start.6.0"] == t6.duration_us == pytest.approx(t6.engine_wait_us + t6.transfer_us)
    drained = {s for d in report.drains for s in d.starts}
    assert {n for n in plain if plain[n] != serial[n]} <= drained
    buf = io.StringIO()
    write_profile(report, buf, serialized=True)
    assert "priced as they run behind each other" in buf.getvalue()


def test_a_step_without_drains_gets_the_same_profile_either_way() -> None:
    from hloscope.analysis.model_profile import model_profile

    report = fixture_report("llama_offload.hlo.txt")
    assert model_profile(report, serialized=True) == model_profile(report)
