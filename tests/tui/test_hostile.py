"""Strings from a module, a manifest or a file name are data in every TUI widget (#21 item 0).

The modules are the real mlp_offload fixture with its strings replaced: op_name
metadata, a source file and a function name (the debug sections), and an artifact
folder whose manifest holds a checkpoint name, a role and an XLA option, in a
folder whose own name is hostile. What each widget was given is checked as the
text it renders (control characters are shown as escapes, ``hloscope.tui.text``),
and every screen is drawn on the way, which is where markup used to be parsed
(``MarkupError: auto closing tag ('[/]') has nothing to close``, exit status 0).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path, PurePath
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from rich.text import Text
from textual.widgets import Input, OptionList, Static, Tree

from hloscope.tui.app import HloscopeApp
from hloscope.tui.load import Source
from hloscope.tui.screens.error import ErrorScreen
from hloscope.tui.screens.export import ExportScreen
from hloscope.tui.screens.search import SearchScreen
from hloscope.tui.text import shown
from hloscope.tui.widgets.schedule import ScheduleView
from hloscope.tui.widgets.transfers import COLUMNS, TransferTable
from tests.tui.conftest import FIXTURES, pilot_test, wait_loaded

PWN = "[/][bold red]PWN[/bold red] [link=http://x]y[/link] [@click=app.quit]q[/]"
OLD_BRACKETS = "reduce_sum[axes=(1,)]"
SIZE = (200, 50)

# In the fixture: dot.33 (in gemm_fusion_dot.15_computation) carries this op_name, the
# to-host transfer dynamic-update-slice-start.2 carries none (one is added), and file 5 /
# function 6 are the user frame of the transfers' source line (mlp.py:38 in build.<locals>.loss).
_MLP = FIXTURES / "mlp_offload.hlo.txt"
_OP = 'op_name="jit(step)/transpose(jvp())/while/body/closed_call/checkpoint/dot_general"'
_START = 'metadata={scheduling_name="dynamic-update-slice-start.2"}'
_FILE = '5 "/work/main/hloscope/compile/workloads/mlp.py"'
_FUNCTION = '6 "build.<locals>.loss"'


def _hlo_string(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def hostile_module(op_name: str, file_name: str, function: str) -> str:
    """The mlp fixture with ``op_name`` on dot.33 and on a transfer start, and a renamed source file and function."""
    text = _MLP.read_text()
    for old in (_OP, _START, _FILE, _FUNCTION):
        assert old in text, old
    text = text.replace(_OP, f'op_name="{_hlo_string(op_name)}"')
    text = text.replace(_START, f'metadata={{op_name="{_hlo_string(op_name)}" '
                                'scheduling_name="dynamic-update-slice-start.2"}')
    text = text.replace(_FILE, f'5 "{file_name}"').replace(_FUNCTION, f'6 "{function}"')
    return text


#: The user file of the fixture's transfers (their source line is mlp.py:38).
MLP_FILE = "/work/main/hloscope/compile/workloads/mlp.py"


def artifact_folder(parent: Path, folder: str, module: str, checkpoint: str, role: str, option: str,
                    mlp: str = MLP_FILE, intent: dict[str, Any] | None = None) -> Path:
    """An ``hloscope compile``-style folder: the module and a manifest naming its tensors (matched by source line)."""
    out = parent / folder
    out.mkdir()
    (out / "optimized.hlo.txt").write_text(module)
    (out / "manifest.json").write_text(json.dumps({
        "target": "h100-sxm", "devices": 8, "xla_options": {"xla_flag": option},
        "tensor_names": [{"name": checkpoint, "file": mlp, "line": 38, "producer_file": mlp, "producer_line": 38,
                          "role": role}],
        **({"intent": intent} if intent is not None else {})}))
    return out


class RecordingApp(HloscopeApp):
    """The app, keeping every toast it raised (a toast expires after a few seconds on a loaded machine)."""

    def __init__(self, source: Source) -> None:
        super().__init__(source)
        self.toasts: list[tuple[str, bool]] = []
        self.toast_timeouts: list[float] = []  # seconds each toast stays, in the order raised

    def notify(self, message: str, *, title: str = "", severity: Any = "information", timeout: float | None = None,
               markup: bool = True) -> None:
        self.toasts.append((message, markup))
        self.toast_timeouts.append(self.NOTIFICATION_TIMEOUT if timeout is None else timeout)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)


def _plain(x: Any) -> str:
    """The text a cell, label or prompt renders (what Textual does with a ``str``: parse markup)."""
    from textual.content import Content

    if isinstance(x, Text):
        return x.plain
    if isinstance(x, Content):
        return x.plain
    return Content.from_markup(str(x)).plain


def _rendered(widget: Static) -> str:
    return str(widget.render())


async def drive(app: RecordingApp, pilot: Any, op_name: str, file_name: str, checkpoint: str | None,
                 option: str | None) -> None:
    """Every screen once: transfers, search, the detail pane, tabs, help, the export dialog, compare's prompt."""
    await wait_loaded(pilot)
    assert app.failure is None and app.loaded is not None
    screen = app.screen
    report = app.loaded.report
    # Transfers: the checkpoint name (manifest) and the source (file name) as literal cells
    table = screen.query_one(TransferTable)
    cells = [[_plain(c) for c in table.get_row_at(r)] for r in range(table.row_count)]
    short = shown(f"{PurePath(file_name).name or file_name}:38")
    # a column that does not fit whole is left out (issue 53.8: never cut mid-figure); the detail
    # pane below holds what it would show
    drawn = table.labels[:table.drawn]
    if "source" in drawn:
        assert any(row[COLUMNS.index("source")] == short for row in cells), (short, cells)
    if checkpoint is not None and "checkpoint" in drawn:
        assert any(row[COLUMNS.index("checkpoint")] == shown(checkpoint) for row in cells)
    # the toasts (the artifact note holds the manifest's XLA options): never markup
    assert not any(markup for _, markup in app.toasts)
    if option is not None:  # an artifact folder: its note is the status line (issue 27: not a toast over the list)
        # (the note prints the manifest's options as a dict: its strings as Python writes them)
        status = screen.query_one("#status", Static).render()
        assert shown(repr({"xla_flag": option})) in _plain(status)
        # the note says where the target came from: the manifest, not --target (#21)
        assert "target h100-sxm (from manifest.json)" in _plain(status)
    # the detail pane of the highlighted transfer: its checkpoint, role and source, literally
    await pilot.pause(0.2)
    detail = _rendered(screen.query_one("#detail-text", Static))
    if checkpoint is not None:
        assert shown(checkpoint) in detail
    if "source" not in drawn:
        assert short in detail, (short, detail)
    # Search by the op_name: every hit's line shows it literally; Down, Enter opens the first hit
    await pilot.press("slash")
    assert isinstance(app.screen, SearchScreen)
    search = app.screen
    search.query_one(Input).value = op_name
    await pilot.pause()
    hits = search.hits
    ours = [i for i, h in enumerate(hits) if h.name in ("dot.33", "dynamic-update-slice-start.2")]
    _, total = search.index.find(op_name)
    assert len(ours) == 2 or total > len(hits)  # (a short op_name can match more than the list holds)
    results = search.query_one(OptionList)
    for i in ours:
        assert shown(op_name) in _plain(results.get_option_at_index(i).prompt)
    await pilot.press("down")
    assert results.highlighted == 0 and results.has_focus
    results.highlighted = ours[0] if ours else 0
    await pilot.press("enter")
    await pilot.pause(0.2)
    assert not isinstance(app.screen, SearchScreen)
    view = screen.query_one(ScheduleView)
    chosen = hits[ours[0] if ours else 0]
    assert view.current is not None and view.current.instruction.name == chosen.name
    if ours:
        detail = _rendered(screen.query_one("#detail-text", Static))
        assert f"op_name: {shown(op_name)}" in detail
    # a transfer's own detail: its source line with the hostile file and function names
    ins = next(i for c in report.module.computations.values() for i in c.instructions
               if i.name == "dynamic-update-slice-start.2")
    loc = report.module.source_location(ins)
    if loc is not None:
        view.show(ins.computation, ins.name)
        await pilot.pause(0.2)
        detail = _rendered(screen.query_one("#detail-text", Static))
        assert shown(f"{PurePath(loc.file).name or loc.file}:{loc.line}") in detail
    links = screen.query_one("#detail-links", OptionList)
    assert all(isinstance(links.get_option_at_index(i).prompt, Text) for i in range(links.option_count))
    # the other tabs and screens draw without parsing anything
    await pilot.press("3")
    tree = screen.query_one(Tree)
    assert all(isinstance(n.label, Text) for n in tree.root.children)
    await pilot.press("4")  # the offloads the step asked for (intent helper's view)
    await pilot.pause()
    assert screen.query_one("#tabs").active == "intent"  # type: ignore[attr-defined]
    await pilot.press("1", "question_mark")
    await pilot.pause()
    await pilot.press("escape", "e")
    await pilot.pause()
    assert isinstance(app.screen, ExportScreen)
    await pilot.press("escape", "c")
    await pilot.pause()
    await pilot.press("escape")
    await pilot.pause()
    assert app.failure is None


