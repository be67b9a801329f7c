"""A tune search drawn: every verified configuration, device memory against the objective.

One panel: x the device allocation (GiB), y the simulated step (ms; with ``--objective
throughput`` tokens per second per device). Probes are squares, proposals circles, hollow
when a limit is broken; the verified frontier is a line, the best a star; the device limit
a dashed vertical line (named under the axis when it lies far beyond the points). Needs
matplotlib (``pip install 'hloscope[plot]'``); names are drawn as plain text (no mathtext).
"""

from __future__ import annotations

from hloscope.analysis.tune import Objective, TuneResult, Verified
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.render.sweep_plot import check_plot_path
from hloscope.render.tune_words import STOPPED


def _plain(text: str) -> str:
    return text.replace("$", r"\$")


def write_plot(result: TuneResult, path: str) -> None:
    """Draw ``result`` into ``path`` (.svg or .png)."""
    check_plot_path(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"
    plt.rcParams["svg.hashsalt"] = "hloscope"
    spec = result.spec
    throughput = spec.goal.objective is Objective.THROUGHPUT

    def y(v: Verified) -> float:
        return spec.goal.throughput(v.config.batch, v.step_us) if throughput else v.step_us / 1e3

    ok = [v for v in result.verified if v.ok]
    top = max((v.device_bytes for v in ok), default=0)
    unit, scale = ("GiB", 2**30) if top >= 2**30 else ("MiB", 2**20)

    def x(v: Verified) -> float:
        return v.device_bytes / scale

    fig, ax = plt.subplots(figsize=(8.5, 5.0), constrained_layout=True)
    for v in ok:
        color = "tab:blue" if v.probe else "tab:orange"
        ax.plot([x(v)], [y(v)], marker="s" if v.probe else "o", color=color, linestyle="none",
                markerfacecolor=color if v.meets else "white")
        if v.probe:
            words = f"all {v.probe}" if v.probe != "configured" else "as configured"
            ax.annotate(_plain(words), (x(v), y(v)), textcoords="offset points",
                        xytext=(5, 4), fontsize=8)
    front = list(result.frontier)
    if front:
        ax.step([x(v) for v in front], [y(v) for v in front], where="post", color="tab:green",
                label="verified frontier")
    if result.best is not None:
        b = result.best
        ax.plot([x(b)], [y(b)], marker="*", markersize=16, color="tab:red", linestyle="none",
                label=_plain("best: " + " ".join(f"{n}={c}" for n, c in spec.space.as_dict(b.config).items())))
    limit = spec.limits.device_bytes
    if limit <= 1.25 * top:  # drawn when it is near the points; else named in the axis label
        ax.axvline(limit / scale, color="black", linestyle="--", linewidth=1)
        ax.annotate(_plain(f"limit {limit / scale:.1f} {unit}"), (limit / scale, 0.02),
                    xycoords=("data", "axes fraction"), textcoords="offset points", xytext=(-4, 2), fontsize=8,
                    ha="right")
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
    ax.set_title(_plain(f"{len(result.verified)} compiles; {STOPPED.get(result.stopped, result.stopped)}{model}"),
                 fontsize=9)
    fig.suptitle(_plain(f"hloscope tune {spec.workload}: {spec.target}, {spec.devices} devices"), fontsize=11)
    try:
        fig.savefig(path, dpi=110, metadata={"Date": None} if path.lower().endswith(".svg") else None)
    except OSError as e:
        raise HloscopeError(f"--plot {path}: cannot write: {e.strerror or e}", EXIT_BAD_INPUT) from None
    finally:
        plt.close(fig)
