"""Each rule on real compiled steps, on both sides of its threshold.

Facts read from the HLO (fixtures/README.md, tests/check/data/README.md):

- llama_offload.hlo.txt: ``dynamic-slice-start.2.0`` reads back the host buffer the V projection
  was written to (its writers' update comes from the V slice of the merged QKV gemm,
  ``loop_slice_fusion.6``/``.4``, whose frame is workloads/llama.py:71); between it and its done (loop
  body ``region_13.23_spmd``, 2 iterations) there are only two bookkeeping ops, no
  fusion: nothing can hide it. The to-host updates are bf16[1,1,256,8,64] (256 KiB)
  and twice bf16[1,1,256,2,64] (64 KiB) per layer, 2 layers: 768 KiB per step.
- mlp_remat.hlo.txt: no buffer in S(5): no host transfer.
- *.before_optimizations.hlo.txt: ``is_scheduled`` absent: not scheduled.
- data/mlp_sync: the mlp step compiled with the host-memory-transfer-asyncifier
  disabled: its offloads are plain fusions writing S(5) (``loop_dynamic_update_slice_fusion.3``,
  ``.4``) and reading it (``loop_dynamic_slice_fusion.1``): synchronous.
"""

from __future__ import annotations

import re

import pytest
from check_helpers import DATA, FIXTURES, fixture_report

from hloscope.analysis.kinds import Reason, VerdictKind
from hloscope.check.config import config_from_mapping
from hloscope.check.run import NothingToCheck, run_check
from hloscope.check.subject import Subject, load_path
from hloscope.errors import EXIT_BAD_INPUT, EXIT_NOTHING_TO_CHECK, HloscopeError
from hloscope.render.check.words import violation_message
from hloscope.targets import get_target

H100 = get_target("h100-sxm")


def subject(name: str) -> Subject:
    return Subject(fixture_report(name), name)


def check(subj: Subject, **rules: object):  # type: ignore[no-untyped-def]
    return run_check(subj, config_from_mapping(rules, "test"))


def rules_broken(result) -> set[str]:  # type: ignore[no-untyped-def]
    return {v.rule for v in result.violations}


def test_no_exposed_fails_on_a_window_with_no_compute_and_names_tensor_source_and_window() -> None:
    # Given the llama step whose dynamic-slice-start.2.0 has only free ops in its window
    result = check(subject("llama_offload.hlo.txt"), no_exposed=True)
    # Then the check fails on that transfer, with its source line and exposure
    bad = [v for v in result.violations if v.record and v.record.instruction == "dynamic-slice-start.2.0"]
    assert bad, [violation_message(v) for v in result.violations]
    v = bad[0]
    assert v.verdict is not None and v.verdict.reason is Reason.ONLY_FREE_OPS
    report = fixture_report("llama_offload.hlo.txt")
    assert v.record is not None and v.record.full_source == str(report.source(v.verdict))
    assert re.search(r"workloads/llama\.py:71$", v.record.full_source)
    from hloscope.render.check.formats import violation_lines

    text = "\n".join(violation_lines(v))
    assert v.record.full_source.rsplit("/", 1)[1] in text and "bf16[1,1,256,2,64]" in text
    assert "overlapped by: nothing that does work" in text and "per step" in text


def test_no_exposed_passes_exactly_when_no_verdict_is_exposed() -> None:
    for name in ("mlp_offload.hlo.txt", "mlp_offload_nopipe.hlo.txt", "llama_offload_nopipe.hlo.txt"):
        report = fixture_report(name)
        exposed = [v for v in report.verdicts if v.verdict is VerdictKind.EXPOSED]
        result = check(subject(name), no_exposed=True)
        assert result.passed == (not exposed), name
        assert {v.record.instruction for v in result.violations if v.record} == \
            {v.transfer.instruction.name for v in exposed}


def test_no_sync_on_a_real_step_with_synchronous_offloads() -> None:
    subj = load_path(str(DATA / "mlp_sync"), H100)
    result = check(subj, no_sync=True)
    assert {v.record.instruction for v in result.violations if v.record} == {
        "loop_dynamic_slice_fusion.1", "loop_dynamic_update_slice_fusion.3", "loop_dynamic_update_slice_fusion.4"}
    assert all("synchronous" in violation_message(v) for v in result.violations)
    assert check(subject("mlp_offload.hlo.txt"), no_sync=True).passed  # the same step, asyncified


