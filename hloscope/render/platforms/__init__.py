"""Each platform's words behind one interface, chosen by the step's platform (docs/targets.md, "One backend
per platform").

:func:`platform_text` is the one place a view picks a platform's room; the rooms (``gpu``, ``tpu``) fill
:class:`~hloscope.render.platforms.base.PlatformText`.
"""

from __future__ import annotations

from hloscope.render.platforms.base import PlatformText, PlatformWords
from hloscope.render.platforms.gpu import GPU_TEXT
from hloscope.render.platforms.tpu import TPU_TEXT
from hloscope.targets import Platform

__all__ = ["PlatformText", "PlatformWords", "platform_text", "platform_texts", "platform_words"]

_TEXTS: dict[Platform, PlatformText] = {t.platform: t for t in (GPU_TEXT, TPU_TEXT)}


def platform_text(platform: Platform) -> PlatformText:
    """The room of ``platform``."""
    return _TEXTS[platform]


def platform_words(platform: Platform) -> PlatformWords:
    """The words of ``platform`` (``hloscope.analysis.platforms``: a GPU's streams and copy engines, a
    TPU's TensorCore and DMA queues)."""
    return _TEXTS[platform].words


def platform_texts() -> tuple[PlatformText, ...]:
    """Every platform's room, GPUs first (the order ``hloscope targets`` lists them in)."""
    return tuple(_TEXTS.values())
