"""The human-readable table report: one row per transfer, then totals."""

from __future__ import annotations

from hloscope.analysis.report import Report


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


def format_columns(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=False))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip())
    return out


class TableRenderer:
    extension = ".txt"

    def render(self, report: Report) -> str:
        d = report.to_dict()
        s = d["summary"]
        t = report.target
        lines = [
            f"hloscope report: module {d['module']} ({'scheduled' if d['scheduled'] else 'NOT scheduled'}), "
            f"target {t.name} ({t.description}, host link {t.host_link} "
            f"{t.host_link_to_host / 1e9:.0f} GB/s per direction)",
            "",
        ]
        rows = []
        for tr in d["transfers"]:
            window = []
            if tr["overlapped_compute"]:
                window.append(f"{len(tr['overlapped_compute'])} compute")
            if tr["overlapped_collectives"]:
                window.append(f"{len(tr['overlapped_collectives'])} coll")
            if not window:
                window.append("empty" if tr["window_size"] == 0 else f"{tr['window_size']} free ops")
            where = tr["computation"] + (" (crosses iter)" if tr["crosses_iteration"] else "")
            rows.append([
                tr["name"], "D->H" if tr["direction"] == "to_host" else "H->D", tr["op"],
                human_bytes(tr["bytes"]), where, str(tr["executions"]),
                "async" if tr["async"] else "sync", ", ".join(window),
                f"{tr['est_transfer_us']:.1f}", f"{tr['est_hidden_us']:.1f}", tr["verdict"].upper(),
            ])
        if rows:
            lines += format_columns(["transfer", "dir", "op", "bytes", "where", "x/step", "mode", "window",
                             "~xfer us", "~hidden us", "verdict"], rows)
        else:
            lines.append("no host transfers found (nothing lives in memory space "
                         f"S({report.host_space}) and no placement annotations)")
        lines.append("")
        for tr in d["transfers"]:
            src = f" [{tr['source']}]" if tr["source"] else ""
            lines.append(f"  {tr['name']}: {tr['why']}{src}")
        bv = s["by_verdict"]
        lines += [
            "",
            f"totals: {s['transfers']} transfer(s); to host {human_bytes(s['to_host_bytes_per_step'])}/step, "
            f"to device {human_bytes(s['to_device_bytes_per_step'])}/step",
            "verdicts: " + ", ".join(f"{k} {v}" for k, v in bv.items() if v or k != "unscheduled"),
            f"estimated exposed transfer time: {human_us(s['est_exposed_us_per_step'])} per step (estimate)",
        ]
        if s["loops"]:
            lines.append("per computation (bytes per execution):")
            for lp in s["loops"]:
                lines.append(f"  {lp['computation']} x{lp['executions']}: to host "
                             f"{human_bytes(lp['to_host_bytes'])}, to device {human_bytes(lp['to_device_bytes'])}")
        if s["unknown_trip_counts"]:
            lines.append("note: trip count unknown for " + ", ".join(s["unknown_trip_counts"])
                         + " (counted once)")
        lines.append("all *us figures are roofline estimates (docs/cost-model.md), not measurements")
        return "\n".join(lines) + "\n"
