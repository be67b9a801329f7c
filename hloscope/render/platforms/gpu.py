"""The GPU's words: compute streams and copy engines; margins from the A100 validation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hloscope.render.platforms.base import PlatformWords, gbs
from hloscope.targets import GpuTarget, Platform, Target
from hloscope.vocab import Direction

if TYPE_CHECKING:
    from collections.abc import Iterable

    from hloscope.analysis.report import Report


@dataclass(frozen=True)
class GpuText:
    """A GPU (:class:`~hloscope.render.platforms.base.PlatformText`)."""

    platform: Platform = Platform.GPU
    words: PlatformWords = field(default_factory=PlatformWords)

    def compiled_line(self, report: Report, evidence: str) -> str:
        return ""

    def margin_basis(self, calibrated: bool) -> str:
        return "the calibrated target's" if calibrated else "the A100 validation's (docs/accuracy.md)"

    def calibrated_fields(self, target: Target) -> list[tuple[str, float, str]]:
        return []

    def priced_lines(self, target: Target) -> list[str]:
        return []

    def target_table(self, targets: Iterable[Target]) -> list[tuple[str, ...]]:
        rows: list[tuple[str, ...]] = [
            ("name", "GPU", "cc", "HBM GiB", "HBM TB/s", "bf16 TF/s", "host link", "peak GB/s D->H/H->D",
             "achieved GB/s D->H/H->D", "GPUs/link", "per GPU GB/s D->H/H->D", "host GiB/GPU")]
        for t in targets:
            if not isinstance(t, GpuTarget):
                continue
            rows.append((
                t.name, t.description, f"{t.compute_capability[0]}.{t.compute_capability[1]}",
                f"{t.device_memory_size / 2**30:.1f}", f"{t.hbm_bandwidth / 1e12:.2f}",
                f"{t.peak_bf16_flops / 1e12:.0f}", t.host_link,
                f"{gbs(t.host_link_to_host)}/{gbs(t.host_link_to_device)}",
                f"{gbs(t.host_link_achieved_to_host)}/{gbs(t.host_link_achieved_to_device)}",
                str(t.host_link_gpus),
                f"{gbs(t.host_link_bandwidth(Direction.TO_HOST))}/{gbs(t.host_link_bandwidth(Direction.TO_DEVICE))}",
                f"{t.host_memory_per_gpu / 2**30:.0f}" if t.host_memory_per_gpu else "-",
            ))
        return rows


GPU_TEXT = GpuText()
