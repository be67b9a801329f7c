"""Trip counts read from the loop itself, as XLA's while-loop trip count analysis reads them
(issue 42, item 4).

TPU modules carry no ``known_trip_count``: the real TPU v5e module
``fixtures/tpu_v5e/offload_scan_8x128MiB.hlo.txt`` (8-layer scan, one chip, jax 0.10.2;
fixtures/README.md) has a forward loop whose body copies its counter before adding 1, which the
reader used to miss (counted once). Both loops ran 8 times per step on the chip: the profile of
that run shows 8 ``dynamic-update-slice-start`` and 8 ``dynamic-slice-start`` per step
(/work/shared/measured/tpu-v5e/README.md). The small modules below are written as XLA prints
them, each count derived by hand; the GPU fixtures, which do carry ``known_trip_count``, check
the reader against XLA's own count with it removed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from hloscope.analysis.structure.callgraph import build_call_graph
from hloscope.api import analyze
from hloscope.hlo.model import Instruction, Module
from hloscope.hlo.parser import parse_hlo
from tests.conftest import fixture_text

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
TPU = "tpu_v5e/offload_scan_8x128MiB.hlo.txt"
LAYER = 1 * 8192 * 8192 * 2  # bf16[1,8192,8192]: one layer's tanh activation, 128 MiB


def _loops(module: Module) -> dict[str, Instruction]:
    return {i.name: i for c in module.computations.values() for i in c.instructions if i.opcode == "while"}


# -- the real TPU module -------------------------------------------------------------------


def test_tpu_module_facts_read_by_hand() -> None:
    # What the text says, read without hloscope: no loop carries XLA's count; the forward
    # condition is `i < 8`; the body adds the sunk constant 1 to a copy of the counter
    # (element 0); the entry starts it at copy(constant 0). The backward loop: `i < 8`, the
    # counter itself plus 1, from copy(constant 0). Each body moves one bf16[1,8192,8192].
    text = fixture_text(TPU)
    assert "known_trip_count" not in text
    assert "%constant.95 = s32[]{:T(128)} constant(8)" in text
    assert "ROOT %lt.0 = pred[]{:T(512)} compare(%get-tuple-element.72, %constant.95), direction=LT" in text
    assert "%get-tuple-element.72 = s32[]{:T(128)} get-tuple-element(%wide.arg_tuple.3), index=0" in text
    assert "%copy.8 = s32[]{:T(128)} copy(%get-tuple-element.150)" in text
    assert "%get-tuple-element.150 = s32[]{:T(128)} get-tuple-element(%wide.arg_tuple.0), index=0" in text
    assert "%constant.92..sunk = s32[]{:T(128)} constant(1)" in text
    assert "%add.11 = s32[]{:T(128)} add(%copy.8, %constant.92..sunk)" in text
    assert re.search(r"ROOT %tuple\.26 = .* tuple\(%add\.11, ", text)
    assert "%copy.4 = s32[]{:T(128)} copy(%constant.41)" in text and "%constant.41 = s32[]{:T(128)} constant(0)" in text
    assert re.search(r"%tuple\.30 = .* tuple\(%copy\.4, ", text) and " while(%tuple.30), condition=%wide.region_1.7" in text
    assert "ROOT %lt.2 = pred[]{:T(512)} compare(%get-tuple-element.96, %constant.105), direction=LT" in text
    assert "%add.12 = s32[]{:T(128)} add(%get-tuple-element.177, %constant.92..sunk.1)" in text
    assert "%copy.16 = s32[]{:T(128)} copy(%constant.41)" in text and re.search(r"%tuple\.27 = .* tuple\(%copy\.16, ", text)
    assert re.search(r"%dynamic-update-slice-start = .*bf16\[1,8192,8192\].* async-start\(", text)
    assert re.search(r"%dynamic-slice-start = \(\(.*\), bf16\[1,8192,8192\]", text)
    # No iteration was peeled: each direction's one transfer is in a loop body, none in the entry.
    assert text.count("dynamic-update-slice-start = ") == 1 and text.count("dynamic-slice-start = ") == 1


def test_tpu_loops_read_as_8() -> None:
    module = parse_hlo(fixture_text(TPU), TPU)
    graph = build_call_graph(module)
    assert {name: graph.trip_count(loop) for name, loop in _loops(module).items()} == {"while": 8, "while.1": 8}
    assert graph.unknown_trip == []
    assert graph.executions["wide.region_0.6.sunk"] == 8 and graph.executions["wide.region_3.12.sunk"] == 8
    assert graph.executions["wide.region_1.7"] == 9  # the condition runs once more than the body


def test_tpu_report_moves_1_gib_each_way_per_step() -> None:
    report = analyze(parse_hlo(fixture_text(TPU), TPU), "h100-sxm")
    summary = report.to_dict()["summary"]
    # 8 layers x 128 MiB: also XLA's host temporaries for this step on the chip (1,073,741,824 B,
    # compiled.memory_analysis(), /work/shared/measured/tpu-v5e/README.md).
    assert summary["to_host_bytes_per_step"] == 8 * LAYER == 1 << 30
    assert summary["to_device_bytes_per_step"] == 8 * LAYER
    assert summary["unknown_trip_counts"] == []
    text = report.to_text()
    assert "to host 1.0 GiB/step, to device 1.0 GiB/step" in text
    assert "trip count unknown" not in text


# -- small loops as XLA writes them --------------------------------------------------------

_TEMPLATE = """HloModule m, is_scheduled=true

