"""Every code block of README.md and docs/*.md runs as written.

The fenced blocks are read from the Markdown files themselves. ``python`` blocks
run as scripts; ``sh`` blocks run command by command: each ``hloscope`` command
(``.venv/bin/hloscope`` too) runs as ``python -m hloscope`` with the same
arguments. Commands that install, commit or start the test suite itself, and the
interactive TUI, are not run; :data:`NOT_RUN` says why for each, and a command
that is neither run nor listed there fails the collection test, so a new block
cannot slip by untested. ``text``/``toml``/``yaml`` blocks show output or
configuration and are not run.

Every block of one file runs in one scratch folder (the file's order), which
holds what the docs assume exists: ``fixtures/`` and ``tests/`` (the repository's), and, made
on first need, ``xla_dump/`` (a real dump folder), ``build/step`` and
``hloscope-baseline.json`` (made by the commands docs/ci.md shows), and the 405B
step docs/diagrams.md draws. A command passes when it exits 0 (or 1 where the
docs use it as a gate: ``check``, ``--fail-on``, ``--require-fit``) with no
traceback. Commands that compile are marked ``xla``; the 100+-layer presets
``slow``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN_LANGS = ("sh", "python")

#: Commands not run, by a fragment of the command: why.
NOT_RUN = {
    "python3 -m venv": "creates a virtual environment and installs from PyPI",
    "python -m venv": "creates a virtual environment and installs from PyPI",
    "pip install": "installs from PyPI",
    "git add": "commits to the reader's repository",
    "git commit": "commits to the reader's repository",
    "python -m pytest": "runs this test suite (or a long fuzz session of it) from inside it",
    "set -e": "a shell option",
    "hloscope tui": "interactive; tests/tui drives the TUI's screens with Textual's Pilot",
    "--fn mypkg.train:step": "compiles the reader's own package (mypkg), which does not exist here",
    "--maxtext": "needs the maxtext extra (Python 3.12+); tests/compile/test_maxtext_compile.py compiles this step",
    "hloscope_build.py build": "compiles hloscope in place with a C compiler (a minute); the README's install "
                               "does the same, and .ci/run runs the tests on the compiled modules",
}

#: Python blocks that are pytest files, run with pytest rather than as scripts.
PYTEST_FILES = ("import pytest\n\n@pytest.mark.hloscope",)

#: The 405B presets compile for minutes: marked slow.
SLOW = re.compile(r"405b|671b|--devices 128")


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int
    lang: str
    text: str

    @property
    def name(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def blocks() -> list[Block]:
    out = []
    for doc in DOCS:
        text = doc.read_text()
        for m in re.finditer(r"^( *)```(\w*)\n(.*?)^\1```", text, re.M | re.S):
            indent = len(m.group(1))
            body = "\n".join(line[indent:] for line in m.group(3).splitlines())
            out.append(Block(doc, text[:m.start()].count("\n") + 1, m.group(2), body + "\n"))
    return out


def commands(block: Block) -> list[str]:
    """The shell commands of an ``sh`` block: continuations joined, ``&&`` chains split, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", block.text)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        for part in " ".join(shlex.quote(w) for w in words).split(" '&&' "):
            out.append(part.strip())
    return out


def _not_run(command: str) -> str | None:
    return next((why for frag, why in NOT_RUN.items() if frag in command), None)


def _is_hloscope(command: str) -> bool:
    return shlex.split(command)[0].rsplit("/", 1)[-1] == "hloscope"


def _marks(block: Block, text: str) -> list[pytest.MarkDecorator]:
    # The blocks of one document run in its order in one scratch folder, so under pytest-xdist
    # they run on one worker (tests/conftest.py makes -n distribute by these groups).
    marks = [pytest.mark.xdist_group(str(block.doc.relative_to(ROOT)))]
    # Compiles, or reads what a compile makes (build/step and the baseline of docs/ci.md).
    if re.search(r"hloscope (compile|sweep)\b|--workload|--fn |compile_step|hloscope_step\(workload|build/step|"
                 r"hloscope-baseline\.json", text) or re.search(r"^import jax", text, re.M):
        marks.append(pytest.mark.xla)
    if SLOW.search(text) or "hloscope-out/l405" in text:
        marks.append(pytest.mark.slow)
    return marks