#: Characters a module string may hold (HLO text cannot hold a newline or NUL inside a
#: string), weighted towards what markup and terminals act on.
_MARKUP = st.sampled_from(["[", "]", "[/]", "[b]", "[/b]", "[@click=app.quit]", "[link=http://x]", "\\", '"',
                           "\x1b[2J", "\x07", "\r", "\t", "\u202e", "{", "}", "=", ",", " ", "%"])
_ANY = st.characters(blacklist_characters="\n\0", blacklist_categories=("Cs",))
HOSTILE = st.lists(st.one_of(_MARKUP, _ANY, st.text(_ANY, min_size=40, max_size=400)), min_size=1, max_size=12) \
    .map("".join).filter(lambda s: s.strip() != "")
#: A file or function name in the debug sections: XLA's quoting there is not read back
#: (hloscope.hlo.building.store_section_item strips the quotes only), so no quote or backslash.
SECTION_NAME = HOSTILE.map(lambda s: s.replace('"', "'").replace("\\", "/"))
#: A folder name: no "/" and not too long for the file system (255 bytes).
FOLDER = st.text(st.one_of(st.sampled_from(list("[]/@=b ")), st.characters(
    blacklist_characters="/\n\0", blacklist_categories=("Cs",))), min_size=1, max_size=40).filter(
    lambda s: s.strip() not in ("", ".", "..") and "/" not in s and len(s.encode()) < 200)