# mlp_offload (with LHS) hides all three of its 16 KiB transfers behind kernels of 1 us launch
# each; its no-LHS twin leaves two exposed.
@pytest.mark.parametrize("name", ["llama_offload.hlo.txt", "mlp_offload_nolhs.hlo.txt"])
def test_max_exposed_us_on_both_sides(name: str) -> None:
    report = fixture_report(name)
    total = sum(v.est_exposed_us * v.transfer.executions for v in report.verdicts)
    assert total > 0
    assert check(subject(name), max_exposed_us=total * 1.01).passed
    failed = check(subject(name), max_exposed_us=total * 0.99)
    assert rules_broken(failed) == {"max-exposed-us"}
    assert failed.violations[0].actual == pytest.approx(total)


def test_max_exposed_fraction_on_both_sides() -> None:
    report = fixture_report("llama_offload.hlo.txt")
    exposed = sum(v.est_exposed_us * v.transfer.executions for v in report.verdicts)
    frac = exposed / (report.est_compute_us() + exposed)
    assert check(subject("llama_offload.hlo.txt"), max_exposed_fraction=frac * 1.01).passed
    assert not check(subject("llama_offload.hlo.txt"), max_exposed_fraction=frac * 0.99).passed


def test_min_hidden_fraction_on_both_sides() -> None:
    report = fixture_report("llama_offload.hlo.txt")
    total = sum(v.est_transfer_us * v.transfer.executions for v in report.verdicts)
    hidden = sum(max(0.0, v.est_transfer_us - v.est_exposed_us) * v.transfer.executions for v in report.verdicts)
    frac = hidden / total
    assert 0 < frac < 1
    assert check(subject("llama_offload.hlo.txt"), no_exposed=False, min_hidden_fraction=frac * 0.99).passed
    failed = check(subject("llama_offload.hlo.txt"), min_hidden_fraction=min(1.0, frac * 1.01))
    assert rules_broken(failed) == {"min-hidden-fraction"}


def test_min_offloaded_bytes_on_both_sides_and_a_lost_offload() -> None:
    per_step = 2 * (256 + 64 + 64) * 1024  # read from the HLO (module docstring)
    assert check(subject("llama_offload.hlo.txt"), min_offloaded_bytes=per_step).passed
    assert check(subject("llama_offload.hlo.txt"), min_offloaded_bytes="768KiB").passed
    assert not check(subject("llama_offload.hlo.txt"), min_offloaded_bytes=per_step + 1).passed


def test_expect_offloaded_names() -> None:
    # XLA's to-host updates carry no op_name; the reads back carry the JAX op path.
    ok = check(subject("llama_offload.hlo.txt"), expect_offloaded=["*dynamic_slice*"])
    assert not ok.passed  # the dynamic_slice op path names the to-device reads, not the offloads
    assert rules_broken(ok) == {"expect-offloaded"}
    assert "names: (unnamed)" in violation_message(ok.violations[0])


def test_annotations_accounted_async_removed_and_sync() -> None:
    before = load_path(str(FIXTURES / "llama_offload.before_optimizations.hlo.txt"), H100).report.module
    # Every device_put of the unoptimized llama step became async slices (8 partitions).
    good = Subject(fixture_report("llama_offload.hlo.txt"), "llama", unoptimized=before)
    assert check(good, annotations_accounted=True).passed
    # The remat compile of the mlp has no transfer: its annotations were removed.
    mlp_before = load_path(str(FIXTURES / "mlp_offload.before_optimizations.hlo.txt"), H100).report.module
    gone = Subject(fixture_report("mlp_offload_nopipe.hlo.txt"), "x", unoptimized=mlp_before)
    assert check(gone, annotations_accounted=True).passed
    removed = check(Subject(fixture_report("mlp_remat.hlo.txt"), "remat", unoptimized=mlp_before),
                    annotations_accounted=True, allow_empty=True)
    assert removed.passed  # allow-empty: nothing judged on an empty step
    # The synchronous compile: its artifact folder carries the unoptimized module.
    sync = check(load_path(str(DATA / "mlp_sync"), H100), annotations_accounted=True)
    assert rules_broken(sync) == {"annotations-accounted"}
    assert all("became a synchronous copy" in violation_message(v) for v in sync.violations)


def test_annotations_removed_is_reported() -> None:
    from hloscope.check.annotations import Fate, account_annotations

    before = fixture_report("mlp_offload.before_optimizations.hlo.txt")
    fates = account_annotations(before, fixture_report("mlp_remat.hlo.txt"))
    assert [f.fate for f in fates] == [Fate.REMOVED, Fate.REMOVED]


def test_annotations_need_the_unoptimized_module() -> None:
    with pytest.raises(HloscopeError) as e:
        check(subject("llama_offload.hlo.txt"), annotations_accounted=True)
    assert e.value.exit_code == EXIT_BAD_INPUT and "unoptimized" in str(e.value)


