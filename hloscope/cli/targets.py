"""targets: list the built-in GPU targets and their cost-model figures."""

from __future__ import annotations

import argparse


class TargetsCommand:
    """targets: list the built-in GPU targets and their cost-model figures."""

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        pass

    def run(self, args: argparse.Namespace) -> int:
        from hloscope.targets import BUILTIN_TARGETS

        print(f"{'name':<10} {'GPU':<24} {'sm':<5} {'HBM':>8} {'HBM TB/s':>9} {'bf16 TF/s':>10} "
              f"{'host link':<15} {'GB/s/dir':>8}")
        for t in BUILTIN_TARGETS.values():
            print(f"{t.name:<10} {t.description:<24} {t.compute_capability[0]}.{t.compute_capability[1]:<3} "
                  f"{t.device_memory_size / 1e9:>6.0f}GB {t.hbm_bandwidth / 1e12:>9.2f} "
                  f"{t.peak_bf16_flops / 1e12:>10.0f} {t.host_link:<15} {t.host_link_to_host / 1e9:>8.0f}")
        return 0
