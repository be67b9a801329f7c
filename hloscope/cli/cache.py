"""cache: show (info) or empty (clear) the compile cache.

The cache holds deviceless compiles keyed by what decides their output
(docs/sweep.md); ``HLOSCOPE_CACHE_DIR`` moves it, ``HLOSCOPE_CACHE_MAX_BYTES`` caps it.
"""

from __future__ import annotations

import argparse
import json
import sys

from hloscope.compile.step.cache import CompileCache, enabled


class CacheCommand:
    """cache: show (info) or empty (clear) the compile cache of deviceless compiles.

    info: where it is, how many entries, their size, the cap (least recently used
    entries are removed past it). clear: remove every entry. HLOSCOPE_CACHE_DIR
    moves the cache (default ~/.cache/hloscope), HLOSCOPE_CACHE_MAX_BYTES caps it,
    HLOSCOPE_NO_CACHE=1 (or a command's --no-cache) bypasses it.
    """

    def prepare_parser(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("action", choices=("info", "clear"), help="info: show the cache; clear: empty it")
        p.add_argument("--json", action="store_true", help="info as JSON")

    def run(self, args: argparse.Namespace) -> int:
        cache = CompileCache()
        if args.action == "clear":
            n = cache.clear()
            print(f"removed {n} cache entr{'y' if n == 1 else 'ies'} from {cache.root}")
            return 0
        entries = cache.entries()
        total = sum(e.size_bytes for e in entries)
        targets = sorted({e.target for e in entries})
        info: dict[str, object] = {
                "path": str(cache.root), "enabled": enabled(), "entries": len(entries), "bytes": total,
                "cap_bytes": cache.cap_bytes,
                "compile_seconds_held": round(sum(e.compile_seconds for e in entries), 2),
                "targets": targets}
        if args.json:
            json.dump(info, sys.stdout, indent=2)
            sys.stdout.write("\n")
            return 0
        print(f"compile cache: {cache.root}{'' if info['enabled'] else ' (off: HLOSCOPE_NO_CACHE is set)'}")
        print(f"  {len(entries)} entr{'y' if len(entries) == 1 else 'ies'}, {total / 2**20:.1f} MiB of "
              f"{cache.cap_bytes / 2**30:.1f} GiB cap (least recently used removed past it)")
        if entries:
            print(f"  XLA compile time they hold: {info['compile_seconds_held']:.1f} s; targets: "
                  f"{', '.join(targets)}")
        return 0
