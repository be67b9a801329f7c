"""Turn DOT text into SVG or PNG with a Graphviz-compatible ``dot`` executable.

Contract: ``render_source(source, fmt, renderer="auto", timeout_s=30)`` runs one
renderer in a child process with the DOT text on standard input and returns the
bytes with the renderer's name and the seconds it took. ``auto`` prefers
Graphviz's own ``dot`` on PATH, else the ``graphviz-pure`` executable that the
``graphviz-pure`` wheel installs (a dependency, so rendering works after a plain
``pip install``). A missing renderer, a renderer that fails or one that runs past
``timeout_s`` is a one-line :class:`HloscopeError` (exit 7); the child is killed
on timeout. Nothing is written to disk here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from hloscope.errors import EXIT_ENVIRONMENT, EXIT_UNKNOWN_NAME, HloscopeError
from hloscope.render.dot.style import FONT, SVG_FONT_STACK

#: Renderer names, in the order ``auto`` tries them.
RENDERER_NAMES = ("dot", "graphviz-pure")
IMAGE_FORMATS = ("svg", "png")
DEFAULT_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Rendered:
    """data: the image bytes. renderer: which executable made them. seconds: wall time."""

    data: bytes
    renderer: str
    seconds: float


def find_renderer(name: str) -> str | None:
    """Path of the executable for renderer ``name``, or None if it is not installed."""
    if name == "graphviz-pure":
        # The wheel puts it next to this interpreter, which may not be on PATH (a venv not activated).
        beside = Path(sys.executable).parent / ("graphviz-pure.exe" if os.name == "nt" else "graphviz-pure")
        if beside.is_file():
            return str(beside)
    return shutil.which(name)


def available_renderers() -> list[str]:
    """The renderers installed here, in ``auto`` order."""
    return [n for n in RENDERER_NAMES if find_renderer(n) is not None]


def choose_renderer(name: str = "auto") -> tuple[str, str]:
    """``(renderer name, executable path)`` for ``name`` (``auto``, ``dot`` or ``graphviz-pure``)."""
    if name != "auto" and name not in RENDERER_NAMES:
        raise HloscopeError(f"unknown renderer '{name}'; choose one of: auto, {', '.join(RENDERER_NAMES)}",
                            EXIT_UNKNOWN_NAME)
    for candidate in RENDERER_NAMES if name == "auto" else (name,):
        path = find_renderer(candidate)
        if path is not None:
            return candidate, path
    raise HloscopeError(missing_renderer_words(name), EXIT_ENVIRONMENT)


def missing_renderer_words(name: str) -> str:
    """What is missing for renderer ``name`` (``auto``, ``dot``, ``graphviz-pure``), and what would draw
    instead: Graphviz's ``dot`` is a system program, not a pip package; ``graphviz-pure`` is the wheel."""
    pure = find_renderer("graphviz-pure") is not None
    if name == "dot":
        instead = ("--renderer graphviz-pure (installed) or auto draws without it" if pure
                   else "or pip install graphviz-pure and use --renderer graphviz-pure")
        return (f"renderer 'dot' is Graphviz's own program and it is not on PATH (install Graphviz: apt install "
                f"graphviz, brew install graphviz); {instead}, or write --format dot")
    if name == "graphviz-pure":
        return "renderer 'graphviz-pure' not found; pip install graphviz-pure, or write --format dot"
    return ("no Graphviz renderer found (neither Graphviz's dot on PATH nor graphviz-pure); pip install "
            "graphviz-pure, or write --format dot")


def render_source(source: str, fmt: str, renderer: str = "auto",
                  timeout_s: float = DEFAULT_TIMEOUT_S) -> Rendered:
    """Render DOT ``source`` to ``fmt`` (``svg`` or ``png``)."""
    if fmt not in IMAGE_FORMATS:
        raise HloscopeError(f"unknown image format '{fmt}'; choose one of: {', '.join(IMAGE_FORMATS)}",
                            EXIT_UNKNOWN_NAME)
    name, path = choose_renderer(renderer)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([path, "-Kdot", f"-T{fmt}"], input=source.encode("utf-8"),
                              capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise HloscopeError(f"{name} did not finish rendering within {timeout_s:g} s; lower --max-nodes, "
                            "raise --timeout, or write --format dot", EXIT_ENVIRONMENT) from None
    except OSError as e:
        raise HloscopeError(f"{name} could not be run: {e.strerror or e}", EXIT_ENVIRONMENT) from None
    seconds = time.perf_counter() - t0
    if proc.returncode != 0 or not proc.stdout:
        first = next((ln for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip()), "")
        raise HloscopeError(f"{name} failed to render (exit {proc.returncode}): {first[:200]}",
                            EXIT_ENVIRONMENT)
    data = proc.stdout
    if fmt == "svg":  # the renderer names only the measured font; add the fallbacks a viewer may lack it for
        data = data.replace(f'font-family="{FONT}"'.encode(), f'font-family="{SVG_FONT_STACK}"'.encode())
    return Rendered(data, name, seconds)
