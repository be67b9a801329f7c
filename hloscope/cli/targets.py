"""targets: list the built-in GPU and TPU targets and their cost-model figures."""

from __future__ import annotations

import argparse

from hloscope.render.platforms import platform_texts
from hloscope.targets import BUILTIN_TARGETS


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
        for i, text in enumerate(platform_texts()):
            table = text.target_table(BUILTIN_TARGETS.values())
            widths = [max(len(r[col]) for r in table) for col in range(len(table[0]))]
            if i:
                print()
            for r in table:
                print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        return 0
