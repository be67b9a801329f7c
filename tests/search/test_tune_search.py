"""The tuner's search without compiling: the proposal model, proposals, frontier and the loop's end.

RECORDED are the figures of a real ``hloscope tune llama --set layers=2`` run (h100-sxm, 8
devices, jaxlib 0.10.2): the three probes' device allocation, host bytes and simulated step,
and the all-offload probe's per-name facts (query_proj 2 layers x [1, 256, 8, 64] bf16 =
524288 B per step; key_proj and value_proj 2 x [1, 256, 2, 64] bf16 = 131072 B). The search
loop runs on a recorded executor: each configuration's row comes from a table (the recorded
points, else an additive truth with one interaction), so the loop's decisions are tested
without XLA.
"""

from __future__ import annotations

from typing import Any

import pytest

from hloscope.request import CompileRequest
from hloscope.search.tune import (
    Config,
    Goal,
    Limits,
    NameFacts,
    Objective,
    Space,
    TuneSpec,
    Verified,
    best,
    explain,
    frontier,
    model_error,
    prior_model,
    propose,
)

NAMES = ("query_proj", "key_proj", "value_proj")
SPACE = Space(NAMES, (("remat", "device", "offload"),) * 3)
#: (device allocation bytes, host bytes, simulated step us) per uniform configuration.
RECORDED = {
    "remat": (32834772, 0, 764.4),
    "device": (33359596, 0, 747.0),
    "offload": (30089196, 786432, 710.8),
}
FACTS = (NameFacts("key_proj", 131072, 12.77, 0.0, 111.0, 3, 3),
         NameFacts("query_proj", 524288, 27.07, 0.0, 108.7, 3, 3),
         NameFacts("value_proj", 131072, 12.77, 8.37, 4.4, 3, 2))
LIMITS = Limits(80 << 30, 64 << 30)
GOAL = Goal(Objective.STEP)


def point(c: Config, dev: int, host: int, step: float, probe: str = "", limits: Limits = LIMITS,
          **kw: Any) -> Verified:
    return Verified(c, " ".join(c.choices), probe, dev, host, step, 0.0, dev <= limits.device_bytes,
                    host <= limits.host_bytes, **kw)


def probes(limits: Limits = LIMITS) -> dict[tuple[str, int | None], Verified]:
    out = {}
    for p, (dev, host, step) in RECORDED.items():
        out[(p, None)] = point(SPACE.uniform(p, None), dev, host, step, p, limits,
                               names=FACTS if p == "offload" else ())
    return out


def test_space_counts_neighbours_and_fixed_names() -> None:
    assert SPACE.size() == 27 and len(list(SPACE.configs())) == 27
    c = Config(("remat", "device", "offload"))
    assert len(SPACE.neighbours(c)) == 6 and c not in SPACE.neighbours(c)
    fixed = Space(NAMES, (("device",), ("remat", "offload"), ("remat", "device", "offload")), (2, 4))
    assert fixed.size() == 12
    assert fixed.uniform("offload", 2) == Config(("device", "offload", "offload"), 2)
    # one batch step up from 2 is a neighbour; there is none below it
    assert Config(("device", "remat", "remat"), 4) in fixed.neighbours(Config(("device", "remat", "remat"), 2))


def test_prior_reproduces_the_probes_and_shares_by_bytes() -> None:
    model = prior_model(SPACE, probes())
    assert model is not None
    for p, (dev, host, step) in RECORDED.items():
        pred = model.predict(SPACE.uniform(p, None))
        assert pred.device_bytes == pytest.approx(dev) and pred.host_bytes == pytest.approx(host)
        assert pred.step_us == pytest.approx(step)
    # Device-bytes deltas split by the bytes each name sends to the host: 4 : 1 : 1.
    d = model.delta["device_bytes"]
    assert d[0][0] == pytest.approx(4 * d[1][0]) and d[1][0] == pytest.approx(d[2][0])
    assert sum(x[0] for x in d) == pytest.approx(33359596 - 32834772)
    # Offloading value_proj carries its own exposed 8.37 us beyond its share.
    s = model.delta["step_us"]
    assert s[2][1] - s[1][1] == pytest.approx(8.37)
    # Host bytes are each name's own.
    assert [x[1] for x in model.delta["host_bytes"]] == pytest.approx([524288, 131072, 131072])


