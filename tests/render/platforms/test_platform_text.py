"""Each platform's words, from the built-in targets' own figures (``hloscope targets``, docs/targets.md)."""

from __future__ import annotations

import pytest

from hloscope.render.platforms import platform_text, platform_texts, platform_words
from hloscope.targets import BUILTIN_TARGETS, Platform, TpuTarget, get_target


def test_a_gpu_step_speaks_of_compute_streams_and_copy_engines_a_tpu_step_of_its_tensorcore_and_dma_queues() -> None:
    assert (platform_words(Platform.GPU).core, platform_words(Platform.GPU).engine) == ("compute stream",
                                                                                        "copy engine")
    assert (platform_words(Platform.TPU).core, platform_words(Platform.TPU).engine) == ("TensorCore", "DMA queue")


def test_every_built_in_target_is_listed_once_in_its_own_platform_s_table() -> None:
    listed = [row[0] for text in platform_texts() for row in text.target_table(BUILTIN_TARGETS.values())[1:]]
    assert sorted(listed) == sorted(BUILTIN_TARGETS)
    for text in platform_texts():
        names = [row[0] for row in text.target_table(BUILTIN_TARGETS.values())[1:]]
        assert all(BUILTIN_TARGETS[n].platform is text.platform for n in names)


def test_the_gpu_table_comes_first_as_hloscope_targets_prints_it() -> None:
    assert [text.platform for text in platform_texts()] == [Platform.GPU, Platform.TPU]


def test_a_calibrated_v5e_is_priced_at_its_figures_times_its_achieved_shares() -> None:
    # Given the built-in v5e, whose shares were fitted on the fixtures/measured/tpu_v5e_blocks runs
    t = get_target("tpu-v5e")
    assert isinstance(t, TpuTarget)
    text = platform_text(t.platform)
    # When its calibrated target file and its calibration summary are written
    fields = {name: (value, why) for name, value, why in text.calibrated_fields(t)}
    priced = "\n".join(text.priced_lines(t))
    # Then each share is written out with what it prices at, from the target's own figures
    assert fields["hbm_efficiency"][0] == t.hbm_efficiency
    assert f"{t.hbm_bandwidth * t.hbm_efficiency / 1e9:.1f} GB/s" in fields["hbm_efficiency"][1]
    assert f"{t.peak_bf16_flops * t.mxu_efficiency / 1e12:.1f} TFLOP/s bf16" in fields["mxu_efficiency"][1]
    if (t.hbm_efficiency, t.mxu_efficiency) != (1.0, 1.0):
        assert f"HBM {t.hbm_bandwidth * t.hbm_efficiency / 1e9:.1f} GB/s" in priced


@pytest.mark.parametrize("name", ["h100-sxm", "a100-sxm4-80gb"])
def test_a_gpu_target_file_has_no_fields_beyond_the_figures_every_platform_has(name: str) -> None:
    t = get_target(name)
    assert platform_text(t.platform).calibrated_fields(t) == []
    assert platform_text(t.platform).priced_lines(t) == []


def test_the_margins_name_the_runs_their_error_corners_come_from() -> None:
    assert "A100 validation" in platform_text(Platform.GPU).margin_basis(calibrated=False)
    assert "TPU v5e runs" in platform_text(Platform.TPU).margin_basis(calibrated=False)
    assert "TPU v5e runs" in platform_text(Platform.TPU).margin_basis(calibrated=True)
