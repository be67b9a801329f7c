"""How fast ``hloscope tui`` opens a large module and how long a cursor move takes.

    python benchmarks/bench_tui.py                 # the 32-layer unrolled Llama step (~7 MB, ~44,000 lines)
    python benchmarks/bench_tui.py --layers 16
    python benchmarks/bench_tui.py --path some/optimized.hlo.txt

The input is the module of benchmarks/bench_parse.py (an unrolled Llama step
compiled deviceless, cached under benchmarks/.cache/). The app runs headless
(Textual's ``run_test``) at 200x50, in this process, from a cold import:

- first screen: process start -> the main screen is mounted and painted
  (summary line "loading ...", the lists arrive later from the worker);
- data on screen: -> the worker delivered the report and the transfer table is filled;
- cursor latency: one key press (down / page down / Enter on a transfer) to the
  app being idle again, in the schedule of the largest computation and in the
  transfer table; median and worst of N presses.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()  # before any heavy import: "process start" for the first-screen figure

import argparse  # noqa: E402
import asyncio  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _fmt(xs: list[float]) -> str:
    ms = sorted(x * 1e3 for x in xs)
    return f"median {statistics.median(ms):.1f} ms, p95 {ms[int(len(ms) * 0.95) - 1]:.1f} ms, max {ms[-1]:.1f} ms"


async def run(path: str, presses: int) -> None:
    from hloscope.tui.app import HloscopeApp
    from hloscope.tui.load import Source
    from hloscope.tui.widgets.schedule import ScheduleView
    from hloscope.tui.widgets.transfers import TransferTable

    app = HloscopeApp(Source(path))
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        first = time.perf_counter() - T0
        while app.loaded is None and app.failure is None:
            await pilot.pause(0.01)
        await pilot.pause()
        data = time.perf_counter() - T0
        if app.failure is not None:
            raise SystemExit(f"load failed: {app.failure}")
        loaded = app.loaded
        report = loaded.report
        biggest = max(report.module.computations.values(), key=lambda c: len(c.instructions))
        print(f"input: {path} ({Path(loaded.file).stat().st_size / 1e6:.1f} MB, "
              f"{report.module.instruction_count()} instructions, {len(report.verdicts)} transfers; "
              f"largest computation {biggest.name}: {len(biggest.instructions)} instructions)")
        print(f"first screen: {first:.2f} s after process start (headless)")
        print(f"data on screen: {data:.2f} s (load + parse + analyze in the worker: {loaded.seconds:.2f} s)")

        async def timed(key: str, n: int) -> list[float]:
            out = []
            for _ in range(n):
                t = time.perf_counter()
                await pilot.press(key)
                out.append(time.perf_counter() - t)
            return out

        print(f"baseline, an unbound key x{presses // 4} (Pilot's own round trip): "
              f"{_fmt(await timed('z', presses // 4))}")
        table = app.screen.query_one(TransferTable)
        table.focus()
        await pilot.pause()
        print(f"transfer table, down x{presses}: {_fmt(await timed('down', presses))}")
        app.main.show_place(biggest.name, None)
        await pilot.pause()
        view = app.screen.query_one(ScheduleView)
        view.focus()
        print(f"schedule ({len(view.rows)} rows), down x{presses}: {_fmt(await timed('down', presses))}")
        print(f"schedule, page down x{presses // 4}: {_fmt(await timed('pagedown', presses // 4))}")
        print(f"schedule, end: {_fmt(await timed('end', 3))}")
        await pilot.press("1")
        print(f"Enter on a transfer (open its window): {_fmt(await timed('enter', 1))}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--path", help="an HLO file or folder instead of the cached benchmark module")
    ap.add_argument("--presses", type=int, default=100)
    args = ap.parse_args()
    if args.path:
        path = args.path
    else:
        from bench_parse import make_input

        path = str(make_input(args.layers))
    asyncio.run(run(path, args.presses))


if __name__ == "__main__":
    main()
