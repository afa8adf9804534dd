"""A headless Chromium driven over the DevTools protocol (its pipe, no
network, no library): open a page, evaluate script in it, click and move
the mouse as a user would. Used by tests/heads-check.py.

    with Browser() as b:
        b.open("file:///.../report/heads.html#class=mixed")
        n = b.eval("document.querySelectorAll('tbody tr').length")
        b.click(x, y); b.hover(x, y)
"""
import json
import os
import shutil
import subprocess
import tempfile
import time


class Browser:
    def __init__(self, width=1400, height=900):
        self.profile = tempfile.mkdtemp(prefix="qk-cdp-")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def child_fds():
            # Chromium reads commands on fd 3 and writes answers on fd 4; the
            # pipe ends go by way of fds 100 and 101, in case one of them is 3 or 4
            os.dup2(to_chrome_r, 100)
            os.dup2(from_chrome_w, 101)
            os.dup2(100, 3)
            os.dup2(101, 4)

        self.proc = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--allow-file-access-from-files", "--user-data-dir=" + self.profile,
             "--remote-debugging-pipe", "--window-size=%d,%d" % (width, height), "about:blank"],
            preexec_fn=child_fds, pass_fds=(3, 4),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = [t for t in targets if t["type"] == "page"][0]
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"],
                                 flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self.to_chrome)
        os.close(self.from_chrome)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, session=False, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._read_message()
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError("%s: %s" % (method, answer["error"]))
                return answer.get("result", {})
            self.events.append(answer)

    def eval(self, expression):
        """The value of a script expression in the page (awaited when a promise)."""
        result = self.call("Runtime.evaluate", session=True, expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError("script error: %s" % result["exceptionDetails"])
        return result["result"].get("value")

    def open(self, url, ready="document.readyState === 'complete'", timeout=30):
        """Loads url and waits until the ready expression is true; returns the seconds taken."""
        start = time.monotonic()
        self.call("Page.navigate", session=True, url=url)
        while time.monotonic() - start < timeout:
            try:
                if self.eval(ready):
                    return time.monotonic() - start
            except RuntimeError:
                pass
            time.sleep(0.02)
        raise RuntimeError("%s: not ready after %d s" % (url, timeout))

    def mouse(self, kind, x, y):
        params = {"type": kind, "x": x, "y": y, "button": "none"}
        if kind in ("mousePressed", "mouseReleased"):
            params.update(button="left", clickCount=1)
        self.call("Input.dispatchMouseEvent", session=True, **params)

    def click(self, x, y):
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y)
        self.mouse("mouseReleased", x, y)

    def hover(self, x, y):
        self.mouse("mouseMoved", x, y)

    def screenshot(self, path):
        import base64
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def console_errors(self):
        return [e for e in self.events if e.get("method") == "Runtime.exceptionThrown" or
                (e.get("method") == "Runtime.consoleAPICalled" and
                 e["params"].get("type") == "error")]
