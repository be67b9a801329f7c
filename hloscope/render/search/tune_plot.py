"""A tune search drawn: every verified configuration, device memory against the objective.

One panel: x the device allocation (GiB), y the simulated step (ms; with ``--objective
throughput`` tokens per second per device). Probes are squares, proposals circles, hollow
when a limit is broken; the verified frontier is a line, the best a star; the device limit
a dashed vertical line (named under the axis when it lies far beyond the points); a point far
beyond the limit is an arrow at the right edge with its figure. Needs
matplotlib (``pip install 'hloscope[plot]'``); names are drawn as plain text (no mathtext).
"""

from __future__ import annotations

import textwrap

from hloscope.render.search.sweep_plot import check_plot_path, plain, save_figure
from hloscope.render.search.tune_words import STOPPED
from hloscope.search.tune import UNPIPELINED_PROBE, Objective, TuneResult, Verified


def write_plot(result: TuneResult, path: str) -> None:
    """Draw ``result`` into ``path`` (.svg or .png)."""
    check_plot_path(path)
    import matplotlib  # lazy: matplotlib is an optional extra (plot)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib is an optional extra (plot)

    plt.rcParams["svg.fonttype"] = "none"
    plt.rcParams["svg.hashsalt"] = "hloscope"
    spec = result.spec
    throughput = spec.goal.objective is Objective.THROUGHPUT

    def y(v: Verified) -> float:
        return spec.goal.throughput(v.config.batch, v.step_us) if throughput else v.step_us / 1e3

    ok = [v for v in result.verified if v.ok]
    top = max((v.device_bytes for v in ok), default=0)
    unit, scale = ("GiB", 2**30) if top >= 2**30 else ("MiB", 2**20)

    # A point far beyond the limit (every name on device) would squeeze the rest: it is drawn at
    # the right edge as an arrow with its figure.
    edge = 1.3 * spec.limits.device_bytes if top > 1.5 * spec.limits.device_bytes else None

    def x(v: Verified) -> float:
        return min(v.device_bytes, edge or v.device_bytes) / scale

    fig, ax = plt.subplots(figsize=(8.5, 5.0), constrained_layout=True)
    for v in ok:
        color = "tab:blue" if v.probe else "tab:orange"
        beyond = edge is not None and v.device_bytes > edge
        ax.plot([x(v)], [y(v)], marker=">" if beyond else "s" if v.probe else "o", color=color, linestyle="none",
                markerfacecolor=color if v.meets else "white")
        words = ({"configured": "as configured", UNPIPELINED_PROBE: "all offload, unpipelined"}.get(v.probe)
                 or f"all {v.probe}") if v.probe else ""
        if beyond:
            words = f"{words} {v.device_bytes / scale:.0f} {unit}".strip()
        if words:
            ax.annotate(plain(words), (x(v), y(v)), textcoords="offset points", xytext=(-5 if beyond else 5, 4),
                        fontsize=8, ha="right" if beyond else "left")
    front = list(result.frontier)
    if front:
        ax.step([x(v) for v in front], [y(v) for v in front], where="post", color="tab:green",
                label="verified frontier")
    if result.best is not None:
        b = result.best
        ax.plot([x(b)], [y(b)], marker="*", markersize=16, color="tab:red", linestyle="none", label="best")
        choices = spec.space.as_dict(b.config)
        kept = [n for n, c in choices.items() if c == "device"]
        moved = [n for n, c in choices.items() if c == "offload"]
        words = (f"best: on device {', '.join(kept) or 'none'}; offloaded {', '.join(moved) or 'none'}; "
                 "the rest recomputed" + (f" (batch {b.config.batch})" if b.config.batch is not None else "")
                 + ("; pipelined host offloading off" if b.config.pipelined is False else ""))
        fig.supxlabel(plain("\n".join(textwrap.wrap(words, 110))), fontsize=8)
    limit = spec.limits.device_bytes
    if limit <= 1.25 * top:  # drawn when it is near the points; else named in the axis label
        ax.axvline(limit / scale, color="black", linestyle="--", linewidth=1)
        ax.annotate(plain(f"limit {limit / scale:.1f} {unit}"), (limit / scale, 0.98),
                    xycoords=("data", "axes fraction"), textcoords="offset points", xytext=(4, -2), fontsize=8,
                    ha="left", va="top")
    ax.plot([], [], marker="s", color="tab:blue", linestyle="none", label="probe")
    ax.plot([], [], marker="o", color="tab:orange", linestyle="none", label="proposal (hollow: over a limit)")
    ax.set_xlabel(f"device allocation, {unit}" + ("" if limit <= 1.25 * top else
                                                  f" (the limit, {limit / 2**30:.1f} GiB, is far to the right)"))
    ax.set_ylabel("estimated tokens / s per device" if throughput else "estimated step, ms (simulated)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    err = result.error
    model = (f"; model step error {err.step_mean:.1%} mean, {err.step_max:.1%} max over {err.count} proposals"
             if err.count else "")
    title = f"{len(result.verified)} compiles; {STOPPED.get(result.stopped, result.stopped)}{model}"
    ax.set_title(plain("\n".join(textwrap.wrap(title, 100))), fontsize=9)
    fig.suptitle(plain(f"hloscope tune {spec.workload}: {spec.request.target}, {spec.request.devices} devices"),
                 fontsize=11)
    save_figure(plt, fig, path)
