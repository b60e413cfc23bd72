"""A real headless Chromium driven over the Chrome DevTools Protocol (its websocket, with aiohttp):
no browser-automation package, only the Debian `chromium` that hack/setup.sh installs."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp


def chromium() -> str | None:
    return next((p for name in ("chromium", "chromium-browser") if (p := shutil.which(name))), None)


class Page:
    """One tab: navigate, evaluate JavaScript, wait for a condition, take screenshots."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self._ids = itertools.count(1)

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        n = next(self._ids)
        await self.ws.send_json({"id": n, "method": method, "params": params or {}})
        async for msg in self.ws:
            data = json.loads(msg.data)
            if data.get("id") == n:
                if "error" in data:
                    raise RuntimeError(f"{method}: {data['error']}")
                return dict(data.get("result") or {})
        raise RuntimeError(f"{method}: the browser closed the connection")

    async def evaluate(self, expression: str) -> Any:
        r = await self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    async def goto(self, url: str) -> None:
        await self.send("Page.navigate", {"url": url})

    async def wait_for(self, what: str, expression: str, timeout: float = 60) -> Any:
        """Evaluate `expression` until it is truthy; fail naming `what` and the last value."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            with contextlib.suppress(RuntimeError):  # the page is (re)loading
                last = await self.evaluate(expression)
                if last:
                    return last
            await asyncio.sleep(0.5)
        status = await self.evaluate("document.getElementById('status')?.textContent")
        raise AssertionError(f"timed out waiting for {what} (last: {last!r}; page status: {status!r})")

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", {"format": "png"})
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))


@contextlib.asynccontextmanager
async def headless_page(
    *, headers: dict[str, str] | None = None, size: tuple[int, int] = (1400, 900)
) -> AsyncIterator[Page]:
    """A fresh Chromium (its own profile, stopped after) and its first tab; `headers` go with every
    request the page makes (an Authorization header authenticates it to the extender)."""
    exe = chromium()
    assert exe, "no chromium (hack/setup.sh installs it)"
    # Chromium's helpers (crashpad, zygote) may still write in the profile for a moment after its
    # main process exited: its whole process group is stopped, and a file they leave is no failure.
    with tempfile.TemporaryDirectory(prefix="dash-chromium-", ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen(
            [
                exe,
                "--headless",
                "--no-sandbox",  # tests may run as root
                "--disable-gpu",
                "--no-first-run",
                "--ignore-certificate-errors",  # the dev environment's self-signed extender certificate
                f"--window-size={size[0]},{size[1]}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            active = Path(profile) / "DevToolsActivePort"
            deadline = time.monotonic() + 30
            while not (active.is_file() and active.read_text().strip()):
                assert proc.poll() is None, f"chromium exited with {proc.returncode}"
                assert time.monotonic() < deadline, "chromium opened no DevTools port in 30 s"
                await asyncio.sleep(0.2)
            port = int(active.read_text().split()[0])
            async with aiohttp.ClientSession() as session:
                async with session.get(f"http://127.0.0.1:{port}/json/list") as r:
                    targets = await r.json()
                url = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
                async with session.ws_connect(url, max_msg_size=64 * 1024 * 1024) as ws:
                    page = Page(ws)
                    await page.send("Page.enable")
                    await page.send("Network.enable")
                    if headers:
                        await page.send("Network.setExtraHTTPHeaders", {"headers": headers})
                    yield page
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
