"""The GPU's words: compute streams and copy engines; margins from the A100 validation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hloscope.render.platforms.base import PlatformWords

if TYPE_CHECKING:
    from hloscope.analysis.report import Report
    from hloscope.targets import Target


@dataclass(frozen=True)
class GpuText:
    """A GPU (:class:`~hloscope.render.platforms.base.PlatformText`)."""

    words: PlatformWords = field(default_factory=PlatformWords)

    def compiled_line(self, report: Report, evidence: str) -> str:
        return ""

    def margin_basis(self, calibrated: bool) -> str:
        return "the calibrated target's" if calibrated else "the A100 validation's (docs/accuracy.md)"

    def calibrated_fields(self, target: Target) -> list[tuple[str, float, str]]:
        return []

    def priced_lines(self, target: Target) -> list[str]:
        return []


GPU_TEXT = GpuText()
