"""How fast ``hloscope tui`` opens a large module and how long a cursor move takes.

    python benchmarks/bench_tui.py                  # in a real terminal (tmux), then headless; 32-layer module
    python benchmarks/bench_tui.py --terminal-only  # only the tmux figures
    python benchmarks/bench_tui.py --headless-only  # only Textual's run_test figures
    python benchmarks/bench_tui.py --layers 16
    python benchmarks/bench_tui.py --path some/optimized.hlo.txt
    python benchmarks/bench_tui.py --before /path/to/other/checkout  # first screen with verdicts, that
                                                    # checkout's hloscope against this one's, quiet and loaded

The input is the module of benchmarks/bench_parse.py (an unrolled Llama step
compiled deviceless, cached under benchmarks/.cache/). Two measurements:

- **terminal** (what a person sees): ``python -m hloscope.cli tui PATH`` runs in a
  detached tmux pane of 200x50; this script polls ``tmux capture-pane`` (each
  poll is a few ms: that is the resolution). *First screen*: process start ->
  the pane shows the loading screen ("loading ..."). *Data*: -> the transfer
  table is on screen (its title, the loading screen gone). *First screen with
  verdicts*: -> a row of the table shows a transfer's direction and its verdict
  (the figure issue #28 asks to be under 0.5 s). *Cursor latency*: a key sent with ``tmux send-keys`` ->
  the pane's text changes (the cursor row moved), for Down in the transfer
  table, Down and PageDown in the schedule of the entry computation; keys are
  sent 150 ms apart, like a person's.
- **headless** (Textual's ``run_test`` at 200x50, in this process): the same
  first-screen and data figures from this script's start, and the time of one
  Pilot key press to idle (Pilot's own round trip included: compare with the
  unbound-key baseline), in the largest computation's schedule too.

``--before DIR``: only the first screen with verdicts, in tmux, of the checkout at DIR
("before") and of this one ("after"), alternating, ``--runs`` times each, first on the machine as
it is ("quiet") and then with one busy process per core beside it ("loaded").

Import cost is printed first (``-X importtime`` sums, fresh interpreters). The
load average is printed before and after: the figures move with it.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()  # before any heavy import: "process start" for the headless first-screen figure

import argparse  # noqa: E402
import asyncio  # noqa: E402
import contextlib  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

SIZE = (200, 50)


def _fmt(xs: list[float]) -> str:
    ms = sorted(x * 1e3 for x in xs)
    p95 = ms[max(0, round(len(ms) * 0.95) - 1)]
    return f"median {statistics.median(ms):.1f} ms, p95 {p95:.1f} ms, max {ms[-1]:.1f} ms (n={len(ms)})"


def _load() -> str:
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


# -- import cost ------------------------------------------------------------------------------------


def import_ms(module: str) -> float:
    """Cumulative import time of ``module`` in a fresh interpreter (``-X importtime``), ms."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True,
                         text=True, check=True, cwd=ROOT).stderr
    for line in reversed(out.splitlines()):
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() == module:
            return int(parts[1]) / 1e3
    return float("nan")


def imports() -> None:
    mods = ("hloscope", "hloscope.cli.tui", "textual.app", "hloscope.tui.app", "hloscope.tui.screens.main")
    print("imports (cumulative, fresh interpreter): "
          + ", ".join(f"{m} {import_ms(m):.0f} ms" for m in mods))


# -- in a real terminal (tmux) ----------------------------------------------------------------------


_ANSI_RE = re.compile(r"\x1b\[[0-9;:?]*[A-Za-z]")
#: A transfer table row: a verdict word as a cell of its own, then (cells apart) its direction, in the
#: order of ``tui.widgets.transfers.COLUMNS``. (The direction came first once; with the verdict moved
#: to the second column that pattern matched only the detail pane's "why" line beside a row, drawn
#: after the row: the figure was the detail pane's.)
_VERDICT_ROW_RE = re.compile(r"\s(?:sync|exposed|partial|hidden|unscheduled)\s.*\s(?:H→D|D→H)\s")


