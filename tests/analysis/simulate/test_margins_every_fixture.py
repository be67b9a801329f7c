"""The report's margins against whole re-simulations on every scheduled fixture with a judged transfer.

``measure_margins`` (forked, cut-short re-simulations on the engine of ``analysis/simulate/engine.py``)
and ``measure_margins_brute`` (one whole ``simulate_step`` per what-if) must agree on every flip, verdict,
error corner and count of re-simulations, the marginal costs to float rounding, and the JSON report
built on each byte for byte: GPU fixtures judged for h100-sxm, the two 405B modules for gb200, the TPU
ones for tpu-v5e (``benchmarks/margins_vs_brute.py`` runs the same comparison with timings).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from hloscope.api import analyze
from hloscope.hlo.parser import parse_hlo
from tests.analysis.simulate.margins_brute import measure_margins_brute

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


def _cases() -> dict[str, tuple[str, str]]:
    out = {}
    for p in sorted(FIXTURES.rglob("*.hlo.txt")):
        rel = p.relative_to(FIXTURES).as_posix()
        if rel.startswith("xla-tests/") or ".before_optimizations." in rel or "unoptimized" in rel:
            continue
        out[rel] = (rel, "tpu-v5e" if "tpu" in rel else "gb200" if rel.startswith("llama405b") else "h100-sxm")
    return out


CASES = _cases()


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_forked_margins_are_the_brute_forces_on_every_fixture(case: tuple[str, str]) -> None:
    name, target = case
    r = analyze(parse_hlo((FIXTURES / name).read_text(), name), target)
    if r.timeline is None or r.margins is None or not r.margins.transfers:
        pytest.skip("no judged transfer in a simulated step")
    fast = r.margins
    fast_json = json.dumps(r.to_dict())
    brute = measure_margins_brute(r.module, r.cost, r.pairs, r.transfers, r.index.callgraph, r.streams, r.timeline,
                                  r.options.thresholds)
    assert (fast.simulations, fast.corner_step_us, fast.grid) == (brute.simulations, brute.corner_step_us,
                                                                   brute.grid)
    assert fast.transfers.keys() == brute.transfers.keys()
    for k, b in brute.transfers.items():
        f = fast.transfers[k]
        assert dataclasses.replace(f, marginal_us=0.0) == dataclasses.replace(b, marginal_us=0.0), k
        assert f.marginal_us == pytest.approx(b.marginal_us, rel=0, abs=1e-12 * r.timeline.step_us), k
    r.__dict__["margins"] = brute  # the cached property, filled by the reference
    assert json.dumps(r.to_dict()) == fast_json