def test_prior_needs_every_probe() -> None:
    p = probes()
    p[("device", None)] = Verified(SPACE.uniform("device", None), "x", "device", error="XLA crashed")
    assert prior_model(SPACE, p) is None


def test_refit_moves_towards_a_verified_point() -> None:
    prior = prior_model(SPACE, probes())
    assert prior is not None
    c = Config(("offload", "device", "offload"))
    before = prior.predict(c).step_us
    seen = [*probes().values(), point(c, 30218220, 655360, 706.3)]
    after = prior.refit(prior, seen).predict(c).step_us
    assert abs(after - 706.3) < abs(before - 706.3)
    # the probes are still predicted within 1%
    for p, (_, _, step) in RECORDED.items():
        assert prior.refit(prior, seen).predict(SPACE.uniform(p, None)).step_us == pytest.approx(step, rel=0.01)


def test_propose_ranks_fitting_first_and_skips_verified() -> None:
    prior = prior_model(SPACE, probes())
    assert prior is not None
    seen = list(probes().values())
    todo = propose(SPACE, prior, LIMITS, GOAL, seen, 3)
    assert len(todo) == 3 and not {v.config for v in seen} & set(todo)
    assert len(set(todo)) == 3
    # The first is the model's best-ranked unverified configuration.
    ranked = sorted((c for c in SPACE.configs() if c not in {v.config for v in seen}),
                    key=lambda c: (prior.predict(c).step_us, c))
    assert todo[0] == ranked[0]


def test_propose_with_nothing_predicted_to_fit_tries_the_smallest() -> None:
    tight = Limits(30_000_000, 64 << 30)  # below every probe
    p = probes(tight)
    prior = prior_model(SPACE, p)
    assert prior is not None
    todo = propose(SPACE, prior, tight, GOAL, list(p.values()), 1)
    smallest = min((c for c in SPACE.configs() if c not in {v.config for v in p.values()}),
                   key=lambda c: (prior.predict(c).device_bytes, c))
    assert todo == [smallest]


def test_frontier_and_best() -> None:
    a = point(Config(("remat",) * 3), 100, 0, 10.0)
    b = point(Config(("device",) * 3), 200, 0, 8.0)
    c = point(Config(("offload",) * 3), 150, 0, 9.5)
    d = point(Config(("remat", "device", "remat")), 250, 0, 9.0)  # beaten by b on both
    over = point(Config(("device", "device", "remat")), 10**12, 0, 1.0)  # fastest, does not fit
    pts = [a, b, c, d, over]
    assert [v.config for v in frontier(pts, GOAL)] == [a.config, c.config, b.config]
    chosen = best(pts, GOAL)
    assert chosen is not None and chosen.config == b.config
    thr = Goal(Objective.THROUGHPUT, 256, 8)
    big = point(Config(("remat",) * 3, 4), 300, 0, 30.0)
    small = point(Config(("remat",) * 3, 1), 100, 0, 10.0)
    top = best([big, small], thr)
    assert top is not None and top.config.batch == 4  # 4 x 256 tokens / 30 us beats 256 / 10 us


def test_model_error_is_prediction_before_compile_vs_compile() -> None:
    from hloscope.search.tune import Prediction

    v = point(Config(("offload", "device", "offload")), 1000, 0, 100.0,
              predicted=Prediction(1100.0, 0.0, 90.0))
    w = point(Config(("offload", "remat", "offload")), 1000, 0, 200.0, predicted=Prediction(1000.0, 0.0, 220.0))
    e = model_error([v, w, *probes().values()])
    assert e.count == 2
    assert e.step_mean == pytest.approx(0.1) and e.step_max == pytest.approx(0.1)
    assert e.device_mean == pytest.approx(0.05) and e.device_max == pytest.approx(0.1)


