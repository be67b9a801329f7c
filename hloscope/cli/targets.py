"""targets: list the built-in GPU targets and their cost-model figures."""

from __future__ import annotations

import argparse


class TargetsCommand:
    """targets: list the built-in GPU targets and their cost-model figures.

    Memory in GiB and links in GB/s, as the reports print them. Host links show
    peak and achieved figures per direction (device to host / host to device)
    and how many GPUs share one link; the per-GPU figure the cost model uses
    by default is the achieved one divided among them.
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        pass

    def run(self, args: argparse.Namespace) -> int:
        from hloscope.targets import BUILTIN_TARGETS
        from hloscope.vocab import Direction

        def gbs(x: float | None) -> str:
            return "-" if x is None else f"{x / 1e9:g}"

        rows = [("name", "GPU", "cc", "HBM GiB", "HBM TB/s", "bf16 TF/s", "host link",
                 "peak GB/s D->H/H->D", "achieved GB/s D->H/H->D", "GPUs/link", "per GPU GB/s D->H/H->D",
                 "host GiB/GPU")]
        for t in BUILTIN_TARGETS.values():
            rows.append((
                t.name, t.description, f"{t.compute_capability[0]}.{t.compute_capability[1]}",
                f"{t.device_memory_size / 2**30:.1f}", f"{t.hbm_bandwidth / 1e12:.2f}",
                f"{t.peak_bf16_flops / 1e12:.0f}", t.host_link,
                f"{gbs(t.host_link_to_host)}/{gbs(t.host_link_to_device)}",
                f"{gbs(t.host_link_achieved_to_host)}/{gbs(t.host_link_achieved_to_device)}",
                str(t.host_link_gpus),
                f"{gbs(t.host_link_bandwidth(Direction.TO_HOST))}/{gbs(t.host_link_bandwidth(Direction.TO_DEVICE))}",
                f"{t.host_memory_per_gpu / 2**30:.0f}" if t.host_memory_per_gpu else "-",
            ))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        return 0