def test_fits_hbm_cannot_be_evaluated_on_a_plain_file() -> None:
    with pytest.raises(HloscopeError) as e:
        check(subject("llama_offload.hlo.txt"), fits_hbm=True)
    assert e.value.exit_code == EXIT_BAD_INPUT and "cannot be evaluated" in str(e.value)


def test_fits_hbm_on_both_sides_with_an_artifact_folder() -> None:
    subj = load_path(str(DATA / "mlp_sync"), H100)
    assert subj.memory is not None
    used = subj.memory.device_allocation_bytes
    margin_ok = 1 - used / subj.memory.hbm_bytes  # the largest margin that still fits
    assert check(subj, fits_hbm=True, no_sync=False, hbm_margin=margin_ok * 0.99).passed
    failed = check(subj, fits_hbm=True, no_sync=False, no_exposed=False, hbm_margin=min(1.0, margin_ok * 1.01))
    assert rules_broken(failed) == {"fits-hbm"}


def test_allow_list_by_instruction_and_source_with_reason() -> None:
    exposed = [v.transfer.instruction.name for v in fixture_report("llama_offload.hlo.txt").verdicts
               if v.verdict is VerdictKind.EXPOSED]
    assert "dynamic-slice-start.2.0" in exposed  # its window holds no compute (module docstring)
    entries = [{"instruction": name, "reason": f"known: {name}"} for name in exposed]
    result = check(subject("llama_offload.hlo.txt"), no_exposed=True, allow=entries)
    assert result.passed and sorted(e.reason for _, e in result.allowed) == sorted(e["reason"] for e in entries)
    by_source = check(subject("llama_offload.hlo.txt"), no_exposed=True,
                      allow=[{"source": "workloads/*.py", "reason": "model code", "rules": ["no-exposed"]}])
    assert by_source.passed
    other_rule = check(subject("llama_offload.hlo.txt"), no_exposed=True,
                       allow=[{"source": "workloads/*.py", "reason": "r", "rules": ["no-sync"]}])
    assert not other_rule.passed


@pytest.mark.parametrize("entry, words", [
    ({"instruction": "x"}, "needs a reason"),
    ({"reason": "why"}, "names a checkpoint"),
    ({"instruction": "x", "reason": "r", "rules": ["nope"]}, "unknown rule"),
    ({"instruction": "x", "reason": "r", "colour": "red"}, "unknown key"),
])
def test_bad_allow_entries(entry: dict[str, object], words: str) -> None:
    with pytest.raises(HloscopeError, match=words):
        config_from_mapping({"allow": [entry]}, "test")


@pytest.mark.parametrize("name, words", [
    ("mlp_remat.hlo.txt", "no host transfer"),
    ("mlp_offload.before_optimizations.hlo.txt", "not scheduled"),
])
def test_nothing_to_check_fails_unless_allowed(name: str, words: str) -> None:
    from hloscope.render.check.words import nothing_to_check_words

    with pytest.raises(NothingToCheck) as e:
        check(subject(name))
    assert e.value.exit_code == EXIT_NOTHING_TO_CHECK and words in nothing_to_check_words(e.value.nothing)
    assert check(subject(name), allow_empty=True).passed


def test_default_rules_are_no_sync_no_exposed_and_a_bound_on_waiting() -> None:
    result = check(subject("llama_offload.hlo.txt"))
    assert result.rules == {"no-sync": True, "no-exposed": True, "max-exposed-fraction": 0.1}
    assert result.default_gate and not result.passed


def test_fits_host_pool_on_both_sides_of_the_pool() -> None:
    """mlp_sync keeps 64 KiB per GPU in S(5) (host_temp_size_in_bytes 65,536, tests/check/data/README.md):
    it fits PJRT's default 64 GiB pool, and not a pool one byte smaller than it."""
    subj = load_path(str(DATA / "mlp_sync"), H100)
    assert subj.memory is not None and subj.memory.host_bytes == 65_536
    assert subj.memory.host_pool_bytes == 64 << 30 and subj.memory.host_pool_fits
    assert check(subj, fits_host_pool=True, no_sync=False).passed
    gb_ok = 65_536 / (1 << 30)
    assert check(subj, fits_host_pool=True, no_sync=False, host_pool_gb=gb_ok).passed
    failed = check(subj, fits_host_pool=True, no_sync=False, no_exposed=False, host_pool_gb=gb_ok * 0.999)
    assert rules_broken(failed) == {"fits-host-pool"}


def test_fits_host_pool_cannot_be_evaluated_on_a_plain_file() -> None:
    with pytest.raises(HloscopeError) as e:
        check(subject("llama_offload.hlo.txt"), fits_host_pool=True)
    assert e.value.exit_code == EXIT_BAD_INPUT and "cannot be evaluated" in str(e.value)