def test_explain_names_the_neighbours_and_offloaded_facts() -> None:
    prior = prior_model(SPACE, probes())
    assert prior is not None
    chosen = point(Config(("offload", "device", "offload")), 30218220, 655360, 706.3, names=FACTS)
    near = point(Config(("offload", "offload", "offload")), 30089196, 786432, 710.8)
    why = explain(SPACE, chosen, [chosen, near], prior)
    assert [(n.what, n.was, n.now) for n in why.neighbours] == [("key_proj", "device", "offload")]
    assert why.neighbours[0].step_delta_us == pytest.approx(4.5)
    assert {f.name for f in why.offloaded} == {"query_proj", "value_proj"}


# ---- the loop, on a recorded executor ---------------------------------------------------------


class Recorded:
    """An executor whose rows come from ``truth(choices)``; counts what it was asked."""

    name = "recorded"

    def __init__(self, truth: Any, limits: Limits = LIMITS, inert: int | None = None) -> None:
        self.truth, self.limits, self.inert = truth, limits, inert
        self.asked: list[str] = []

    def run(self, cells: list[Any], on_event: Any, phase: Any = None, on_report: Any = None) -> list[dict[str, Any]]:
        from hloscope.compile.search.sweep import FINISHED, STARTED

        rows = []
        for c in cells:
            on_event(STARTED, c, None)
            self.asked.append(c.label)
            parts = c.label.split()
            choices = tuple(p.split("=")[1] for p in parts if not p.startswith(("batch=", "pipelined=")))
            if self.inert is not None:  # XLA compiles the same step whatever this name's switch
                choices = tuple("remat" if i == self.inert else x for i, x in enumerate(choices))
            dev, host, step = self.truth(choices) if c.pipelined else self.truth(choices, False)
            rows.append({"cell": c.label, "device_allocation_bytes": dev, "host_bytes": host, "est_step_us": step,
                         "est_exposed_us": 0.0, "fits": dev <= self.limits.device_bytes, "cached": False,
                         "compile_s": 0.0, "error": "", "identical_to": "",
                         "fingerprint": " ".join(choices) + ("" if c.pipelined or "offload" not in choices else " off")})
            on_event(FINISHED, c, rows[-1])
        return rows


def additive(choices: tuple[str, ...], pipelined: bool = True) -> tuple[int, int, float]:
    """A truth close to the recorded run: offloading query_proj and value_proj hides, key_proj
    offloaded together with value_proj costs 6 us more (an interaction the model cannot see)."""
    dev, host, step = 32834772, 0, 764.4
    per = {"query_proj": 524288, "key_proj": 131072, "value_proj": 131072}
    for n, ch in zip(NAMES, choices, strict=True):
        share = per[n] / 786432
        if ch == "device":
            dev += int(share * 524824)
            step -= share * 17.4
        elif ch == "offload":
            dev -= int(share * 2745576)
            host += per[n]
            step -= share * 53.6
    if choices[1] == "offload" and choices[2] == "offload":
        step += 6.0
    return dev, host, step


def spec(max_compiles: int, limits: Limits = LIMITS) -> TuneSpec:
    return TuneSpec(CompileRequest("h100-sxm", 8, workload="llama", sets=(("layers", "2"),)), SPACE, limits, GOAL,
                    max_compiles)


def test_loop_stops_within_the_budget_and_beats_the_coarse_policies() -> None:
    from hloscope.compile.search.tune import run_tune

    ex = Recorded(additive)
    result = run_tune(spec(10), ex)
    assert len(ex.asked) == len(result.verified) <= 10
    assert len(set(ex.asked)) == len(ex.asked)  # nothing compiled twice
    assert result.best is not None
    coarse = [v.step_us for v in result.verified if v.probe in ("remat", "offload", "device")]
    assert result.best.step_us <= min(coarse)
    assert all(v.meets for v in result.frontier)
    assert result.stopped in ("budget", "converged")


