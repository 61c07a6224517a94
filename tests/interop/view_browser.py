"""Inspect View as a person sees it: the static bundle `inspect view bundle` writes, served on 127.0.0.1 and opened
in headless Chromium driven through the DevTools protocol (the viewer loads its logs after the page's load event,
so a plain `--dump-dom` or `--screenshot` captures "Loading..."; this waits for the text itself).

Needs Debian's `chromium` and the `websockets` package (both optional: `browser()` says why it cannot run)."""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


def missing() -> str | None:
    """Why the browser check cannot run here (None: it can)."""
    if not any(shutil.which(name) for name in CHROMIUM):
        return "no chromium on PATH (Debian: apt-get install -y chromium; .ci/run installs it)"
    try:
        import websockets  # noqa: F401
    except ImportError:
        return "the websockets package is not installed (the DevTools protocol needs it)"
    return None


@contextmanager
def served(folder: Path) -> Iterator[str]:
    """`folder` over HTTP on a free port of 127.0.0.1 (the viewer fetches its logs; file:// URLs cannot)."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class Page:
    """One tab of a headless Chromium, driven over its DevTools websocket."""

    def __init__(self, socket: object) -> None:
        self._socket = socket
        self._next = 0

    async def call(self, method: str, **params: object) -> dict[str, object]:
        self._next += 1
        ask = self._next
        await self._socket.send(json.dumps({"id": ask, "method": method, "params": params}))  # type: ignore[attr-defined]
        while True:
            reply = json.loads(await self._socket.recv())  # type: ignore[attr-defined]
            if reply.get("id") == ask:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    async def text(self) -> str:
        found = await self.call("Runtime.evaluate", expression="document.body.innerText", returnByValue=True)
        return str(found["result"].get("value", ""))  # type: ignore[union-attr]

    async def wait_for(self, wanted: list[str], timeout: float = 60.0) -> str:
        """The page's text once every string of `wanted` is in it (or its text at the timeout)."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = await self.text()
            if all(w in text for w in wanted):
                return text
            await asyncio.sleep(0.5)
        return text

    async def screenshot(self, path: Path) -> None:
        shot = await self.call("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(str(shot["data"])))


@contextmanager
def chromium() -> Iterator[str]:
    """A headless Chromium; yields its first tab's DevTools websocket URL."""
    binary = next(shutil.which(name) for name in CHROMIUM if shutil.which(name))
    profile = Path(tempfile.mkdtemp(prefix="speceval-view-"))
    process = subprocess.Popen(
        [
            str(binary),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--window-size=1600,1200",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.is_file() or not port_file.read_text().strip():
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.2)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as listing:
            tabs = [t for t in json.loads(listing.read()) if t.get("type") == "page"]
        yield str(tabs[0]["webSocketDebuggerUrl"])
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(profile, ignore_errors=True)


async def look(socket_url: str, url: str, wanted: list[str], shot: Path | None = None) -> str:
    """Open `url`, wait until `wanted` is on the page, screenshot it; the page's text."""
    import websockets

    async with websockets.connect(socket_url, max_size=64 * 2**20) as socket:
        page = Page(socket)
        await page.call("Page.enable")
        await page.call("Page.navigate", url=url)
        text = await page.wait_for(wanted)
        if shot is not None:
            await page.screenshot(shot)
        return text
