"""The one line that says an estimate cannot be (``Summary.implausible``, ``hloscope.analysis.cost.plausible``).

An op priced beyond what its shapes allow at 1 % of peak, or a simulated step of a day or
more, is a miscount of the cost model, not an estimate: the line names the ops (the
largest three) and the step, so that no reader takes the figure at its word.
"""

from __future__ import annotations

from hloscope.analysis.cost.plausible import FRACTION, Implausible
from hloscope.units import human_us

__all__ = ["implausible_line", "implausible_lines"]

#: Ops named in the line; the others are counted.
_NAMED = 3


def _duration(us: float) -> str:
    """µs in the largest unit that keeps the figure readable (days for a day or more)."""
    if us >= 86_400e6:
        return f"{us / 86_400e6:.1f} days"
    if us >= 3_600e6:
        return f"{us / 3_600e6:.1f} h"
    return human_us(us)


def implausible_line(found: Implausible | None) -> str | None:
    """The sentence, or None when every estimate is plausible."""
    if found is None:
        return None
    parts = []
    if found.ops:
        named = "; ".join(f"{x.instruction} in {x.computation} at ~{_duration(x.us)}, beyond the "
                          f"~{_duration(x.ceiling_us)} its shapes allow at {FRACTION:.0%} of peak"
                          for x in found.ops[:_NAMED])
        more = len(found.ops) - _NAMED
        parts.append(f"the cost model prices {named}" + (f" (and {more} more op(s) beyond their shapes)"
                                                          if more > 0 else ""))
    if found.step_us is not None:
        parts.append(f"the simulated step comes to {_duration(found.step_us)}, a day or more")
    return ("IMPLAUSIBLE estimates: " + "; ".join(parts)
            + ": the model miscounts here; the step and the verdicts built on these figures are not estimates")


def implausible_lines(found: Implausible | None) -> list[str]:
    """:func:`implausible_line` as a list of zero or one line, for a report's lines."""
    line = implausible_line(found)
    return [line] if line is not None else []
