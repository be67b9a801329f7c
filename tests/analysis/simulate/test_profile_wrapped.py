"""``--profile`` times an async collective written as ``async-start(...), calls=%wrapped`` (issue 38).

The start is a collective to the model, as its sugared printing ``reduce-scatter-start(data)`` is (issue
52: the parser gives both printings one shape, hlo/async_sugar.py), simulated on the collective stream;
with a profile it takes the profile's time there.

XLA's own test module ``fixtures/xla-tests/convert_async_collectives_to_sync/SimpleReduceScatter.hlo``:
``rs-start = async-start(data), calls=reduce_scatter``, whose root ``result`` is the reduce-scatter, and
``ars = async-done(rs-start)``. A profile names such a collective after the wrapped op (its thunk), here
``result``; before, the start kept the model's ring time, the profile's figure was dropped.
"""

from __future__ import annotations

import pytest

from hloscope.analysis.report import analyze_module
from hloscope.analysis.simulate.overlap import AnalysisOptions
from hloscope.analysis.simulate.timeline import Resource
from hloscope.hlo.parser import parse_hlo
from hloscope.targets import get_target
from tests.conftest import fixture_text

NAME = "xla-tests/convert_async_collectives_to_sync/SimpleReduceScatter.hlo"


def test_a_wrapped_reduce_scatter_takes_the_profiles_time() -> None:
    module = parse_hlo(fixture_text(NAME), NAME)
    start = module.entry.by_name["rs-start"]
    assert start.opcode == "async-start" and module.computations["reduce_scatter"].by_name["result"].opcode == \
        "reduce-scatter"
    plain = analyze_module(module, get_target("h100-sxm"))
    timed = analyze_module(module, get_target("h100-sxm"), AnalysisOptions(measured_us=(("result", 50.0),)))
    assert timed.cost.measured_us(start) == pytest.approx(50.0) and plain.cost.measured_us(start) is None
    # Without the profile the start costs the model's time for a 32-byte reduce-scatter on h100-sxm (its
    # collective launch, 5 us) on the collective stream; with it, the profile's 50 us, and the done waits.
    [p] = plain.timeline.slices[Resource.COLLECTIVE]
    assert (p.name, p.end_us - p.start_us) == ("rs-start", pytest.approx(plain.cost.collective_us(start)))
    assert plain.cost.collective_us(start) == pytest.approx(get_target("h100-sxm").collective_launch_us, abs=0.01)
    [s] = timed.timeline.slices[Resource.COLLECTIVE]
    assert (s.name, s.end_us - s.start_us) == ("rs-start", pytest.approx(50.0))
    assert timed.timeline.step_us == pytest.approx(50.0)
