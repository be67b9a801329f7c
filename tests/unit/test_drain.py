"""Host copies that the schedule keeps in flight together and that drain one after another.

``fixtures/opt_state_offload.hlo.txt`` (the JAX guide's optimizer-state offload, compiled by
``fixtures/generate_streams.py``), read by hand: the eight D->H write-backs of the Adam moments
(f32[512,4096] = 8 MiB each) are issued at lines 445-481 as a chain in which every copy-start
comes before the previous copy-done (copy-start.13.0, .9.0, copy-done.13.0, copy-start.12.0,
copy-done.9.0, ...), so two are always in flight; copy-done.11.0 and .15.0 (lines 482-483) sit
just before the root tuple: the step ends on them. The H->D fetches come in pairs whose
dones follow each other with no compute between (copy-start.2.0/.3.0, .1.0/.16, .4.0/.5.0),
except .6.0/.7.0, whose window holds the gradient's compute.
"""

from __future__ import annotations

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


def test_the_fetch_pairs_without_compute_between_drain_in_series_and_the_one_with_compute_does_not() -> None:
    report = fixture_report("opt_state_offload.hlo.txt")
    pairs = {frozenset(d.starts) for d in report.drains if d.direction is Direction.TO_DEVICE}
    assert pairs == {frozenset(p) for p in (("copy-start.2.0", "copy-start.3.0"), ("copy-start.1.0", "copy-start.16"),
                                            ("copy-start.4.0", "copy-start.5.0"))}


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
    # copy-start.9.0 runs behind copy-start.13.0 on its stream and beside .12.0 on the link: ~2.6x its time alone.
    assert plain["copy-start.9.0"] == t9.transfer_us
    assert serial["copy-start.9.0"] == t9.duration_us > 2.5 * t9.transfer_us
    # The fetches with compute in their window (.6.0/.7.0) are in no drain: priced alone, as before.
    assert serial["copy-start.6.0"] == plain["copy-start.6.0"]
    drained = {s for d in report.drains for s in d.starts}
    assert {n for n in plain if plain[n] != serial[n]} <= drained
    buf = io.StringIO()
    write_profile(report, buf, serialized=True)
    assert "priced as they run behind each other" in buf.getvalue()


def test_a_step_without_drains_gets_the_same_profile_either_way() -> None:
    from hloscope.analysis.model_profile import model_profile

    report = fixture_report("llama_offload.hlo.txt")
    assert model_profile(report, serialized=True) == model_profile(report)
