"""The interface every platform's render room fills: what differs by platform in the words.

A view asks :func:`hloscope.render.platforms.platform_text` for the room of the step's platform
(the report's, or the margins'), never which platform it is. The rooms (``gpu.py``, ``tpu.py``) say
what a platform's parts are called, what its header line says of the module, what its margins' error
corners were measured on, how a calibrated target of it is priced, and how ``hloscope targets`` lists
its targets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterable

    from hloscope.analysis.report import Report
    from hloscope.targets import Platform, Target


@dataclass(frozen=True)
class PlatformWords:
    """What a platform's parts are called in a verdict's ``why``: core, what runs the schedule and
    waits at a done; engine, what one direction's host copies queue for. The defaults are the words
    of a step whose platform is not given (a GPU's)."""

    core: str = "compute stream"
    engine: str = "copy engine"


def gbs(bytes_per_s: float | None) -> str:
    """A bandwidth in GB/s as ``hloscope targets`` prints it (``-``: not known)."""
    return "-" if bytes_per_s is None else f"{bytes_per_s / 1e9:g}"


class PlatformText(Protocol):
    """A platform's words (module docstring)."""

    @property
    def platform(self) -> Platform: ...

    @property
    def words(self) -> PlatformWords: ...

    def compiled_line(self, report: Report, evidence: str) -> str:
        """The header line about a module compiled for this platform and judged as it (``evidence``: what
        showed the backend, in words); "" when nothing needs saying."""
        ...

    def margin_basis(self, calibrated: bool) -> str:
        """Whose per-class errors the margins' error corners come from."""
        ...

    def calibrated_fields(self, target: Target) -> list[tuple[str, float, str]]:
        """A calibrated target file's fields beyond the figures every platform has: (name, value, comment)."""
        ...

    def priced_lines(self, target: Target) -> list[str]:
        """What an op is priced at with the calibrated ``target``, when that differs from its figures."""
        ...

    def target_table(self, targets: Iterable[Target]) -> list[tuple[str, ...]]:
        """``hloscope targets``' table of this platform's ``targets`` (the others are passed over): a header
        row, then a row per target."""
        ...
