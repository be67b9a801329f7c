"""Closed vocabularies the targets and the analyses share, on the floor of the layers.

``StrEnum`` members equal their JSON strings, so ``Direction.TO_HOST == "to_host"``.
"""

from __future__ import annotations

from enum import StrEnum


class Direction(StrEnum):
    """Which way a host transfer moves data."""

    TO_HOST = "to_host"
    TO_DEVICE = "to_device"


class LinkMode(StrEnum):
    """Which host-link figure the cost model reads: the measured (achieved) or the peak bandwidth."""

    ACHIEVED = "achieved"
    PEAK = "peak"
