"""A real headless Chromium (Debian's ``chromium``) driven over the DevTools protocol, for tests
that use a page as a person does: real mouse-wheel, drag and key events, typed text, and what the
browser then draws (layout boxes, screenshots). No driver package: Chromium's own
``--remote-debugging-pipe`` (JSON messages ending in a NUL byte on file descriptors 3 and 4).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Debian's /usr/bin/chromium is a shell wrapper that does not hand fds 3 and 4 on: the binary itself.
BINARY = "/usr/lib/chromium/chromium" if os.access("/usr/lib/chromium/chromium", os.X_OK) else CHROMIUM
# The closed network here refuses Chromium's background connections: none are made.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-extensions", "--hide-scrollbars",
         "--remote-debugging-pipe")  # fmt: skip


class BrowserError(RuntimeError):
    pass


# Puts the pipe ends on fds 3 and 4, where Chromium looks for them, and becomes Chromium.
_LAUNCH = (
    "import os, sys; r, w = int(sys.argv[1]), int(sys.argv[2]); os.dup2(r, 3); os.dup2(w, 4); "
    "os.close(r); os.close(w); os.execv(sys.argv[3], sys.argv[3:])"
)


def _high(fd: int) -> int:
    """``fd`` moved to 10 or above, clear of 3 and 4, where the pipe ends go in the child."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Browser:
    """One Chromium with one page of ``width`` x ``height`` CSS pixels."""

    def __init__(self, profile: Path, width: int = 1400, height: int = 900, timeout: float = 60.0) -> None:
        if not CHROMIUM:
            raise BrowserError("chromium is not installed: make install installs it (apt-get install chromium)")
        self.timeout = timeout
        cmd_r, cmd_w, out_r, out_w = (_high(fd) for fd in (*os.pipe(), *os.pipe()))
        self.log = open(profile.parent / f"{profile.name}.log", "w")  # Chromium's own log, for a failure
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCH, str(cmd_r), str(out_w), BINARY, *FLAGS, f"--user-data-dir={profile}",
             f"--window-size={width},{height}"],
            pass_fds=(cmd_r, out_w), stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        os.close(cmd_r)
        os.close(out_w)
        self._w, self._r = cmd_w, out_r
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []
        try:
            target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
            self.session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for method in ("Page.enable", "Runtime.enable"):
                self.call(method)
            self.call("Emulation.setDeviceMetricsOverride",
                      width=width, height=height, deviceScaleFactor=1, mobile=False)  # fmt: skip
        except Exception:
            self.close()
            raise

    # -- the protocol
    def _send(self, message: dict) -> None:
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._w, data) :]

    def _next(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                raise BrowserError("Chromium did not answer in time")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium exited (code {self.proc.poll()})")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def _call(self, method: str, params: dict, session: str | None = None) -> dict:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self._send(message)
        deadline = time.monotonic() + self.timeout
        while True:
            m = self._next(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise BrowserError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def call(self, method: str, **params: Any) -> dict:
        """A command to the page."""
        return self._call(method, params, self.session)

    def wait_event(self, method: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._next(deadline))

    # -- what a test does
    def open(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")

    def js(self, expression: str) -> Any:
        """The value of ``expression`` in the page (awaited when it is a promise)."""
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise BrowserError(f"{expression[:80]}: {d.get('exception', {}).get('description') or d.get('text')}")
        return r["result"].get("value")

    def errors(self) -> list[str]:
        """Uncaught exceptions and console errors the page has had so far."""
        out = []
        for e in self.events:
            if e.get("method") == "Runtime.exceptionThrown":
                d = e["params"]["exceptionDetails"]
                out.append(d.get("exception", {}).get("description") or d.get("text"))
            elif e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in e["params"]["args"]))
        return out

    def mouse(self, kind: str, x: float, y: float, **extra: Any) -> None:
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, **extra)

    def wheel(self, x: float, y: float, delta_y: float) -> None:
        self.mouse("mouseWheel", x, y, deltaX=0, deltaY=delta_y)

    def drag(self, x: float, y: float, dx: float, dy: float, steps: int = 5) -> None:
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y, button="left", buttons=1, clickCount=1)
        for i in range(1, steps + 1):
            self.mouse("mouseMoved", x + dx * i / steps, y + dy * i / steps, button="left", buttons=1)
        self.mouse("mouseReleased", x + dx, y + dy, button="left", buttons=0, clickCount=1)

    def click(self, x: float, y: float) -> None:
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y, button="left", buttons=1, clickCount=1)
        self.mouse("mouseReleased", x, y, button="left", buttons=0, clickCount=1)

    def type(self, text: str) -> None:
        self.call("Input.insertText", text=text)

    def key(self, key: str, code: int, shift: bool = False) -> None:
        mods = 8 if shift else 0
        text = "\r" if key == "Enter" else key if len(key) == 1 else ""
        self.call("Input.dispatchKeyEvent", type="keyDown", key=key, code=key, windowsVirtualKeyCode=code,
                  text=text, modifiers=mods)  # fmt: skip
        self.call("Input.dispatchKeyEvent", type="keyUp", key=key, code=key, windowsVirtualKeyCode=code, modifiers=mods)

    def screenshot(self, path: Path) -> Path:
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
        return path

    def close(self) -> None:
        try:
            self._call("Browser.close", {})
        except Exception:  # already gone
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
