"""targets: list the built-in GPU and TPU targets and their cost-model figures."""

from __future__ import annotations

import argparse

from hloscope.targets import BUILTIN_TARGETS, GpuTarget, TpuTarget
from hloscope.vocab import Direction


class TargetsCommand:
    """targets: list the built-in GPU and TPU targets and their cost-model figures.

    Memory in GiB and links in GB/s, as the reports print them. Host links show
    peak and achieved figures per direction (device to host / host to device)
    and how many GPUs share one link; the per-GPU figure the cost model uses
    by default is the achieved one divided among them.
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        pass

    def run(self, args: argparse.Namespace) -> int:
        def gbs(x: float | None) -> str:
            return "-" if x is None else f"{x / 1e9:g}"

        rows = [("name", "GPU", "cc", "HBM GiB", "HBM TB/s", "bf16 TF/s", "host link",
                 "peak GB/s D->H/H->D", "achieved GB/s D->H/H->D", "GPUs/link", "per GPU GB/s D->H/H->D",
                 "host GiB/GPU")]
        tpu_rows = [("name", "TPU", "topology", "cores/chip", "HBM GiB", "HBM TB/s", "bf16 TF/s", "ICI GB/s",
                     "host link", "peak GB/s D->H/H->D", "achieved GB/s D->H/H->D")]
        for t in BUILTIN_TARGETS.values():
            links = f"{gbs(t.host_link_to_host)}/{gbs(t.host_link_to_device)}"
            achieved = f"{gbs(t.host_link_achieved_to_host)}/{gbs(t.host_link_achieved_to_device)}"
            if isinstance(t, TpuTarget):
                tpu_rows.append((
                    t.name, t.description, f"{t.topology_prefix}:", str(t.cores_per_chip),
                    f"{t.device_memory_size / 2**30:.1f}", f"{t.hbm_bandwidth / 1e12:.2f}",
                    f"{t.peak_bf16_flops / 1e12:.0f}", f"{gbs(t.interconnect_bandwidth)}", t.host_link, links,
                    achieved))
                continue
            if not isinstance(t, GpuTarget):
                continue
            rows.append((
                t.name, t.description, f"{t.compute_capability[0]}.{t.compute_capability[1]}",
                f"{t.device_memory_size / 2**30:.1f}", f"{t.hbm_bandwidth / 1e12:.2f}",
                f"{t.peak_bf16_flops / 1e12:.0f}", t.host_link, links, achieved,
                str(t.host_link_gpus),
                f"{gbs(t.host_link_bandwidth(Direction.TO_HOST))}/{gbs(t.host_link_bandwidth(Direction.TO_DEVICE))}",
                f"{t.host_memory_per_gpu / 2**30:.0f}" if t.host_memory_per_gpu else "-",
            ))
        for table in (rows, tpu_rows):
            widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
            if table is tpu_rows:
                print()
            for r in table:
                print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        return 0