#: A figure the background worker has not measured yet (``tui.widgets.transfers.PENDING``).
_PENDING = "…"


def verdict_on_screen(screen: str) -> bool:
    """The transfer table is drawn with at least one row's verdict (not the loading screen)."""
    text = _ANSI_RE.sub("", screen)
    return "loading" not in text and "transfers " in text and _VERDICT_ROW_RE.search(text) is not None


class Pane:
    def __init__(self, name: str) -> None:
        self.name = name

    def capture(self) -> str:
        return subprocess.run(["tmux", "capture-pane", "-p", "-e", "-t", self.name], capture_output=True,
                              text=True).stdout

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def wait_for(self, ok: Callable[[str], bool], timeout_s: float) -> tuple[float, str]:
        end = time.perf_counter() + timeout_s
        while time.perf_counter() < end:
            text = self.capture()
            if ok(text):
                return time.perf_counter(), text
            time.sleep(0.002)
        raise SystemExit(f"tmux pane {self.name}: timed out; last screen:\n{self.capture()}")

    def latency(self, key: str, n: int) -> list[float]:
        out = []
        for _ in range(n):
            before = self.capture()
            t = time.perf_counter()
            self.keys(key)
            done, _ = self.wait_for(lambda s: s != before, 10)
            out.append(done - t)
            time.sleep(0.15)
        return out


def _session(name: str, cmd: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", str(SIZE[0]), "-y", str(SIZE[1]), cmd],
                   check=True)
    return t0


def _first_frame_s(kind: str, cmd: str) -> float:
    """tmux start of ``cmd`` -> the pane shows "loading"."""
    name = f"hloscope-bench-{kind}-{os.getpid()}"
    t0 = _session(name, cmd)
    try:
        shown, _ = Pane(name).wait_for(lambda s: "loading" in s, 30)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    return shown - t0


def baseline_s() -> float:
    """tmux session + shell + a bare interpreter printing one word: what every first-screen figure includes."""
    return _first_frame_s("base", f"exec {sys.executable} -c \"print('loading'); import time; time.sleep(5)\"")


_BARE_APP = ("from textual.app import App\nfrom textual.widgets import Static\n"
             "class A(App):\n    def compose(self):\n        yield Static('loading')\nA().run()\n")


def bare_textual_s() -> float:
    """tmux start -> a one-Static Textual app's first frame: Textual's own floor for any first screen."""
    return _first_frame_s("bare", f"exec {sys.executable} -c \"{_BARE_APP}\"")


_LOAD_PROBE = """
import sys, time
c0 = time.process_time()
import hloscope.analysis.report, hloscope.artifact, hloscope.tui.load
c1 = time.process_time()
from hloscope.tui.load import Source, load_source
load_source(Source(sys.argv[1]))
c2 = time.process_time()
print(f"{c1 - c0:.4f} {c2 - c1:.4f}")
"""