%cond (p: (s32[], f32[8], s32[])) -> pred[] {{
  %p = (s32[]{{:T(128)}}, f32[8]{{0}}, s32[]{{:T(128)}}) parameter(0)
  %i = s32[]{{:T(128)}} get-tuple-element(%p), index=0
  {cond}
}}

%body (q: (s32[], f32[8], s32[])) -> (s32[], f32[8], s32[]) {{
  {sunk}
  %q = (s32[]{{:T(128)}}, f32[8]{{0}}, s32[]{{:T(128)}}) parameter(0)
  %j = s32[]{{:T(128)}} get-tuple-element(%q), index=0
  {update}
  %x = f32[8]{{0}} get-tuple-element(%q), index=1
  %y = f32[8]{{0}} negate(%x)
  %l = s32[]{{:T(128)}} get-tuple-element(%q), index=2
  ROOT %next = (s32[]{{:T(128)}}, f32[8]{{0}}, s32[]{{:T(128)}}) tuple(%add, %y, %l)
}}

ENTRY %main (a: f32[8], b: s32[]) -> f32[8] {{
  %a = f32[8]{{0}} parameter(0)
  %b = s32[]{{:T(128)}} parameter(1)
  {init}
  %t = (s32[]{{:T(128)}}, f32[8]{{0}}, s32[]{{:T(128)}}) tuple(%start, %a, %b)
  %w = (s32[]{{:T(128)}}, f32[8]{{0}}, s32[]{{:T(128)}}) while(%t), condition=%cond, body=%body
  ROOT %r = f32[8]{{0}} get-tuple-element(%w), index=1
}}
"""


@dataclass(frozen=True)
class Loop:
    init: str  # entry lines ending in %start, the counter's initial value
    cond: str  # condition lines ending in its ROOT
    update: str  # body lines ending in %add, the counter's next value
    trips: int | None  # derived by hand
    sunk: str = ""  # body lines before its parameter (where XLA puts constants it sank)

    def hlo(self) -> str:
        return _TEMPLATE.format(init=self.init, cond=self.cond, update=self.update, sunk=self.sunk)


C0 = "%c = s32[]{:T(128)} constant(0)\n  %start = s32[]{:T(128)} copy(%c)"  # as the TPU entry starts it
ONE = "%one = s32[]{:T(128)} constant(1)"

LOOPS = {
    # i = 0, 1, ..., 4 pass `i < 5`: 5 runs.
    "counter copied before the add (TPU)": Loop(
        C0, "%n = s32[]{:T(128)} constant(5)\n  ROOT %lt = pred[]{:T(512)} compare(%i, %n), direction=LT",
        f"{ONE}\n  %copy.8 = s32[]{{:T(128)}} copy(%j)\n  %add = s32[]{{:T(128)}} add(%copy.8, %one)", 5),
    # step 2 from a constant sunk into the body: 0, 2, 4, 6 pass `i < 7`: 4 runs.
    "sunk constant step": Loop(
        C0, "%n = s32[]{:T(128)} constant(7)\n  ROOT %lt = pred[]{:T(512)} compare(%i, %n), direction=LT",
        "%add = s32[]{:T(128)} add(%j, %constant.92..sunk)", 4,
        sunk="%constant.92..sunk = s32[]{:T(128)} constant(2)"),
    # `10 > i` from 3 by 3: 3, 6, 9 pass, 12 fails: 3 runs.
    "GT with the bound on the left": Loop(
        "%start = s32[]{:T(128)} constant(3)",
        "%n = s32[]{:T(128)} constant(10)\n  ROOT %gt = pred[]{:T(512)} compare(%n, %i), direction=GT",
        "%three = s32[]{:T(128)} constant(3)\n  %add = s32[]{:T(128)} add(%three, %j)", 3),
    # `i != 12` from 0 by 4: 0, 4, 8 pass, 12 fails: 3 runs.
    "NE": Loop(
        C0, "%n = s32[]{:T(128)} constant(12)\n  ROOT %ne = pred[]{:T(512)} compare(%i, %n), direction=NE",
        "%four = s32[]{:T(128)} constant(4)\n  %add = s32[]{:T(128)} add(%j, %four)", 3),
    # `i <= 4` from 1: 1, 2, 3, 4 pass: 4 runs (a loop whose first iteration XLA peeled starts at 1).
    "LE from a peeled start": Loop(
        "%start = s32[]{:T(128)} constant(1)",
        "%n = s32[]{:T(128)} constant(4)\n  ROOT %le = pred[]{:T(512)} compare(%i, %n), direction=LE",
        f"{ONE}\n  %add = s32[]{{:T(128)}} add(%j, %one)", 4),
    # counting down: 8, 7, ..., 1 pass `i > 0`: 8 runs.
    "subtract, GT": Loop(
        "%start = s32[]{:T(128)} constant(8)",
        "%z = s32[]{:T(128)} constant(0)\n  ROOT %gt = pred[]{:T(512)} compare(%i, %z), direction=GT",
        f"{ONE}\n  %add = s32[]{{:T(128)}} subtract(%j, %one)", 8),
    # the start taken out of a tuple built in the entry: 2, 3, 4 pass `i < 5`: 3 runs.
    "start from a tuple built in the caller": Loop(
        "%c2 = s32[]{:T(128)} constant(2)\n  %c9 = s32[]{:T(128)} constant(9)\n"
        "  %pair = (s32[]{:T(128)}, s32[]{:T(128)}) tuple(%c2, %c9)\n"
        "  %start = s32[]{:T(128)} get-tuple-element(%pair), index=0",
        "%n = s32[]{:T(128)} constant(5)\n  ROOT %lt = pred[]{:T(512)} compare(%i, %n), direction=LT",
        f"{ONE}\n  %add = s32[]{{:T(128)}} add(%j, %one)", 3),
    # a counter already past its bound: `i < 3` fails at 5: 0 runs (XLA's known_trip_count 0).
    "starts past its bound": Loop(
        "%start = s32[]{:T(128)} constant(5)",
        "%n = s32[]{:T(128)} constant(3)\n  ROOT %lt = pred[]{:T(512)} compare(%i, %n), direction=LT",
        f"{ONE}\n  %add = s32[]{{:T(128)}} add(%j, %one)", 0),
    # the bound is the entry's parameter %b (state element 2), not a constant: unknown.
    "unknown: bound not a constant": Loop(
        C0, "%k = s32[]{:T(128)} get-tuple-element(%p), index=2\n"
        "  ROOT %lt = pred[]{:T(512)} compare(%i, %k), direction=LT",
        f"{ONE}\n  %add = s32[]{{:T(128)}} add(%j, %one)", None),
    # `i != 10` from 0 by 4: 0, 4, 8, 12, ... never equals 10; it runs until the integer wraps: unknown.
    "unknown: NE never met": Loop(
        C0, "%n = s32[]{:T(128)} constant(10)\n  ROOT %ne = pred[]{:T(512)} compare(%i, %n), direction=NE",
        "%four = s32[]{:T(128)} constant(4)\n  %add = s32[]{:T(128)} add(%j, %four)", None),
    # the counter's next value is a product, not a sum: unknown.
    "unknown: multiply": Loop(
        C0, "%n = s32[]{:T(128)} constant(10)\n  ROOT %lt = pred[]{:T(512)} compare(%i, %n), direction=LT",
        "%two = s32[]{:T(128)} constant(2)\n  %add = s32[]{:T(128)} multiply(%j, %two)", None),
}


@pytest.mark.parametrize("case", LOOPS.values(), ids=LOOPS.keys())
def test_small_loop_trip_count(case: Loop) -> None:
    module = parse_hlo(case.hlo(), "m")
    graph = build_call_graph(module)
    assert graph.trip_count(_loops(module)["w"]) == case.trips
    assert graph.unknown_trip == ([] if case.trips is not None else ["w"])
    assert graph.executions["body"] == (case.trips if case.trips is not None else 1)


def test_unknown_count_is_said_and_counted_once() -> None:
    report = analyze(parse_hlo(LOOPS["unknown: bound not a constant"].hlo(), "m"), "h100-sxm")
    assert report.to_dict()["summary"]["unknown_trip_counts"] == ["w"]
    assert "note: trip count unknown for w (counted once)" in report.to_text()


# -- XLA's own count, removed, read back from the loop -------------------------------------

# Each loop's known_trip_count as the fixture's text gives it. A forward loop whose first
# iteration XLA peeled (known_init_step init 1) runs one trip fewer; the peeled iteration's
# transfer sits in the caller, counted there. GPU modules fuse the compare and the add alone.
KNOWN = {
    "mlp: peeled forward loop, fused compare and add": (
        "mlp_offload.hlo.txt", {"while.26": 3, "while.25": 4}),
    "llama: peeled forward loop runs once": ("llama_offload.hlo.txt", {"while.44": 1, "while.43": 2}),
    "llama 405b: chunk loops in the layer loops": (
        "llama405b_hostmem.hlo.txt", {"while.104": 16, "while.105": 16, "while.110": 16, "while.106": 16,
                                      "while.109": 16, "while.111": 31, "while.108": 32}),
    "llama, 32 layers: peeled forward loop": (
        "memory/llama_offload_big_host/optimized.hlo.txt", {"while.44": 31, "while.43": 32}),
    "jax 0.12 compact get-tuple-element operands": ("jax012/mlp_offload.hlo.txt", {"while.26": 3, "while.25": 4}),
    "MaxText: loops that run once": ("maxtext_rope/optimized.hlo.txt", {"while.45": 1, "while.46": 1}),
}
_KNOWN_RE = re.compile(r'"known_trip_count":\{"n":"\d+"\},')


def _without_known(text: str) -> str:
    stripped, n = _KNOWN_RE.subn("", text)
    assert n == text.count("known_trip_count") > 0
    return stripped


@pytest.mark.parametrize(("fixture", "counts"), KNOWN.values(), ids=KNOWN.keys())
def test_reads_xla_count_from_the_loop(fixture: str, counts: dict[str, int]) -> None:
    text = fixture_text(fixture)
    known = {name: loop.known_trip_count for name, loop in _loops(parse_hlo(text, fixture)).items()}
    assert known == counts
    module = parse_hlo(_without_known(text), fixture)
    graph = build_call_graph(module)
    assert {name: graph.trip_count(loop) for name, loop in _loops(module).items()} == counts
    assert graph.unknown_trip == []


def test_peeled_loop_totals_match_xla_host_buffer_without_known_counts(fixtures_dir: Path) -> None:
    import json

    manifest = json.loads((fixtures_dir / "manifest.json").read_text())
    for name, entry in manifest.items():
        text = fixture_text(f"{name}.hlo.txt")
        report = analyze(parse_hlo(_without_known(text), name), "h100-sxm").to_dict()["summary"]
        # XLA's host buffer holds every layer's slice once: the per-step bytes offloaded,
        # the peeled iteration's in the entry and the others' in the loop.
        assert entry["memory"]["host_temp_size_in_bytes"] == report["to_host_bytes_per_step"], name
        assert report["unknown_trip_counts"] == [], name