# Few examples and no shrinking: each example opens the app on a fresh module (2-10 s each,
# by load); marked slow so the fast tier keeps the two fixed cases above and below.
@pytest.mark.slow
@settings(max_examples=5, deadline=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow])
@given(op_name=HOSTILE, file_name=SECTION_NAME, function=SECTION_NAME, checkpoint=HOSTILE, role=HOSTILE, option=HOSTILE,
       folder=FOLDER)
def test_hostile_names_are_shown_literally_on_every_screen(op_name: str, file_name: str, function: str,
                                                          checkpoint: str, role: str, option: str,
                                                          folder: str) -> None:
    import asyncio

    file_name = file_name.strip()  # the debug sections' strings are read stripped
    function = function.strip()
    tmp = Path(tempfile.mkdtemp(prefix="hloscope-hostile-"))
    try:
        module = hostile_module(op_name, file_name, function)
        out = artifact_folder(tmp, folder, module, checkpoint, role, option, mlp=file_name)

        async def run() -> None:
            app = RecordingApp(Source(str(out)))
            async with app.run_test(size=SIZE) as pilot:
                await drive(app, pilot, op_name, file_name, checkpoint, option)

        asyncio.run(run())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pilot_test
async def test_the_issue_s_op_name_searches_and_shows_literally(tmp_path: Path) -> None:
    # Given the issue's strings: Rich markup with a link and an action, and an older JAX op_name
    path = tmp_path / "hostile.hlo.txt"
    path.write_text(hostile_module(PWN, "/tmp/[b]x[/b][@click=app.quit]c[/].py", "[red]fn[/]").replace(
        'op_name="jit(step)/transpose(jvp())/while/body/closed_call/checkpoint/rematted_computation/dot_general"',
        f'op_name="{OLD_BRACKETS}"'))
    app = RecordingApp(Source(str(path)))
    async with app.run_test(size=SIZE) as pilot:
        await drive(app, pilot, PWN, "/tmp/[b]x[/b][@click=app.quit]c[/].py", None, None)
        # the older op_name with brackets is found and listed as written
        await pilot.press("slash")
        app.screen.query_one(Input).value = "reduce_sum[axes"
        await pilot.pause()
        results = app.screen.query_one(OptionList)
        assert results.option_count > 0
        assert OLD_BRACKETS in _plain(results.get_option_at_index(0).prompt)
        # what is drawn: the search list's lines hold the markup as characters
        drawn = "\n".join("".join(seg.text for seg in results.render_line(y)) for y in range(results.size.height))
        assert OLD_BRACKETS in drawn
        await pilot.press("escape", "q")
    assert app.failure is None


