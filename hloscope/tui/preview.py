"""The transfer table's first rows, from a child process, while the app starts.

``hloscope tui FILE`` starts a child before it imports Textual (:func:`start_preview`): the child reads,
parses and analyses the file as the app's load worker does (the core analysis: verdicts, no
margins) and sends back the transfer table's cells, a few kB; it runs on another core while the
parent imports Textual and draws its loading screen, which then shows these rows with their verdicts
(``LoadingScreen.show_preview``). The parent's own load goes on as before and replaces the screen
with the main one: the child's report is never sent (pickling the report took 0.33 s and loading
it 0.32 s on the 32-layer module, docs/benchmarks.md). ``tui.format.row_words`` makes the cells of
both tables, so the first rows read as the main table's.

None for a compile request, with ``HLOSCOPE_TUI_PREVIEW=0``, or on one core (:func:`has_another_core`;
``HLOSCOPE_TUI_PREVIEW=1`` starts it anyway). This module imports neither Textual
nor the analysis at its top (the loading screen imports it): the child imports the analysis.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hloscope.analysis.report import Report
    from hloscope.tui.load import Source

#: Set to 0 to open without the child's first rows.
PREVIEW_ENV = "HLOSCOPE_TUI_PREVIEW"
#: The transfer table's default columns (``widgets.transfers``; ``tui.format.row_words`` makes their cells).
#: The verdict right after the name: the column the table is for, whole at any width (at 110-150
#: columns, sixth of eight, it was cut to one letter or scrolled out of view); then the time it
#: costs, so that an 80-column terminal shows name, verdict and exposed time (seventh, it was
#: off screen there, and ``m`` seemed to do nothing).
COLUMNS = ("transfer", "verdict", "~exposed/step", "checkpoint", "dir", "bytes", "x/step", "source")


@dataclass(frozen=True)
class PreviewRows:
    """What the child sends: the rows in schedule order (cells of :data:`COLUMNS`), each verdict's
    style, and the verdict counts' line."""

    rows: tuple[tuple[str, ...], ...]
    styles: tuple[str, ...]
    verdicts: str


def preview_rows(report: Report) -> PreviewRows:
    from hloscope.tui.format import VERDICT_STYLE, row_words  # lazy: the child's; tui.format loads the analysis

    counts: dict[str, int] = {}
    for v in report.verdicts:
        counts[v.verdict.value] = counts.get(v.verdict.value, 0) + 1
    line = "verdicts: " + (", ".join(f"{k} {n}" for k, n in counts.items()) or "no host transfers")
    return PreviewRows(tuple(row_words(report, v) for v in report.verdicts),
                       tuple(VERDICT_STYLE[v.verdict] for v in report.verdicts), line)


class Preview:
    """The child process and its output (:func:`start_preview`)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process: subprocess.Popen[bytes] | None = process

    def wait(self) -> PreviewRows | None:
        """Block until the child has sent its rows (None: it failed, or was stopped); reaps it. The
        read releases the interpreter lock: a worker thread waits here."""
        process = self.process
        if process is None:
            return None
        assert process.stdout is not None
        try:
            data = process.stdout.read()
        except (OSError, ValueError):  # closed by close() meanwhile
            data = b""
        self.close()
        try:
            rows, styles, verdicts = pickle.loads(data)  # plain values: the child's classes live in __main__
        except Exception:  # nothing sent (the child failed), or a child stopped mid-write
            return None
        return PreviewRows(rows, styles, verdicts)

    def close(self) -> None:
        """Stop the child if it still runs, and reap it (idempotent)."""
        process, self.process = self.process, None
        if process is not None:
            process.kill()
            process.wait()
            if process.stdout is not None:
                process.stdout.close()


def has_another_core(cpus: int | None = None) -> bool:
    """Whether there is another core for the child: two or more. Whatever the load: since the app's
    load waits for the child's rows (``tui.app``), the rows came sooner with the child on a quiet 2-core
    machine (0.70 s against 0.86 s without it), with two busy processes beside it (1.01 s against
    1.15 s) and no later with six (0.99 s against 0.98 s; docs/tui.md)."""
    if cpus is None:
        cpus = os.cpu_count() or 1
    return cpus >= 2


def start_preview(source: Source) -> Preview | None:
    """Start a child process that sends :func:`preview_rows` of ``source`` (a file or folder); None
    for a compile request, a measured profile beside it, with HLOSCOPE_TUI_PREVIEW=0, or on one core
    (HLOSCOPE_TUI_PREVIEW=1: always). A process,
    not a fork (tests/unit/test_no_fork.py): at this point the CLI has imported none of the analysis,
    so a fork would save only the interpreter's start."""
    setting = os.environ.get(PREVIEW_ENV)
    if source.request is not None or source.measured or setting == "0":
        return None
    if setting != "1" and not has_another_core():
        return None  # the child would compete with the app for the one core
    args = [sys.executable, "-m", "hloscope.tui.preview", str(source.path), source.target or "",
            str(source.host_space)]
    try:
        return Preview(subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL))
    except OSError:  # no process to be had: the load worker alone
        return None


def main(argv: list[str]) -> int:
    """The child: ``python -m hloscope.tui.preview PATH TARGET HOST_SPACE`` writes the pickled rows to
    stdout (exit 1, nothing written, when the file cannot be analysed: the app's load says why)."""
    # lazy: the child's imports; the loading screen imports this module and must not load the analysis
    from hloscope.analysis.report import analyze_step
    from hloscope.analysis.simulate.overlap import AnalysisOptions
    from hloscope.artifact import read_step

    path, target, host_space = argv
    try:
        step = read_step(path, target or None)
        report = analyze_step(step.inputs, step.target, AnalysisOptions(host_space=int(host_space)))
        rows = preview_rows(report)
        data = pickle.dumps((rows.rows, rows.styles, rows.verdicts))
    except Exception:
        return 1
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