def cases() -> list[object]:
    out: list[object] = []
    for b in blocks():
        if b.lang == "sh":
            for i, c in enumerate(commands(b)):
                if _is_hloscope(c) and _not_run(c) is None:
                    out.append(pytest.param(b, c, id=f"{b.name}#{i + 1}", marks=_marks(b, c)))
        elif b.lang == "python":
            out.append(pytest.param(b, None, id=b.name, marks=_marks(b, b.text)))
    return out


def test_every_command_is_run_or_says_why_not() -> None:
    for b in blocks():
        if b.lang not in RUN_LANGS:
            assert b.lang in ("text", "toml", "yaml", ""), f"{b.name}: a ```{b.lang} block: run it or list it"
            continue
        if b.lang == "sh":
            for c in commands(b):
                assert _is_hloscope(c) or _not_run(c), f"{b.name}: '{c}' is neither run nor listed in NOT_RUN"


# -- the scratch folder of each document -----------------------------------------

_FOLDERS: dict[str, Path] = {}


def _hloscope(folder: Path, argv: list[str], timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hloscope", *argv], cwd=folder, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "COLUMNS": "200"}, check=False)


def _ensure(folder: Path, text: str) -> None:
    """Make what ``text`` reads and an earlier block would have made."""
    if "xla_dump/" in text and not (folder / "xla_dump").exists():
        shutil.copytree(ROOT / "fixtures" / "dump_mlp_offload", folder / "xla_dump")
    if "build/step" in text and "--out build/step" not in text and not (folder / "build" / "step").exists():
        _must(_hloscope(folder, shlex.split("compile --workload llama --set layers=2 --target gb200 "
                                            "--out build/step")), "build/step")
    if re.search(r"baseline[=\s]+\"?hloscope-baseline\.json", text) and "--write-baseline" not in text \
            and not (folder / "hloscope-baseline.json").exists():
        r = _hloscope(folder, shlex.split("check --workload llama --set layers=2 --target gb200 "
                                          "--write-baseline hloscope-baseline.json"))
        assert r.returncode in (0, 1) and (folder / "hloscope-baseline.json").exists(), r.stderr
    if "hloscope-out/l405" in text and "--out hloscope-out/l405" not in text \
            and not (folder / "hloscope-out" / "l405").exists():
        _must(_hloscope(folder, shlex.split("compile --workload llama3-405b --devices 128 --target gb200 "
                                            "--out hloscope-out/l405")), "the 405B step")


def _must(r: subprocess.CompletedProcess[str], what: str) -> None:
    assert r.returncode in (0, 1), f"making {what} failed ({r.returncode}): {r.stderr[-2000:]}"


def _folder(block: Block, tmp_path_factory: pytest.TempPathFactory) -> Path:
    key = str(block.doc)
    if key not in _FOLDERS:
        folder = tmp_path_factory.mktemp(block.doc.stem)
        (folder / "fixtures").symlink_to(ROOT / "fixtures")
        (folder / "tests").symlink_to(ROOT / "tests")  # the docs' --fn tests.compile.pytree_steps:... steps
        (folder / "docs" / "img").mkdir(parents=True)  # docs/diagrams.md writes its pictures there
        _FOLDERS[key] = folder
    return _FOLDERS[key]


def _gate(command: str) -> bool:
    """Commands the docs use as a gate, where exit 1 is the documented 'a rule broke'."""
    return bool(re.search(r"hloscope check|--fail-on|--require-fit", command))


@pytest.mark.parametrize("block, command", cases())
def test_block_runs_as_written(block: Block, command: str | None, tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = _folder(block, tmp_path_factory)
    _ensure(folder, command if command is not None else block.text)
    if command is not None:
        argv = shlex.split(command)[1:]
        r = _hloscope(folder, argv)
        allowed = (0, 1) if _gate(command) else (0,)
    else:
        script = folder / f"doc_block_{block.line}.py"
        if block.text.startswith(PYTEST_FILES):
            script = folder / f"test_doc_block_{block.line}.py"
            script.write_text(block.text)
            r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", script.name],
                               cwd=folder, capture_output=True, text=True, timeout=1800, check=False)
        else:
            script.write_text(block.text)
            r = subprocess.run([sys.executable, script.name], cwd=folder, capture_output=True, text=True,
                               timeout=1800, check=False)
        allowed = (0,)
    shown = f"{block.name}: {command or 'python block'} exited {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    assert r.returncode in allowed, shown
    assert "Traceback (most recent call last)" not in r.stderr, shown
    assert "internal error" not in r.stderr, shown