@pilot_test
async def test_an_artifact_folder_with_hostile_manifest_strings(tmp_path: Path) -> None:
    op_name = "[i]x[/i] " + OLD_BRACKETS
    module = hostile_module(op_name, MLP_FILE, "build.<locals>.loss")
    intent = {  # what the step asked to offload, as hloscope compile records it (names from the trace)
        "policies": [{"kind": "save_and_offload_only_these_names", "saved": [], "offloaded": [PWN],
                      "offload_src": "device", "offload_dst": "pinned_host", "differentiated": True}],
        "tags": [{"name": "[link=file:///etc]y\x1b[2J", "where": {"file": "/m/[i]model.py", "line": 3,
                                                                   "function": "f"}}],
        "placements": []}
    out = artifact_folder(tmp_path, "[b]run [@click=app.quit]x", module, PWN, "[@click=app.quit]role",
                          "[link=x]o[/link]", intent=intent)
    app = RecordingApp(Source(str(out)))
    async with app.run_test(size=SIZE) as pilot:
        await drive(app, pilot, op_name, MLP_FILE, PWN, "[link=x]o[/link]")
        offloads = _rendered(app.screen.query_one("#intent-view", Static))
        assert f"offload '{PWN[:30]}" in offloads  # (the view shortens a long name; literally, as far as it goes)
        # (where the target came from, the manifest, is checked in drive(): the status line)
    assert app.failure is None


@settings(max_examples=4, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(name=FOLDER)
def test_a_truncated_module_under_a_hostile_file_name_shows_the_name_literally(name: str) -> None:
    import asyncio

    tmp = Path(tempfile.mkdtemp(prefix="hloscope-hostile-"))
    try:
        text = _MLP.read_text()
        cut = tmp / name
        cut.write_text(text[: len(text) // 2])

        async def run() -> None:
            app = RecordingApp(Source(str(cut)))
            async with app.run_test(size=SIZE) as pilot:
                await wait_loaded(pilot)
                assert isinstance(app.screen, ErrorScreen)
                message = _rendered(app.screen.query_one("#error-message", Static))
                assert shown(str(cut)) in message
                await pilot.press("q")

        asyncio.run(run())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_shown_makes_control_characters_visible_and_keeps_the_rest() -> None:
    assert shown("a\x1b[2Jb\tc\u202ed[b]") == "a\\x1b[2Jb\\x09c\\u202ed[b]"
    assert shown("llama.py:66 é 字") == "llama.py:66 é 字"


@pilot_test
async def test_compare_shows_hostile_paths_and_op_names_literally(tmp_path: Path) -> None:
    from textual.widgets import DataTable

    from hloscope.tui.screens.compare import CompareScreen

    folder = tmp_path / "[b]A [@click=app.quit]x"
    folder.mkdir()
    a, b = folder / "a.hlo.txt", folder / "[link=x]b[@click=app.bell].hlo.txt"
    a.write_text(hostile_module(PWN, "/tmp/[b]x[/b]c.py", "[red]fn[/]"))
    b.write_text(hostile_module(PWN, "/tmp/[b]x[/b]c.py", "[red]fn[/]"))
    app = HloscopeApp(Source(str(a)), compare=Source(str(b)))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        for _ in range(400):
            if isinstance(app.screen, CompareScreen):
                break
            await pilot.pause(0.05)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        head = _rendered(screen.query_one("#compare-head", Static))
        assert f"A: {a}" in head and f"B: {b}" in head
        table = screen.query_one("#compare-table", DataTable)
        cells = [_plain(c) for r in range(table.row_count) for c in table.get_row_at(r)]
        assert any(m.where[-50:] in cells for m in screen.matches)
        await pilot.press("down", "escape")
        await pilot.pause()
    assert app.failure is None
