"""Renderers of a sweep (one row per compiled cell): table, JSON and CSV, from one registry.

The table shows each cell's optimized-HLO fingerprint and, under it, one line
naming the cells whose optimized HLO was byte-identical (rows' ``fingerprint``,
``cell`` and ``identical_to``, set by ``hloscope.compile.search.sweep``).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from hloscope.render.options import RenderOptions
from hloscope.render.table import format_columns


@dataclass(frozen=True)
class SweepResult:
    """rows: one dict per cell (columns in docs/compile.md), in cell order; capacity:
    per policy, the batch answers (None when no batch sizes were swept)."""

    workload: str
    target: str
    devices: int
    rows: list[dict[str, Any]]
    columns: tuple[str, ...]
    capacity: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class SweepRenderer(Protocol):
    name: str
    extension: str

    def render(self, result: SweepResult, out: TextIO, options: RenderOptions) -> None: ...


def _gib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**30:.2f}"


def _ms(us: float) -> str:
    ms = us / 1e3
    return f"{ms:.3f}" if ms < 10 else f"{ms:.1f}"


def _seconds(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _onoff(x: bool) -> str:
    return "on" if x else "off"


class SweepTable:
    name = "table"
    extension = ".txt"
    headers = ("policy", "scheduler", "pipelined", "batch", "device GiB", "XLA peak GiB", "host GiB", "fits",
               "xfers", "hidden", "partial", "exposed", "sync", "~exposed ms", "~step ms", "cached", "compile s",
               "HLO sha256", "same HLO as")

    def render(self, result: SweepResult, out: TextIO, options: RenderOptions) -> None:
        body = []
        for r in result.rows:
            head = [r["policy"], r["scheduler"], _onoff(r["pipelined"])]
            if r.get("error"):
                body.append([*head, str(r["batch"] or "-"), "error: " + r["error"][:80]] + [""] * 14)
                continue
            body.append([*head, str(r["batch"]), _gib(r.get("device_allocation_bytes")), _gib(r["peak_device_bytes"]),
                         _gib(r["host_bytes"]),
                         "yes" if r["fits"] else "NO", str(r["transfers"]), str(r["hidden"]), str(r["partial"]),
                         str(r["exposed"]), str(r["sync"]), _ms(r["est_exposed_us"]), _ms(r["est_step_us"]),
                         "yes" if r.get("cached") else "no", _seconds(r.get("compile_s")),
                         r.get("fingerprint") or "", r.get("identical_to") or "-"])
        lines = format_columns(list(self.headers), body)
        groups = identical_groups(result.rows)
        if groups:
            lines.append("")
            lines.append("cells with identical optimized HLO (each compiled; XLA emitted the same text): " + "; ".join(
                f"{fp}: {', '.join(cells)}" for fp, cells in groups.items()))
        if result.capacity:
            lines.append("")
            lines.append("capacity (device allocation vs HBM; any scheduler/pipelining setting):")
            for p, c in result.capacity.items():
                if c.get("largest_fit") is not None and c.get("smallest_over") is None:
                    # Nothing tried was over HBM: the largest tried is not the limit.
                    lines.append(f"  {p}: every batch tried fits; the largest tried, {c['largest_fit']}, "
                                 f"needs {_gib(c['largest_fit_bytes'])} GiB")
                    continue
                fit = (f"largest batch that fits {c['largest_fit']} ({_gib(c['largest_fit_bytes'])} GiB)"
                       if c.get("largest_fit") is not None else "no batch fits")
                over = (f"smallest that does not {c['smallest_over']} ({_gib(c['smallest_over_bytes'])} GiB"
                        + (f"; largest buffer at peak: {c['smallest_over_top_role']} "
                           f"{_gib(c['smallest_over_top_bytes'])} GiB" if c.get("smallest_over_top_role") else "")
                        + ")" if c.get("smallest_over") is not None else "every batch tried fits")
                lines.append(f"  {p}: {fit}; {over}")
        lines.append("device GiB: arguments + temporaries + outputs not aliased (what HBM must hold); XLA peak GiB "
                     "may count pinned-host buffers (docs/memory.md)")
        lines.append("~ figures are estimates from the simulated step (docs/simulation.md)")
        totals = result.extra.get("summary")
        if totals:
            lines.append(f"{totals['cells']} cells: {totals['compiled']} compiled, {totals['cached']} from the "
                         f"compile cache (cached: yes; compile s is then trace + lower + read), "
                         f"{totals['failed']} failed")
        out.write("\n".join(lines) + "\n")


class SweepJson:
    name = "json"
    extension = ".json"

    def render(self, result: SweepResult, out: TextIO, options: RenderOptions) -> None:
        json.dump({"schema": "hloscope.sweep/3", "workload": result.workload, "target": result.target,
                   "devices": result.devices, "rows": result.rows, "capacity": result.capacity,
                   "identical_hlo": identical_groups(result.rows),
                   **result.extra}, out, indent=2)
        out.write("\n")


class SweepCsv:
    name = "csv"
    extension = ".csv"

    def render(self, result: SweepResult, out: TextIO, options: RenderOptions) -> None:
        w = csv.DictWriter(out, fieldnames=list(result.columns), extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(result.rows)


def identical_groups(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Fingerprint -> the cells (two or more, in row order) whose optimized HLO has it."""
    by: dict[str, list[str]] = {}
    for r in rows:
        if r.get("fingerprint"):
            by.setdefault(r["fingerprint"], []).append(str(r.get("cell") or r["policy"]))
    return {fp: cells for fp, cells in by.items() if len(cells) > 1}


SWEEP_RENDERERS: dict[str, SweepRenderer] = {r.name: r for r in (SweepTable(), SweepJson(), SweepCsv())}
