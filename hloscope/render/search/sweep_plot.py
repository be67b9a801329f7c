"""A sweep as people read it: throughput and device memory per policy against batch size.

Two panels sharing the per-device batch axis. Left: estimated throughput
(samples per second per device = batch / estimated step time; an estimate from
the simulated step, docs/simulation.md). Right: device allocation (what HBM must
hold) with the target's HBM as a horizontal line and, per policy, the capacity
answer marked: the largest batch that fits (filled marker) and the smallest that
does not (cross). Per policy and batch the plotted cell is the first that
compiled under the first scheduler and pipelining setting in the sweep's order
(the default order puts ``lhs`` / pipelined on first); the capacity marks use the
sweep's capacity answer (any setting). Needs matplotlib (``pip install
'hloscope[plot]'``); strings from the sweep are drawn as plain text (no mathtext).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hloscope.errors import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, HloscopeError
from hloscope.render.search.sweep import SweepResult
from hloscope.targets import get_target

PLOT_FORMATS = (".svg", ".png")
PLOT_MISSING = "--plot needs matplotlib: pip install 'hloscope[plot]'"


def check_plot_path(path: str) -> None:
    """Refuse a plot file name or a missing matplotlib before anything compiles (one line)."""
    suffix = Path(path).suffix.lower()
    if suffix not in PLOT_FORMATS:
        raise HloscopeError(f"--plot {path}: the file name must end in .svg or .png", EXIT_BAD_INPUT)
    try:
        import matplotlib  # noqa: F401  # lazy: matplotlib is an optional extra (plot)
    except ImportError:
        raise HloscopeError(PLOT_MISSING, EXIT_ENVIRONMENT) from None
    parent = Path(path).resolve().parent
    if not parent.is_dir():
        raise HloscopeError(f"--plot {path}: folder {parent} does not exist", EXIT_BAD_INPUT)


def series(result: SweepResult) -> dict[str, list[dict[str, Any]]]:
    """Policy -> one row per batch (ascending): the first compiled row of each batch in the
    sweep's order (its first scheduler / pipelining setting that compiled)."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for r in result.rows:
        if r.get("error") or r.get("batch") is None:
            continue
        out.setdefault(str(r["policy"]), {}).setdefault(int(r["batch"]), r)
    return {p: [by[b] for b in sorted(by)] for p, by in out.items()}


def plain(text: str) -> str:
    """``text`` drawn as typed: Matplotlib reads $...$ as mathtext; a name from the module is data."""
    return text.replace("$", r"\$")


def save_figure(plt: Any, fig: Any, path: str) -> None:
    """Write ``fig`` to ``path`` (--plot) and close it; an unwritable path is one line, exit 2."""
    try:
        # No date in an SVG's metadata: the same search or sweep draws the same file.
        fig.savefig(path, dpi=110, metadata={"Date": None} if path.lower().endswith(".svg") else None)
    except OSError as e:
        raise HloscopeError(f"--plot {path}: cannot write: {e.strerror or e}", EXIT_BAD_INPUT) from None
    finally:
        plt.close(fig)


def write_plot(result: SweepResult, path: str) -> None:
    """Draw ``result`` into ``path`` (.svg or .png)."""
    check_plot_path(path)
    import matplotlib  # lazy: matplotlib is an optional extra (plot)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib is an optional extra (plot)

    plt.rcParams["svg.fonttype"] = "none"  # text stays text in the SVG (searchable, XML-escaped by matplotlib)
    plt.rcParams["svg.hashsalt"] = "hloscope"  # element ids from a fixed salt: the same sweep, the same file
    target = get_target(result.target)
    hbm_gib = target.memory_per_device / 2**30
    data = series(result)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.5, 4.4), constrained_layout=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    cap = result.capacity or {}
    answers: list[tuple[str, str]] = []  # (text, color): the capacity answer, listed under the legend
    for i, (policy, rows) in enumerate(sorted(data.items())):
        color = colors[i % len(colors)]
        batches = [int(r["batch"]) for r in rows]
        rate = [int(r["batch"]) / (float(r["est_step_us"]) * 1e-6) if r.get("est_step_us") else float("nan")
                for r in rows]
        mem = [float(r["device_allocation_bytes"] or 0) / 2**30 for r in rows]
        left.plot(batches, rate, color=color, label=plain(policy))
        # A filled point fits in HBM, a hollow one does not (its throughput is not reachable there).
        for b, x, r in zip(batches, rate, rows, strict=True):
            left.plot([b], [x], marker="o", color=color, markerfacecolor=color if r.get("fits") else "white",
                      linestyle="none")
        right.plot(batches, mem, marker="o", color=color, label=plain(policy))
        c = cap.get(policy) or {}
        if c.get("largest_fit") is not None and c.get("largest_fit_bytes") is not None:
            right.plot([c["largest_fit"]], [c["largest_fit_bytes"] / 2**30], marker="*", markersize=16, color=color,
                       linestyle="none")
        if c.get("largest_fit") is None:
            fit = "no batch fits"
        elif c.get("smallest_over") is None:  # nothing tried was over: the real limit lies beyond
            fit = f"every batch tried fits (largest tried {c['largest_fit']})"
        else:
            fit = f"largest batch that fits {c['largest_fit']}"
        over = (f"; {c['smallest_over']} is over" if c.get("smallest_over") is not None else "")
        if over and c.get("smallest_over_top_role"):
            over += f" (top buffer: {c['smallest_over_top_role']}, {c['smallest_over_top_bytes'] / 2**30:.1f} GiB)"
        if c:
            answers.append((f"{policy}: {fit}{over}", color))
        if c.get("smallest_over") is not None and c.get("smallest_over_bytes") is not None:
            right.plot([c["smallest_over"]], [c["smallest_over_bytes"] / 2**30], marker="X", markersize=11,
                       color=color, linestyle="none")
    for k, (text, color) in enumerate(answers):
        right.text(0.02, 0.70 - 0.06 * k, plain(text), transform=right.transAxes, fontsize=8, color=color)
    right.axhline(hbm_gib, color="black", linestyle="--", linewidth=1)
    right.annotate(plain(f"HBM {hbm_gib:.0f} GiB ({target.name})"), (0.01, hbm_gib),
                   xycoords=("axes fraction", "data"), textcoords="offset points", xytext=(2, 4), fontsize=8)
    ticks = sorted({int(r["batch"]) for rows in data.values() for r in rows})
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("per-device batch")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    left.set_ylabel("estimated samples / s per device")
    left.set_title("estimated throughput (simulated step; hollow: over HBM)", fontsize=10)
    right.set_ylabel("device allocation, GiB")
    right.set_title("device memory vs HBM (star: largest batch that fits; X: smallest over)", fontsize=10)
    fig.suptitle(plain(f"hloscope sweep {result.workload}: {result.target}, {result.devices} devices"), fontsize=11)
    save_figure(plt, fig, path)
