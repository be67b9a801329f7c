"""Words for host copies that drained one after another (``hloscope.analysis.simulate.drain``)."""

from __future__ import annotations

from typing import Any

from hloscope.analysis.kinds import Direction
from hloscope.analysis.report import Report
from hloscope.analysis.simulate.drain import SerialDrain
from hloscope.units import human_bytes, human_us

_LINK = {Direction.TO_HOST: "D->H", Direction.TO_DEVICE: "H->D"}


def _names(starts: tuple[str, ...], top: int = 4) -> str:
    return ", ".join(starts[:top]) + (f" and {len(starts) - top} more" if len(starts) > top else "")


def drain_line(d: SerialDrain) -> str:
    """One sentence for one group of copies that drained in series."""
    return (f"serial drain: {len(d.starts)} {_LINK[d.direction]} copies ({_names(d.starts)}; "
            f"{human_bytes(d.bytes)} together) that the schedule keeps in flight together drain one after "
            f"another on the link: ~{human_us(d.drain_us)} from the first issue to the last finish, against "
            f"~{human_us(d.priced_us)} for the longest alone; their dones wait ~{human_us(d.lost_us_per_step)} "
            f"per step longer than each would alone on the link")


def drain_lines(report: Report) -> list[str]:
    """The serial-drain hints of a report, largest loss first (none when no group is material)."""
    return [drain_line(d) for d in report.drains]


def drain_dicts(report: Report) -> list[dict[str, Any]]:
    """The JSON form of the report's serial drains."""
    return [{"direction": d.direction.value, "computation": d.computation, "starts": list(d.starts),
             "bytes": d.bytes, "priced_us": d.priced_us, "drain_us": d.drain_us, "lost_us": d.lost_us,
             "lost_us_per_step": d.lost_us_per_step} for d in report.drains]
