"""Each platform's analysis room behind one interface, chosen once from the target (docs/targets.md,
"One backend per platform").

:func:`backend_for` is the one place the analysis picks a platform's room: the rooms (``gpu``,
``tpu``) fill :class:`~hloscope.analysis.platforms.base.PlatformBackend`, and nothing outside them
asks which platform a step is on.
"""

from __future__ import annotations

from hloscope.analysis.platforms.base import PlatformBackend
from hloscope.analysis.platforms.gpu import GPU
from hloscope.analysis.platforms.tpu import TPU
from hloscope.targets import Platform, Target

__all__ = ["PlatformBackend", "backend_for", "backend_of"]

_BACKENDS: dict[Platform, PlatformBackend] = {b.platform: b for b in (GPU, TPU)}


def backend_for(target: Target) -> PlatformBackend:
    """The room of ``target``'s platform."""
    return _BACKENDS[target.platform]


def backend_of(platform: Platform) -> PlatformBackend:
    """The room of ``platform``."""
    return _BACKENDS[platform]
