"""Facts read by hand from the fixture HLO (fixtures/*.hlo.txt), checked against the analysis.

Each row was derived by reading the scheduled module: the transfer's start
instruction and computation, direction (S(5) on the result = to host), the
bytes of the slice moved, the enclosing loop's known_trip_count, and what the
schedule places between the start and its done.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.conftest import fixture_report, fixture_text

KV = 256 * 2 * 64 * 2  # bf16[1,1,256,2,64]: one device's K or V for one layer
Q = 256 * 8 * 64 * 2  # bf16[1,1,256,8,64]: one device's Q for one layer
H = 8 * 1024 * 2  # bf16[1,8,1024]: one device's MLP hidden activation for one layer


@dataclass(frozen=True)
class Fact:
    fixture: str
    start: str
    computation: str
    direction: str
    bytes: int
    executions: int
    compute: tuple[str, ...] | None = None  # exact compute ops in the window, when listed
    collectives: tuple[str, ...] = ()
    window_has_compute: bool = True


FACTS = {
    "mlp: prefetch in backward loop, 3 slice fusions in window": Fact(
        "mlp_offload.hlo.txt", "dynamic-slice-start.1", "region_3.4_spmd", "to_device", H, 4,
        ("loop_dynamic_slice_fusion.1", "loop_dynamic_slice_fusion.2", "loop_dynamic_slice_fusion")),
    "mlp: offload in peeled forward loop overlaps an all-gather": Fact(
        "mlp_offload.hlo.txt", "dynamic-update-slice-start.2", "region_0.1_spmd.clone", "to_host", H, 3,
        ("copy.18", "loop_dynamic_slice_fusion.4", "loop_dynamic_slice_fusion.3", "gemm_fusion_dot.18",
         "loop_reduce_fusion.1", "loop_add_fusion.5", "loop_reduce_fusion", "gemm_fusion_dot.19",
         "loop_dynamic_update_slice_fusion.2", "loop_add_fusion.4"), ("all-gather-start.1",)),
    "mlp: peeled iteration's offload in entry overlaps the loss all-reduce": Fact(
        "mlp_offload.hlo.txt", "dynamic-update-slice-start.1.0", "main.6_spmd", "to_host", H, 1,
        ("input_convert_reduce_fusion", "loop_broadcast_fusion.1", "loop_broadcast_fusion", "loop_multiply_fusion"),
        ("all-reduce-start",)),
    "mlp no pipelining: offload in forward loop": Fact(
        "mlp_offload_nopipe.hlo.txt", "dynamic-update-slice-start.1", "region_0.1_spmd", "to_host", H, 4),
    "mlp no pipelining: prefetch in backward loop": Fact(
        "mlp_offload_nopipe.hlo.txt", "dynamic-slice-start.1", "region_3.4_spmd", "to_device", H, 4),
    "llama: K prefetch whose window holds only a GTE and another start": Fact(
        "llama_offload.hlo.txt", "dynamic-slice-start.2.0", "region_13.23_spmd", "to_device", KV, 2,
        (), (), window_has_compute=False),
    "llama: V prefetch": Fact(
        "llama_offload.hlo.txt", "dynamic-slice-start.1.0", "region_13.23_spmd", "to_device", KV, 2),
    "llama: Q prefetch behind 10 slice fusions and a copy": Fact(
        "llama_offload.hlo.txt", "dynamic-slice-start.3", "region_13.23_spmd", "to_device", Q, 2,
        ("loop_dynamic_slice_fusion.3", "loop_dynamic_slice_fusion.2", "loop_dynamic_slice_fusion.9",
         "loop_dynamic_slice_fusion.7", "copy.112", "loop_dynamic_slice_fusion.8", "loop_dynamic_slice_fusion",
         "loop_dynamic_slice_fusion.6", "loop_dynamic_slice_fusion.5", "loop_dynamic_slice_fusion.1",
         "loop_dynamic_slice_fusion.4")),
    "llama: K offload in peeled loop behind two transpose fusions": Fact(
        "llama_offload.hlo.txt", "dynamic-update-slice-start.2.0", "region_0.5_spmd.clone", "to_host", KV, 1,
        ("loop_transpose_fusion.5", "input_transpose_fusion.6")),
    "llama: Q offload in peeled loop": Fact(
        "llama_offload.hlo.txt", "dynamic-update-slice-start.6", "region_0.5_spmd.clone", "to_host", Q, 1),
    "llama: peeled layer's Q offload in entry": Fact(
        "llama_offload.hlo.txt", "dynamic-update-slice-start.3.0", "main.27_spmd", "to_host", Q, 1),
    "llama no pipelining: Q offload in forward loop": Fact(
        "llama_offload_nopipe.hlo.txt", "dynamic-update-slice-start.3", "region_0.5_spmd", "to_host", Q, 2),
}


def _find(fact: Fact) -> dict:
    rows = [t for t in fixture_report(fact.fixture).to_dict()["transfers"] if t["name"] == fact.start]
    assert len(rows) == 1, f"{fact.start} not found once"
    return rows[0]


@pytest.mark.parametrize("fact", FACTS.values(), ids=FACTS.keys())
def test_transfer_fact(fact: Fact) -> None:
    t = _find(fact)
    assert t["computation"] == fact.computation
    assert t["direction"] == fact.direction
    assert t["bytes"] == fact.bytes
    assert t["executions"] == fact.executions
    assert t["async"] is True
    assert t["crosses_iteration"] is False
    if fact.compute is not None:
        assert t["overlapped_compute"] == list(fact.compute)
        assert t["overlapped_collectives"] == list(fact.collectives)
    assert t["overlaps_compute"] is fact.window_has_compute
    if not fact.window_has_compute and not fact.collectives:
        assert t["verdict"] == "exposed"


@pytest.mark.parametrize(
    "fixture, count, to_host, to_device",
    [
        ("mlp_offload.hlo.txt", 3, 4 * H, 4 * H),
        ("mlp_offload_nolhs.hlo.txt", 3, 4 * H, 4 * H),
        ("mlp_offload_nopipe.hlo.txt", 2, 4 * H, 4 * H),
        ("llama_offload.hlo.txt", 9, 2 * (Q + 2 * KV), 2 * (Q + 2 * KV)),
        ("llama_offload_nolhs.hlo.txt", 9, 2 * (Q + 2 * KV), 2 * (Q + 2 * KV)),
        ("llama_offload_nopipe.hlo.txt", 6, 2 * (Q + 2 * KV), 2 * (Q + 2 * KV)),
        ("mlp_remat.hlo.txt", 0, 0, 0),
        ("llama_remat.hlo.txt", 0, 0, 0),
    ],
)
def test_totals_per_step(fixture: str, count: int, to_host: int, to_device: int) -> None:
    s = fixture_report(fixture).to_dict()["summary"]
    assert s["transfers"] == count
    assert (s["to_host_bytes_per_step"], s["to_device_bytes_per_step"]) == (to_host, to_device)


@pytest.mark.parametrize("fixture", ["mlp_remat.hlo.txt", "llama_remat.hlo.txt"])
def test_remat_has_no_host_memory_at_all(fixture: str) -> None:
    # Independent of the analysis: the text itself never mentions memory space 5.
    assert ":S(5)" not in fixture_text(fixture)


def test_host_bytes_match_xla_memory_report(fixtures_dir) -> None:  # type: ignore[no-untyped-def]
    import json

    manifest = json.loads((fixtures_dir / "manifest.json").read_text())
    for name, entry in manifest.items():
        report = fixture_report(f"{name}.hlo.txt").to_dict()["summary"]
        # XLA's host buffer holds every layer's slice once: the per-step bytes offloaded.
        assert entry["memory"]["host_temp_size_in_bytes"] == report["to_host_bytes_per_step"], name


def test_collective_pairs_are_found() -> None:
    pairs = fixture_report("mlp_offload.hlo.txt").to_dict()["async_pairs"]
    kinds = {(p["op"], p["kind"]) for p in pairs}
    assert ("all-gather", "collective") in kinds and ("reduce-scatter", "collective") in kinds
    assert ("all-reduce", "collective") in kinds
    assert sum(p["kind"] == "host_transfer" for p in pairs) == 3


def test_unoptimized_module_reports_annotations() -> None:
    d = fixture_report("mlp_offload.before_optimizations.hlo.txt").to_dict()
    assert d["scheduled"] is False
    dirs = sorted((t["direction"], t["op"], t["verdict"]) for t in d["transfers"])
    assert dirs == [("to_device", "annotate_device_placement", "unscheduled"),
                    ("to_host", "annotate_device_placement", "unscheduled")]
    # Before SPMD partitioning the annotated value is the global bf16[64,1024] hidden activation.
    assert {t["bytes"] for t in d["transfers"]} == {64 * 1024 * 2}
    # No known_trip_count before optimization; the loops count i from constant(0) while i < constant(4),
    # adding 1 per iteration (while.13 and while.19 read by hand), so each annotation runs 4 times.
    assert {t["executions"] for t in d["transfers"]} == {4}
    assert d["summary"]["unknown_trip_counts"] == []


@pytest.mark.parametrize("workload", ["mlp", "llama"])
def test_the_no_lhs_twin_is_another_schedule_of_the_same_transfers(workload: str) -> None:
    # Read from the text: the latency hiding scheduler tags each instruction it places with
    # scheduling_name; fixtures/generate.py compiles the _nolhs twin with the scheduler off.
    lhs, nolhs = f"{workload}_offload.hlo.txt", f"{workload}_offload_nolhs.hlo.txt"
    assert "scheduling_name" in fixture_text(lhs) and "scheduling_name" not in fixture_text(nolhs)
    assert fixture_text(lhs) != fixture_text(nolhs)
    starts = [sorted(v.transfer.instruction.name for v in fixture_report(f).verdicts) for f in (lhs, nolhs)]
    assert starts[0] == starts[1]


def test_without_lhs_the_mlp_prefetch_waits_at_once() -> None:
    # mlp_offload_nolhs.hlo.txt: the backward loop's prefetch is done on the line after its start
    # (LHS puts three slice fusions between them: FACTS above), so nothing can hide it.
    lines = fixture_text("mlp_offload_nolhs.hlo.txt").splitlines()
    at = next(i for i, line in enumerate(lines) if "%dynamic-slice-start.1 = " in line)
    assert "%dynamic-slice-done.1 = " in lines[at + 1]
    verdicts = {f: {v.transfer.instruction.name: v.verdict for v in fixture_report(f).verdicts}
                for f in ("mlp_offload.hlo.txt", "mlp_offload_nolhs.hlo.txt")}
    assert verdicts["mlp_offload_nolhs.hlo.txt"]["dynamic-slice-start.1"] == "exposed"
    assert verdicts["mlp_offload.hlo.txt"]["dynamic-slice-start.1"] != "exposed"
