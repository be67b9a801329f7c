"""Helpers for the TUI tests: open a real fixture in the app and wait for the worker."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


async def wait_loaded(pilot: Pilot[int], timeout_s: float = 60.0) -> None:
    """Wait until the load worker delivered the report (or failed), search is indexed and the
    margins are measured (the background worker after the first screen)."""
    app = pilot.app
    waited = 0.0
    while waited < timeout_s:
        if getattr(app, "failure", None) is not None:
            await pilot.pause()
            return
        if (getattr(app, "loaded", None) is not None and getattr(app, "search_index", None) is not None
                and getattr(app, "margins_ready", True)):
            await pilot.pause()
            return
        await pilot.pause(0.05)
        waited += 0.05
    raise AssertionError("the app did not load within the timeout")


def pilot_test(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async Pilot scenario as a plain test (no async pytest plugin needed)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))

    return run
