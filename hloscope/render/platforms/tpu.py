"""The TPU's words: the TensorCore and its DMA queues, the chip a dump names, margins from the v5e runs,
and a calibrated target's achieved shares of HBM and of the MXU's peaks (docs/targets.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hloscope.render.platforms.base import PlatformWords, gbs
from hloscope.targets import Platform, Target, TpuTarget, target_for_tpu

if TYPE_CHECKING:
    from collections.abc import Iterable

    from hloscope.analysis.report import Report


def _tpu(target: Target) -> TpuTarget:
    assert isinstance(target, TpuTarget), target.name  # the room of its platform (platform_text)
    return target


@dataclass(frozen=True)
class TpuText:
    """A TPU (:class:`~hloscope.render.platforms.base.PlatformText`)."""

    platform: Platform = Platform.TPU
    words: PlatformWords = field(default_factory=lambda: PlatformWords("TensorCore", "DMA queue"))

    def compiled_line(self, report: Report, evidence: str) -> str:
        return _other_chip_line(report, evidence) or f"compiled for a TPU: {evidence}"

    def margin_basis(self, calibrated: bool) -> str:
        return ("the calibrated target's (held against the TPU v5e runs)" if calibrated
                else "the TPU v5e runs' (docs/accuracy.md)")

    def calibrated_fields(self, target: Target) -> list[tuple[str, float, str]]:
        """The achieved shares, written out so the file does not lean on the built-in's: its
        ``hbm_bandwidth`` and peaks are the datasheet's figures (scaled by the fit), and an op is priced at
        them times these shares (the scale was fitted on the model's times, which held them already)."""
        t = _tpu(target)
        return [("hbm_efficiency", t.hbm_efficiency, "ops stream HBM at hbm_bandwidth x this share: "
                 f"{t.hbm_bandwidth * t.hbm_efficiency / 1e9:.1f} GB/s"),
                ("mxu_efficiency", t.mxu_efficiency, "matmuls run at each peak x this share: "
                 f"{t.peak_bf16_flops * t.mxu_efficiency / 1e12:.1f} TFLOP/s bf16, "
                 f"{t.peak_fp32_flops * t.mxu_efficiency / 1e12:.1f} TFLOP/s fp32"),
                ("vmem_bandwidth", t.vmem_bandwidth, "bytes/s an op streams through VMEM/SMEM (0: not priced)"),
                ("unaligned_contraction_efficiency", t.unaligned_contraction_efficiency,
                 "a matmul's share of the MXU rate when its contraction is not a multiple of 128"),
                ("chain_input_rate", t.chain_input_rate,
                 "bytes/s a fused matmul chain re-reads its activation in HBM at (0: not priced)")]

    def priced_lines(self, target: Target) -> list[str]:
        """An op is priced at the figures times the target's achieved shares."""
        t = _tpu(target)
        if t.hbm_efficiency == 1.0 and t.mxu_efficiency == 1.0:
            return []
        return ["", f"ops are priced at these figures times the target's achieved shares (hbm_efficiency "
                    f"{t.hbm_efficiency:g}, mxu_efficiency {t.mxu_efficiency:g}): HBM "
                    f"{t.hbm_bandwidth * t.hbm_efficiency / 1e9:.1f} GB/s, bf16 "
                    f"{t.peak_bf16_flops * t.mxu_efficiency / 1e12:.1f} TFLOP/s, fp32 "
                    f"{t.peak_fp32_flops * t.mxu_efficiency / 1e12:.1f} TFLOP/s"]

    def target_table(self, targets: Iterable[Target]) -> list[tuple[str, ...]]:
        rows: list[tuple[str, ...]] = [
            ("name", "TPU", "topology", "cores/chip", "HBM GiB", "HBM TB/s", "bf16 TF/s", "ICI GB/s", "host link",
             "peak GB/s D->H/H->D", "achieved GB/s D->H/H->D")]
        for t in targets:
            if not isinstance(t, TpuTarget):
                continue
            rows.append((
                t.name, t.description, f"{t.topology_prefix}:", str(t.cores_per_chip),
                f"{t.device_memory_size / 2**30:.1f}", f"{t.hbm_bandwidth / 1e12:.2f}",
                f"{t.peak_bf16_flops / 1e12:.0f}", f"{gbs(t.interconnect_bandwidth)}", t.host_link,
                f"{gbs(t.host_link_to_host)}/{gbs(t.host_link_to_device)}",
                f"{gbs(t.host_link_achieved_to_host)}/{gbs(t.host_link_achieved_to_device)}"))
        return rows


def _other_chip_line(report: Report, evidence: str) -> str:
    """A TPU dump judged on another TPU generation's target: what it was compiled for, and how to judge it
    as it ran ("" when the chips agree, or the dump names none)."""
    found, t = report.compiled_for, _tpu(report.target)
    chip = target_for_tpu(found.tpu_version, found.tpu_variant)
    if chip is None or (t.tpu_version, t.tpu_variant) == (chip.tpu_version, chip.tpu_variant):
        return ""
    return (f"note: this module was compiled for a TPU {chip.generation} ({evidence}) but is judged as "
            f"{t.name}, a TPU {t.generation}: its schedule is the {chip.generation}'s; give --target {chip.name} "
            "(or no --target) to judge it on the chip it was compiled for")


TPU_TEXT = TpuText()
