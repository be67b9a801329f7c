"""Units a person reads: memory in binary units (KiB, MiB, GiB), times in us / ms / s.

One definition for every layer (rules, renderers, the CLI, the TUI)."""

from __future__ import annotations

#: Decimals of the microsecond figures in a JSON report (``render.json_report``, ``check --write-baseline``).
JSON_US_DIGITS = 3


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def human_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e3:
        return f"{us / 1e3:.1f} ms"
    return f"{us:.1f} us"
