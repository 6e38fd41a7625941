"""Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe): no websocket, no
driver, no package beyond the standard library. Messages are JSON, each ended by a NUL byte; Chromium reads
commands on its fd 3 and writes answers and events on its fd 4."""

from __future__ import annotations

import base64
import itertools
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
LOCAL_URL_PREFIXES = ("file:", "data:", "blob:", "about:")


def find_chromium() -> str | None:
    return next((found for found in map(shutil.which, CANDIDATES) if found), None)


class BrowserError(RuntimeError):
    pass


class Browser:
    def __init__(self, executable: str) -> None:
        self.profile = tempfile.mkdtemp(prefix="aoe-runner-chromium-")
        commands_read, self._commands = os.pipe()
        self._answers, answers_write = os.pipe()

        def wire() -> None:  # in the child: the commands pipe on fd 3, the answers pipe on fd 4
            high_read, high_write = os.dup(commands_read), os.dup(answers_write)
            os.dup2(high_read, 3)
            os.dup2(high_write, 4)

        self.process = subprocess.Popen(
            [executable, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-dev-shm-usage", "--hide-scrollbars",
             "--disable-background-networking", "--mute-audio", f"--user-data-dir={self.profile}", "about:blank"],
            preexec_fn=wire, pass_fds=(3, 4), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(commands_read)
        os.close(answers_write)
        self._ids = itertools.count(1)
        self._replies: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._events: dict[str | None, list[dict[str, Any]]] = {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        while True:
            chunk = os.read(self._answers, 1 << 16)
            if not chunk:
                return
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if "id" in message:
                    with self._lock:
                        self._replies.setdefault(message["id"], queue.Queue()).put(message)
                else:
                    with self._lock:
                        self._events.setdefault(message.get("sessionId"), []).append(message)

    def take_events(self, session: str) -> list[dict[str, Any]]:
        with self._lock:
            return self._events.pop(session, [])

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None, timeout: float = 30
    ) -> dict[str, Any]:
        number = next(self._ids)
        with self._lock:
            reply = self._replies.setdefault(number, queue.Queue())
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        try:
            answer = reply.get(timeout=timeout)
        except queue.Empty:
            raise BrowserError(f"no answer to {method} in {timeout} s") from None
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def open(self, page: Path, width: int, height: int = 900) -> Tab:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        tab = Tab(self, session)
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}, session=session)  # fmt: skip
        self.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
        tab.wait_for("document.readyState === 'complete'")
        return tab

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except (BrowserError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._commands, self._answers):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


class Tab:
    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session
        self._errors: list[str] = []
        self._requests: list[str] = []

    def evaluate(self, expression: str) -> Any:
        result = self.browser.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, session=self.session
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not self.evaluate(f"Boolean({expression})"):
            if time.monotonic() > deadline:
                raise BrowserError(f"still not true after {timeout} s: {expression}")
            time.sleep(0.05)

    def click(self, selector: str) -> None:
        """A real mouse click (moved there, a pause, pressed, released) at the middle of the element selector names.

        The pause is a hand's: plotly handles at most one hover per 50 ms (HOVERMINTIME), and a click it handles
        belongs to the point last hovered, so clicks in quick succession, on a loaded machine, picked the point before.
        """
        self.evaluate(f"document.querySelector({json.dumps(selector)}).scrollIntoView(); 0")
        box = self.evaluate(f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect(); "
                            "return [r.x + r.width / 2, r.y + r.height / 2]; })()")  # fmt: skip
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.browser.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left",
                              "clickCount": 1}, session=self.session)  # fmt: skip
            if kind == "mouseMoved":
                time.sleep(0.1)

    def screenshot(self, path: Path, full_page: bool = True, scale: float = 1) -> None:
        """A PNG of the page, whole (full_page) or as much as the viewport shows, scaled."""
        metrics = self.browser.send("Page.getLayoutMetrics", session=self.session)
        size = metrics["cssContentSize"] if full_page else metrics["cssLayoutViewport"]
        width, height = size.get("width", size.get("clientWidth")), size.get("height", size.get("clientHeight"))
        params: dict[str, Any] = {
            "format": "png",
            "captureBeyondViewport": full_page,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": scale},
        }
        data = self.browser.send("Page.captureScreenshot", params, session=self.session)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def _drain(self) -> None:
        for event in self.browser.take_events(self.session):
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                self._errors.append(json.dumps(params["exceptionDetails"])[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                self._errors.append(" ".join(str(arg.get("value", arg.get("description"))) for arg in params.get("args", [])))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                self._errors.append(params["entry"].get("text", ""))
            elif method == "Page.javascriptDialogOpening":
                self._errors.append(f"a dialog opened: {params.get('message')}")
            elif method == "Network.requestWillBeSent" and not params["request"]["url"].startswith(LOCAL_URL_PREFIXES):
                self._requests.append(params["request"]["url"])

    @property
    def errors(self) -> list[str]:
        self._drain()
        return self._errors

    @property
    def requests(self) -> list[str]:
        """Every request to anything but the page itself, data: and blob: URLs."""
        self._drain()
        return self._requests