def test_loop_ends_when_the_space_is_exhausted() -> None:
    from hloscope.compile.search.tune import run_tune

    small = Space(NAMES, (("remat", "offload"), ("remat",), ("remat",)))
    ex = Recorded(additive)
    result = run_tune(TuneSpec(CompileRequest("h100-sxm", 8, workload="llama"), small, LIMITS, GOAL, 50), ex)
    # remat/device/offload probes collapse to two configurations: the whole space
    assert len(result.verified) == 2 and result.stopped == "exhausted"


def test_loop_with_nothing_that_fits_ends_without_a_best() -> None:
    from hloscope.compile.search.tune import run_tune
    from hloscope.render.search.tune_words import no_fit_line

    tight = Limits(1 << 20, 64 << 30)
    ex = Recorded(additive, tight)
    result = run_tune(spec(40, tight), ex)
    assert result.best is None and result.frontier == ()
    assert len(result.verified) < 27  # gave up once the frontier stayed empty, before compiling everything
    smallest = min(v.device_bytes for v in result.verified)
    assert no_fit_line(result) == (f"no configuration fits in 1.0 MiB; the smallest found needs "
                                   f"{smallest / 2**20:.1f} MiB ({len(result.verified)} compiled)")


def test_a_name_xla_ignores_is_learnt_and_costs_no_budget() -> None:
    from hloscope.compile.search.tune import run_tune

    ex = Recorded(additive, inert=1)  # key_proj: every switch compiles to the same HLO
    result = run_tune(spec(6), ex)
    fps = [v.fingerprint for v in result.verified]
    dups = len(fps) - len(set(fps))
    # Learnt from the first repeat (a round compiles two): at most one round's worth of repeats,
    # and repeats do not count against --max-compiles.
    assert 1 <= dups <= 2
    assert result.stopped != "budget" or len(set(fps)) == 6
    assert result.why is not None and result.why.inert == ("key_proj",)


def test_the_progress_line_counts_what_the_budget_counts(capsys: pytest.CaptureFixture[str]) -> None:
    # It read '[7/6]': the line counted every finished cell against --max-compiles, while the
    # budget does not count a repeat of a step already compiled (an inert name's switch).
    import re

    from hloscope.cli.compiling import progress_bar
    from hloscope.compile.search.tune import run_tune

    on_event, phase, stop = progress_bar(6)
    result = run_tune(spec(6), Recorded(additive, inert=1), on_event, phase)
    stop()
    lines = capsys.readouterr().err.splitlines()
    fps = [v.fingerprint for v in result.verified]
    assert len(lines) == len(fps) > len(set(fps))  # every compile has its line; some were repeats
    counts = [tuple(map(int, m.groups())) for m in (re.match(r"\[(\d+)/(\d+)\]", ln) for ln in lines) if m]
    assert len(counts) == len(lines) and all(k <= n == 6 for k, n in counts)
    assert counts[-1][0] == len(set(fps))
    repeats = [(i, v) for i, v in enumerate(result.verified) if fps.index(v.fingerprint) < i]
    assert [i for i, ln in enumerate(lines) if "not counted" in ln] == [i for i, _ in repeats]
    for i, v in repeats:  # each names the first compile of its step
        first = result.verified[fps.index(v.fingerprint)].label
        assert lines[i] == f"[{counts[i][0]}/6] compiled (the same step as {first}, not counted): {v.label}"


# ---- pipelined host offloading as an axis -----------------------------------------------------

PIPED = Space(NAMES, (("remat", "device", "offload"),) * 3, (None,), (True, False))


