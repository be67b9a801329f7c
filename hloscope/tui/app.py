"""HloscopeApp: loads in a worker, routes navigation between screens, holds history. Views live in screens/.

Start-up is kept short: this module imports Textual's core and the LoadingScreen
only; the analysis and the main screen's widgets are imported by the load
worker, which starts once the first screen has been drawn.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import WorkerFailed

from hloscope.errors import EXIT_INTERNAL, HloscopeError
from hloscope.tui.history import History, Place
from hloscope.tui.load import Loaded, Source, load_source, measure_margins
from hloscope.tui.messages import GoTo, LoadFailed, MarginsReady, PreviewReady, ReportReady, TransferChosen
from hloscope.tui.preview import Preview
from hloscope.tui.screens.error import ErrorScreen
from hloscope.tui.screens.help import HelpScreen
from hloscope.tui.screens.loading import LoadingScreen
from hloscope.tui.screens.prompt import PromptScreen
from hloscope.tui.terminal import need_terminal
from hloscope.tui.text import shown

if TYPE_CHECKING:
    from hloscope.tui.export import ExportKind
    from hloscope.tui.screens.main import MainScreen
    from hloscope.tui.search import Hit, SearchIndex


#: The interpreter's thread switch interval (seconds) while the background worker measures the margins.
WORKER_SWITCH_S = 0.0005

#: How long the load waits for the preview child's rows before it starts anyway (seconds): the child
#: sends them in 0.44 s on the 32-layer module (6.3 MB); a larger module's load starts before its rows come.
PREVIEW_HEAD_START_S = 1.0

#: Actions that need a loaded schedule: dimmed while loading, hidden on the error screen.
_NEED_REPORT = frozenset({"search", "compare", "export", "history_back", "history_forward"})


def one_line(text: str) -> str:
    """``text`` on one line (an exception's message can span several)."""
    # only "\n" joins lines: str.splitlines would also split at (and lose) \x0c, \x1c ... of a file name
    return " ".join(shown(part) for part in text.split("\n") if part.strip()) or "(no message)"


class HloscopeApp(App[int]):
    """``failure`` holds the one-line error the CLI prints after the app exits: the input
    could not be loaded (its exit code), or an exception nothing handled (exit code 70)."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: a subclass elsewhere finds it too
    TITLE = "hloscope"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "quit", "Quit", priority=True, show=False),
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("slash", "search", "Search"),
        Binding("left_square_bracket,backspace", "history_back", "Back", show=False),
        Binding("right_square_bracket", "history_forward", "Forward", show=False),
        Binding("c", "compare", "Compare"),
        Binding("e", "export", "Export"),
    ]

    def __init__(self, source: Source, compare: Source | None = None,
                 loader: Callable[[Source], Loaded] = load_source, preview: Preview | None = None) -> None:
        super().__init__()
        self.source = source
        self.preview = preview  # the first pass in a child process (tui.preview), its rows shown until the report
        self.compare_source = compare
        self.loader = loader
        self.loaded: Loaded | None = None
        self.other: Loaded | None = None
        self.search_index: SearchIndex | None = None
        self.margins_ready = False  # the loaded report's margins are measured (the background worker)
        self.history = History()
        self.failure: HloscopeError | None = None
        self.main: MainScreen | None = None  # once loaded
        self.load_started = False

    def run(self, *, headless: bool = False, **kwargs: Any) -> int | None:
        """Run on the terminal (one line, exit 2, when there is none: ``tui.terminal``); ``headless``: Pilot, tests."""
        if not headless:
            need_terminal()
        return super().run(headless=headless, **kwargs)

    async def on_mount(self) -> None:
        await self.push_screen(LoadingScreen(self.source.label))
        if self.preview is None:
            self.call_after_refresh(self._start_load)  # the first screen is drawn before the worker competes
            return
        # The load waits for the child's rows: the analysis, compiled by mypyc, holds the interpreter
        # lock for long stretches, and a load started beside the child kept the rows it sent off the
        # screen until the main screen replaced them (the 32-layer module, quiet: rows never seen before
        # the main screen at 0.88-1.03 s). Not longer than PREVIEW_HEAD_START_S: a large module's load starts then.
        self.run_worker(partial(self._wait_preview, self.preview), thread=True, group="preview")
        self.set_timer(PREVIEW_HEAD_START_S, self._start_load)

    def _wait_preview(self, preview: Preview) -> None:
        """In a thread: wait on the child's pipe (the read releases the lock), then hand its rows over."""
        self.post_message(PreviewReady(preview.wait()))  # from a thread: dropped once the app has closed

    def on_preview_ready(self, message: PreviewReady) -> None:
        if message.rows is not None and self.loaded is None and isinstance(self.screen, LoadingScreen):
            self.screen.show_preview(message.rows)
        self.call_after_refresh(self._start_load)  # once the rows are drawn (none: the child failed, no wait)

    def _start_load(self) -> None:
        """Start the load worker, once (the preview's rows, its failure and its head start's end all ask)."""
        if self.load_started:
            return
        self.load_started = True
        self.run_worker(partial(self._load, self.source, False), thread=True, group="load")

    # -- loading --------------------------------------------------------------

    def _load(self, source: Source, is_other: bool) -> None:
        try:
            loaded = self.loader(source)
            # lazy: the main screen loads the analysis: imported here, off the UI thread
            import hloscope.tui.screens.main  # noqa: F401
        except HloscopeError as e:
            line, code = one_line(str(e)), e.exit_code
        except Exception as e:  # a bug: still one line on the error screen, and after exit
            line, code = one_line(f"internal error: {type(e).__name__}: {e}"), EXIT_INTERNAL
        else:
            line, code = "", 0
        if line:
            self.post_message(LoadFailed(f"B: {line}" if is_other else line, code, second=is_other))
            return
        # The report lives as long as the app: keep the collector from walking its
        # millions of objects again and again (a full collection stalls a key press).
        # No gc.collect() first: after a load it found no garbage (0 unreachable objects on
        # the 32-layer benchmark module) and cost 60-85 ms before the first screen with verdicts.
        gc.freeze()
        if is_other:
            self.call_from_thread(self._other_ready, loaded)
        else:
            self.post_message(ReportReady(loaded))

    def on_report_ready(self, message: ReportReady) -> None:
        from hloscope.tui.screens.main import MainScreen  # lazy: the analysis, after the first frame

        if self.preview is not None:  # its rows are not needed now: stop the child if it still runs
            self.preview.close()
        self.loaded = message.loaded
        self.main = MainScreen(message.loaded)
        self.switch_screen(self.main)
        self.sub_title = shown(f"{message.loaded.file} · loaded in {message.loaded.seconds:.1f} s")  # a path
        # after the screen's first frame: a worker thread started now takes the GIL from its layout
        self.main.call_after_refresh(self._after_first_frame)

    def _after_first_frame(self) -> None:
        self.run_worker(self._fill_in, thread=True, group="index")
        if self.compare_source is not None:
            self._set_status(f"loading {self.compare_source.label} to compare ...")
            self.run_worker(partial(self._load, self.compare_source, True), thread=True, group="load-b")

    def _fill_in(self) -> None:
        """What comes after the first screen, off the UI thread: the search index (a fraction of
        a second), then the margins (seconds: re-simulations of the step), posted when measured."""
        from hloscope.tui.search import SearchIndex  # lazy: the search index, on first use

        loaded = self.loaded
        assert loaded is not None
        self.search_index = SearchIndex(loaded.report)
        # This thread holds the GIL for seconds; the UI thread, waiting for it at each step of a key
        # press, got it back only every switch interval (5 ms by default): a Down in the table took
        # a median 66 ms, at worst 400 ms, against 23 ms after the worker. A shorter interval while it
        # runs hands the GIL over sooner.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(WORKER_SWITCH_S)
        try:
            measure_margins(loaded)
        finally:
            sys.setswitchinterval(interval)
        gc.freeze()  # the margins live as long as the report (see _load)
        self.post_message(MarginsReady())

    def on_margins_ready(self, message: MarginsReady) -> None:
        self.margins_ready = True
        if self.main is not None:
            self.main.margins_ready()

    def _set_status(self, text: str) -> None:
        if self.main is not None:
            self.main.set_status(text)

    def _other_ready(self, loaded: Loaded) -> None:
        self.other = loaded
        self._set_status("")
        self.action_compare()

    def on_load_failed(self, message: LoadFailed) -> None:
        if message.second:  # the second schedule of a compare: the first stays open
            self._set_status(message.message)
            self.notify(message.message, severity="error", timeout=8, markup=False)
            return
        self.failure = HloscopeError(message.message, message.exit_code)
        self.switch_screen(ErrorScreen(message.message))

    def _handle_exception(self, error: Exception) -> None:
        # Textual calls this for an exception nothing handled, then exits with code 1 and
        # prints a traceback. hloscope's contract is one line and exit code 70 (docs/cli.md):
        # the CLI prints ``failure``; HLOSCOPE_DEBUG=1 keeps Textual's traceback as well.

        cause = error.error if isinstance(error, WorkerFailed) else error  # say what the worker raised
        if self.failure is None or self.failure.exit_code != EXIT_INTERNAL:
            self.failure = HloscopeError(
                one_line(f"internal error in the TUI: {type(cause).__name__}: {cause}")
                + " (set HLOSCOPE_DEBUG=1 for the traceback)", EXIT_INTERNAL)
        super()._handle_exception(error)
        if not os.environ.get("HLOSCOPE_DEBUG"):
            self._exit_renderables.clear()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in _NEED_REPORT and self.main is None:
            return False if self.failure is not None else None  # error screen: not offered; loading: dimmed
        return True

    # -- navigation -------------------------------------------------------------

    def on_go_to(self, message: GoTo) -> None:
        self._go((message.computation, message.name))

    def on_transfer_chosen(self, message: TransferChosen) -> None:
        t = message.verdict.transfer
        self.history.visit((t.computation, t.instruction.name))

    def _go(self, place: Place, record: bool = True) -> None:
        if self.main is None:
            return
        if record:
            self.history.visit(place)
        if self.screen is not self.main:
            self.pop_screen()
        self.main.show_place(*place)

    def action_history_back(self) -> None:
        place = self.history.back()
        if place is not None:
            self._go(place, record=False)

    def action_history_forward(self) -> None:
        place = self.history.forward()
        if place is not None:
            self._go(place, record=False)

    # -- screens ----------------------------------------------------------------

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_search(self) -> None:
        from hloscope.tui.screens.search import SearchScreen  # lazy: the search screen, on first use

        if self.search_index is None:
            self.notify("still indexing; try again in a moment")
            return

        def done(hit: Hit | None) -> None:
            if hit is not None:
                self._go((hit.computation, hit.name))

        self.push_screen(SearchScreen(self.search_index), done)

    def action_compare(self) -> None:
        from hloscope.tui.screens.compare import CompareScreen  # lazy: it loads the checks; on first use

        if self.loaded is None:
            return
        if self.other is not None:
            self.push_screen(CompareScreen(self.loaded, self.other))
            return

        def chosen(path: str | None) -> None:
            if path:
                self.compare_source = Source(path, target=self.source.target, host_space=self.source.host_space)
                self._set_status(f"loading {path} to compare ...")
                self.run_worker(partial(self._load, self.compare_source, True), thread=True, group="load-b")

        self.push_screen(PromptScreen("compare with (HLO file, dump folder or artifact folder):",
                                      placeholder="path"), chosen)

    def action_export(self) -> None:
        # lazy: the renderers, on first use
        from hloscope.tui.export import export
        from hloscope.tui.screens.export import ExportScreen

        if self.loaded is None or self.main is None:
            return
        loaded, main = self.loaded, self.main

        def chosen(choice: tuple[ExportKind, str] | None) -> None:
            if choice is None:
                return
            try:
                path = export(loaded, choice[0], choice[1], main.verdict)
            except HloscopeError as e:
                self.notify(one_line(str(e)), severity="error", timeout=8, markup=False)
                return
            where = path.resolve()
            self.notify(f"wrote {where.name} in {where.parent}", timeout=8, markup=False)

        self.push_screen(ExportScreen(loaded, main.verdict), chosen)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if self.main is None:  # loading, or the error screen: nothing to search, compare or export
            return
        yield SystemCommand("Search instructions", "By name, opcode, checkpoint name or op_name (/)",
                            self.action_search)
        yield SystemCommand("Compare with another schedule", "Match transfers by checkpoint name and source (c)",
                            self.action_compare)
        yield SystemCommand("Export", "Report JSON, transfer window DOT/SVG, trace (e)", self.action_export)
        yield SystemCommand("Back", "Previous place ([)", self.action_history_back)
        yield SystemCommand("Forward", "Next place (])", self.action_history_forward)
        yield SystemCommand("Key bindings", "All keys (?)", self.action_help)
        for tab in ("transfers", "schedule", "computations", "intent"):
            yield SystemCommand(f"Show {tab}", f"The {tab} tab", partial(self.main.action_tab, tab))
