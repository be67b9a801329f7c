"""Screenshot Model Explorer showing one hloscope start-to-done edge overlay (docs/img/model-explorer-overlay.png).

    python docs/screenshots/model_explorer_overlay.py HLO_FILE OUT.png [--verdict hidden] [--chromium PATH]

Starts ``model-explorer HLO_FILE --extensions=hloscope.explorer`` on 127.0.0.1 (a free port),
opens it in headless Chromium through Playwright (``pip install playwright``; a system
Chromium such as Debian's ``/usr/bin/chromium``), opens the toolbar's edge-overlays menu,
clicks View on "host transfer start -> done: VERDICT" (Model Explorer selects that overlay's
first start node and zooms to it; overlay edges are drawn while a node of the overlay is
selected), closes the menu and writes OUT.png. Then it unticks that overlay, takes
OUT-off.png, and checks the overlay was drawn: the picture with the overlay holds more pixels
of the verdict's colour (the thick edge, its arrowhead and its label) than the one without.
Exit 0 when it was, 1 when not, 2 on bad arguments. Not part of the test suite: it needs a
browser, and a large graph takes minutes to draw in a software renderer.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

from PIL import Image
from playwright.sync_api import Page, sync_playwright

from hloscope.analysis.kinds import VerdictKind
from hloscope.render.html import VERDICT_COLOURS

FLAGS = ["--no-sandbox", "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, server: subprocess.Popen[bytes], seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if server.poll() is not None:
            raise SystemExit(f"model-explorer exited ({server.returncode}) before it listened")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise SystemExit(f"model-explorer did not listen on 127.0.0.1:{port} within {seconds:.0f} s")


def _png(page: Page) -> bytes:
    cdp = page.context.new_cdp_session(page)
    return base64.b64decode(cdp.send("Page.captureScreenshot", {"format": "png"})["data"])


def _colour_pixels(png: bytes, colour: str, width: int) -> int:
    """Pixels within a small distance of ``colour`` in the graph area (left of the side panel)."""
    want = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    im = Image.open(io.BytesIO(png)).convert("RGB")
    px = im.load()
    assert px is not None
    n = 0
    for x in range(width):
        for y in range(100, im.size[1]):
            p = px[x, y]
            if isinstance(p, tuple) and sum(abs(int(a) - b) for a, b in zip(p, want, strict=False)) < 40:
                n += 1
    return n


def _menu(page: Page) -> None:
    page.locator("edge-overlays-dropdown").first.click(force=True)
    page.wait_for_timeout(1000)


def _close_menu(page: Page) -> None:
    page.locator(".cdk-overlay-container").get_by_text("close", exact=True).first.click(force=True)
    page.wait_for_timeout(1500)


def _row(page: Page, name: str):  # type: ignore[no-untyped-def]
    item = page.locator(".cdk-overlay-container").get_by_text(name, exact=True).first
    return item.locator("xpath=ancestor::*[.//*[normalize-space(text())='View']][1]")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("hlo", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--verdict", default="hidden", choices=[str(v) for v in VerdictKind])
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--wait", type=float, default=10.0, help="seconds the page gets to draw the graph")
    args = ap.parse_args(argv)
    if not args.hlo.is_file():
        ap.error(f"{args.hlo}: no such file")
    explorer = shutil.which("model-explorer", path=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    if explorer is None:
        ap.error("model-explorer not found (pip install 'hloscope[explorer]')")
    port = _free_port()
    server = subprocess.Popen([explorer, str(args.hlo.resolve()), "--extensions=hloscope.explorer",
                               "--host", "127.0.0.1", "--port", str(port), "--no_open_in_browser"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(port, server, 120)
        data = json.dumps({"models": [{"url": str(args.hlo.resolve())}]})
        url = f"http://127.0.0.1:{port}/?data={urllib.parse.quote(data)}"
        name = f"host transfer start -> done: {args.verdict}"
        colour = VERDICT_COLOURS[VerdictKind(args.verdict)][0]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, headless=True, args=FLAGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.set_default_timeout(30000)
            page.goto(url)
            page.wait_for_timeout(args.wait * 1000)
            _menu(page)
            _row(page, name).get_by_text("View", exact=True).first.click(force=True)
            page.wait_for_timeout(5000)
            _close_menu(page)
            on = _png(page)
            args.out.write_bytes(on)
            _menu(page)
            _row(page, name).locator("input[type=checkbox]").first.click(force=True)
            page.wait_for_timeout(2000)
            _close_menu(page)
            off = _png(page)
            args.out.with_name(args.out.stem + "-off.png").write_bytes(off)
            browser.close()
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
    graph_width = 1230  # the side panel starts near x=1230 at a 1600-pixel-wide viewport
    n_on, n_off = _colour_pixels(on, colour, graph_width), _colour_pixels(off, colour, graph_width)
    print(f"{name}: {n_on} pixels of {colour} with the overlay, {n_off} without")
    return 0 if n_on > n_off else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