def unpipelined(choices: tuple[str, ...], pipelined: bool = True) -> tuple[int, int, float]:
    """:func:`additive`, where offloading key_proj is 9 us faster with pipelining off (and the
    others 3 us slower each): the search has to find key_proj offloaded, pipelining off."""
    dev, host, step = additive(choices)
    if not pipelined:
        step += sum(-9.0 if n == "key_proj" else 3.0 for n, ch in zip(NAMES, choices, strict=True) if ch == "offload")
    return dev, host, step


def test_the_pipelining_axis_doubles_the_space_and_is_a_neighbour() -> None:
    assert PIPED.size() == 54 and len(set(PIPED.configs())) == 54
    c = PIPED.uniform("offload", None)
    assert c == Config(("offload",) * 3, None, True)  # the probes' setting: on
    assert Config(c.choices, None, False) in PIPED.neighbours(c) and len(PIPED.neighbours(c)) == 7
    assert SPACE.uniform("offload", None).pipelined is None  # not an axis: the search's one setting


def test_the_prior_reproduces_the_unpipelined_probe() -> None:
    from hloscope.search.tune import UNPIPELINED_PROBE

    p = {(k, b): point(Config(v.config.choices, b, True), v.device_bytes, v.host_bytes, v.step_us, k,
                       names=v.names) for (k, b), v in probes().items()}
    off = Config(("offload",) * 3, None, False)
    assert prior_model(PIPED, p) is None  # the unpipelined probe is needed
    p[(UNPIPELINED_PROBE, None)] = point(off, 30089196, 786432, 713.8, UNPIPELINED_PROBE,
                                         names=(FACTS[0], FACTS[1], NameFacts("value_proj", 131072, 12.77, 11.0, 4.4,
                                                                              3, 1)))
    model = prior_model(PIPED, p)
    assert model is not None
    assert model.predict(off).step_us == pytest.approx(713.8)
    assert model.predict(Config(("offload",) * 3, None, True)).step_us == pytest.approx(710.8)
    # value_proj's own exposed time grew 8.37 -> 11.0 us: its unpipelined delta carries it
    u = model.unpipelined["step_us"]
    assert u[2] - u[1] == pytest.approx(11.0 - 8.37)
    # pipelining acts on offloads alone: nothing offloaded, the same prediction either way
    assert model.predict(Config(("device", "remat", "device"), None, False)) == \
        model.predict(Config(("device", "remat", "device"), None, True))


def test_the_search_finds_pipelining_off_and_says_it_in_the_lines_to_paste() -> None:
    from hloscope.compile.search.tune import run_tune
    from hloscope.render.search.tune_words import result_dict, text_lines

    ex = Recorded(unpipelined)
    result = run_tune(TuneSpec(CompileRequest("h100-sxm", 8, workload="llama", sets=(("layers", "2"),)), PIPED, LIMITS,
                               GOAL, 16), ex)
    assert [v.probe for v in result.verified[:4]] == ["remat", "device", "offload", "offload-unpipelined"]
    assert result.verified[3].label == "query_proj=offload key_proj=offload value_proj=offload pipelined=off"
    b = result.best
    truth = min((unpipelined(c.choices, bool(c.pipelined))[2], c) for c in PIPED.configs())
    assert b is not None and b.step_us <= min(v.step_us for v in result.verified[:4])
    assert b.config.pipelined is False and b.config.choices[1] == "offload"
    assert b.step_us == pytest.approx(truth[0])
    # a configuration that offloads nothing is never compiled with both settings
    none = [v.config for v in result.verified if "offload" not in v.config.choices]
    assert len({c.choices for c in none}) == len(none)
    d = result_dict(result)
    assert d["pipelined"] == ["on", "off"] and d["best"]["pipelined"] is False
    assert d["best"]["compile"].endswith(" --no-pipelined-offload")
    assert d["best"]["xla_flags"] == ["--xla_gpu_enable_pipelined_host_offloading=false"]
    text = text_lines(result)
    assert "with XLA_FLAGS: --xla_gpu_enable_pipelined_host_offloading=false (pipelined host offloading off)" in text