def load_cpu(path: str) -> tuple[float, float]:
    """Process CPU of the load worker's work in a fresh interpreter: (imports, read + parse + analyze + layout)."""
    out = subprocess.run([sys.executable, "-c", _LOAD_PROBE, path], capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout.split()
    return float(out[0]), float(out[1])


def floor(path: str) -> None:
    """What no change to the TUI removes: Textual's first frame and the load's own CPU, each the best of 3."""
    loads = [load_cpu(path) for _ in range(3)]
    imp, work = min(x[0] for x in loads), min(x[1] for x in loads)
    print(f"floor: the analysis' imports {imp * 1e3:.0f} ms + read, parse, analyze {work * 1e3:.0f} ms of CPU "
          f"(fresh interpreter, best of 3)")


def terminal(path: str, presses: int) -> None:
    if shutil.which("tmux") is None:
        print("terminal: skipped (tmux not installed)")
        return
    # one session kept open throughout, so that the tmux server's start is in no figure (and
    # the server does not exit between sessions)
    hold = f"hloscope-bench-hold-{os.getpid()}"
    _session(hold, "sleep 3600")
    try:
        _terminal(path, presses)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", hold], capture_output=True)


def _terminal(path: str, presses: int) -> None:
    base = min(baseline_s() for _ in range(3))
    bare = min(bare_textual_s() for _ in range(3))
    print(f"floor: a one-Static Textual app's first frame {bare:.2f} s after tmux started it (best of 3)")
    name = f"hloscope-bench-{os.getpid()}"
    pane = Pane(name)
    t0 = _session(name, f"cd {ROOT} && exec {sys.executable} -m hloscope.cli tui {path}")
    try:
        first, _ = pane.wait_for(lambda s: "loading" in s, 60)
        seen: dict[str, float] = {}

        def shown(screen: str) -> bool:  # both figures from the same captures
            now = time.perf_counter()
            if "transfers " in screen and "loading" not in screen:
                seen.setdefault("data", now)
            if verdict_on_screen(screen):
                seen.setdefault("verdicts", now)
            return "verdicts" in seen

        pane.wait_for(shown, 600)
        data, verdicts = seen.get("data", seen["verdicts"]), seen["verdicts"]
        print(f"terminal: first screen {first - t0:.2f} s after tmux started the command ({first - t0 - base:.2f} s "
              f"more than a bare interpreter printing a word: {base:.2f} s); data on screen {data - t0:.2f} s")
        print(f"terminal: first screen with verdicts {verdicts - t0:.2f} s")
        # keys while the background worker measures the margins (it starts after the first screen)
        print(f"terminal: transfer table, Down, right after the first screen: {_fmt(pane.latency('Down', 8))}")
        pane.keys("m")  # the cost columns: "…" in the margin cells until the worker is done
        costs, _ = pane.wait_for(lambda s: "~marginal" in s and _PENDING not in _ANSI_RE.sub("", s), 600)
        print(f"terminal: margins and marginal costs on screen {costs - t0:.2f} s")
        pane.keys("m")
        time.sleep(0.5)
        print(f"terminal: transfer table, Down: {_fmt(pane.latency('Down', presses))}")
        pane.keys("2")
        time.sleep(0.5)
        print(f"terminal: schedule (entry computation), Down: {_fmt(pane.latency('Down', presses))}")
        print(f"terminal: schedule, PageDown: {_fmt(pane.latency('PageDown', max(5, presses // 4)))}")
        pane.keys("q")
        time.sleep(0.3)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


def first_verdicts_s(root: Path, path: str, options: str = "", env: str = "") -> float:
    """tmux start of ``hloscope tui PATH`` run from checkout ``root`` -> a row's verdict on screen.
    ``options``: more of the command line (``--target gb200``); ``env``: ``NAME=VALUE ...`` for it."""
    name = f"hloscope-bench-ba-{os.getpid()}"
    t0 = _session(name, f"cd {root} && exec env {env} {sys.executable} -m hloscope.cli tui {path} {options}")
    try:
        shown, _ = Pane(name).wait_for(verdict_on_screen, 600)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    return shown - t0


@contextlib.contextmanager
def busy(n: int) -> Iterator[None]:
    """``n`` processes spinning on a core each for the block (the "loaded" machine; 0: none), and a tmux
    server held the while, so that its start is in no figure."""
    hold = f"hloscope-bench-hold-{os.getpid()}-{n}"
    _session(hold, "sleep 3600")
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in burners:
            p.kill()
            p.wait()
        subprocess.run(["tmux", "kill-session", "-t", hold], capture_output=True)


def before_after(before: Path, path: str, runs: int) -> None:
    if shutil.which("tmux") is None:
        raise SystemExit("--before: needs tmux")
    for label, n in (("quiet", 0), ("loaded", os.cpu_count() or 1)):
        with busy(n):
            time.sleep(0.5 if n else 0)
            got: dict[str, list[float]] = {"before": [], "after": []}
            for _ in range(runs):
                for which, root in (("before", before), ("after", ROOT)):
                    got[which].append(first_verdicts_s(root, path))
            what = f"{label} ({_load()}" + (f", {n} busy processes beside it)" if n else ")")
            print(f"first screen with verdicts, {what}: " + "; ".join(
                f"{k} median {statistics.median(v):.2f} s (min {min(v):.2f}, max {max(v):.2f}, n={len(v)})"
                for k, v in got.items()))


# -- headless (Textual's run_test) ------------------------------------------------------------------


async def headless(path: str, presses: int) -> None:
    from hloscope.tui.app import HloscopeApp
    from hloscope.tui.load import Source
    from hloscope.tui.screens.loading import LoadingScreen

    app = HloscopeApp(Source(path))
    async with app.run_test(size=SIZE) as pilot:
        while not isinstance(app.screen, LoadingScreen):
            await asyncio.sleep(0.001)
        first = time.perf_counter() - T0
        while app.loaded is None and app.failure is None:
            await pilot.pause(0.01)
        await pilot.pause()
        data = time.perf_counter() - T0
        if app.failure is not None or app.main is None:
            raise SystemExit(f"load failed: {app.failure}")
        from hloscope.tui.widgets.schedule import ScheduleView
        from hloscope.tui.widgets.transfers import TransferTable

        loaded = app.loaded
        assert loaded is not None
        report = loaded.report
        biggest = max(report.module.computations.values(), key=lambda c: len(c.instructions))
        print(f"input: {path} ({Path(loaded.file).stat().st_size / 1e6:.1f} MB, "
              f"{report.module.instruction_count()} instructions, {len(report.verdicts)} transfers; "
              f"largest computation {biggest.name}: {len(biggest.instructions)} instructions)")
        print(f"headless: loading screen mounted {first:.2f} s after this script started")
        print(f"headless: data on screen {data:.2f} s (read + parse + analyze in the worker: {loaded.seconds:.2f} s)")
        while app.search_index is None:
            await pilot.pause(0.05)

        async def timed(key: str, n: int) -> list[float]:
            out = []
            for _ in range(n):
                t = time.perf_counter()
                await pilot.press(key)
                out.append(time.perf_counter() - t)
            return out

        print(f"headless: an unbound key (Pilot's own round trip): {_fmt(await timed('z', presses // 4))}")
        table = app.screen.query_one(TransferTable)
        table.focus()
        await pilot.pause()
        print(f"headless: transfer table, down: {_fmt(await timed('down', presses))}")
        app.main.show_place(biggest.name, None)
        await pilot.pause()
        view = app.screen.query_one(ScheduleView)
        view.focus()
        print(f"headless: schedule ({len(view.rows)} rows), down: {_fmt(await timed('down', presses))}")
        print(f"headless: schedule, page down: {_fmt(await timed('pagedown', presses // 4))}")
        print(f"headless: schedule, end: {_fmt(await timed('end', 3))}")
        await pilot.press("1")
        print(f"headless: Enter on a transfer (open its window): {_fmt(await timed('enter', 1))}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--path", help="an HLO file or folder instead of the cached benchmark module")
    ap.add_argument("--presses", type=int, default=40)
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--terminal-only", action="store_true")
    which.add_argument("--headless-only", action="store_true")
    which.add_argument("--before", metavar="DIR", help="a checkout to compare with (see above)")
    ap.add_argument("--runs", type=int, default=5, help="with --before: runs of each checkout, quiet and loaded")
    args = ap.parse_args()
    if args.headless_only and "hloscope" in sys.modules:
        raise SystemExit("--headless-only: hloscope already imported; the first-screen figure would be warm")
    if args.path:
        path = str(Path(args.path).resolve())
    else:
        from bench_parse import make_input

        path = str(make_input(args.layers))
    if args.before:
        print(f"input: {path}; before: {Path(args.before).resolve()}; after: {ROOT}")
        before_after(Path(args.before).resolve(), path, args.runs)
        return
    if not args.headless_only:
        print(_load())
        imports()
        floor(path)
        terminal(path, args.presses)
    if args.headless_only:
        asyncio.run(headless(path, args.presses))
    elif not args.terminal_only:  # a fresh interpreter: cold imports for the first-screen figure
        subprocess.run([sys.executable, __file__, "--headless-only", "--path", path, "--presses",
                        str(args.presses)], check=True)
    if not args.headless_only:
        print(_load())


if __name__ == "__main__":
    main()
