"""A headless Chromium driven over the DevTools protocol (CDP), standard library only.

The browser is started with --remote-debugging-pipe: it reads CDP commands from fd 3 and writes
replies and events to fd 4, each message a JSON text ended by a NUL byte (puppeteer's "pipe"
transport). No websocket client, no npm package: Debian's chromium and python3 are enough.

    with Browser(user_data_dir) as b:
        page = b.new_page(1280, 900)
        page.goto("http://127.0.0.1:7070/")
        page.wait_for("document.querySelector('#x') !== null", 20)
        png = page.screenshot()
        b.errors  # console errors, uncaught exceptions, failed loads, per page
"""
import base64
import json
import os
import shutil
import subprocess
import threading
import time


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class CdpError(Exception):
    pass


class Browser:
    def __init__(self, user_data_dir, binary=None):
        self.binary = binary or find_chromium()
        if not self.binary:
            raise CdpError("chromium is not installed")
        os.makedirs(user_data_dir, exist_ok=True)
        # Pipe A: we write, the browser reads (its fd 3). Pipe B: it writes (fd 4), we read.
        a_read, self._out = os.pipe()
        self._in, b_write = os.pipe()

        def child_fds():
            # Copies first: a pipe may itself be 3 or 4, and dup2(fd, fd) keeps close-on-exec.
            r, w = os.dup(a_read), os.dup(b_write)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.log_path = os.path.join(user_data_dir, "chromium.log")
        self.proc = subprocess.Popen(
            [self.binary, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--disable-sync",
             "--disable-component-update", "--mute-audio", "--hide-scrollbars",
             "--remote-debugging-pipe", "--user-data-dir=" + user_data_dir, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=open(self.log_path, "ab"),
            # close_fds would close 3 and 4 after preexec_fn; Python's own descriptors are not
            # inheritable (PEP 446), so none leaks without it.
            stderr=subprocess.STDOUT, close_fds=False, preexec_fn=child_fds)
        os.close(a_read)
        os.close(b_write)
        self._next_id = 0
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)
        self._replies = {}
        self._events = []  # (session, method, params), bounded below
        self._closed = False
        self.errors = {}  # session -> [text]
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # --- transport ---------------------------------------------------------------------------
    def _read(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self._in, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cv:
                    self._closed = True
                    self._cv.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                self._dispatch(json.loads(raw))

    def _dispatch(self, msg):
        with self._cv:
            if "id" in msg:
                self._replies[msg["id"]] = msg
            else:
                session = msg.get("sessionId")
                self._note_error(session, msg.get("method"), msg.get("params", {}))
                self._events.append((session, msg.get("method"), msg.get("params", {})))
                del self._events[:-1000]
            self._cv.notify_all()

    def _note_error(self, session, method, params):
        text = None
        if method == "Runtime.exceptionThrown":
            d = params.get("exceptionDetails", {})
            text = "uncaught: " + (d.get("exception", {}).get("description") or d.get("text", ""))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = "console.error: " + " ".join(
                str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            e = params["entry"]
            text = "log: " + e.get("text", "") + (" (" + e["url"] + ")" if e.get("url") else "")
        if text:
            self.errors.setdefault(session, []).append(text)

    def send(self, method, params=None, session=None, timeout=60):
        with self._cv:
            self._next_id += 1
            mid = self._next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cv:
            while mid not in self._replies:
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    raise CdpError("no reply to %s (browser %s)" % (
                        method, "gone" if self._closed else "silent"))
                self._cv.wait(left)
            reply = self._replies.pop(mid)
        if "error" in reply:
            raise CdpError("%s: %s" % (method, reply["error"].get("message")))
        return reply.get("result", {})

    # --- pages -------------------------------------------------------------------------------
    def new_page(self, width=1280, height=900):
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Log"):
            self.send(domain + ".enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        return page

    def close(self):
        try:
            self.send("Browser.close", timeout=10)
        except CdpError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._out, self._in):
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Page:
    def __init__(self, browser, session):
        self.browser = browser
        self.session = session

    def send(self, method, params=None, timeout=60):
        return self.browser.send(method, params, session=self.session, timeout=timeout)

    @property
    def errors(self):
        return self.browser.errors.get(self.session, [])

    def goto(self, url, timeout=60):
        res = self.send("Page.navigate", {"url": url}, timeout=timeout)
        if res.get("errorText"):
            raise CdpError("navigate %s: %s" % (url, res["errorText"]))
        self.wait_for("document.readyState === 'complete'", timeout)

    def eval(self, expression, timeout=60):
        """The value of a JavaScript expression (promises awaited), as JSON."""
        res = self.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                              "returnByValue": True}, timeout=timeout)
        if "exceptionDetails" in res:
            d = res["exceptionDetails"]
            raise CdpError("eval %r: %s" % (expression, d.get("exception", {}).get(
                "description") or d.get("text")))
        return res.get("result", {}).get("value")

    def wait_for(self, expression, timeout=60, what=None):
        """Polls until the expression is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                v = self.eval(expression)
                if v:
                    return v
            except CdpError as e:  # the page may be navigating
                last = e
            time.sleep(0.2)
        raise CdpError("timed out after %ss waiting for %s%s" % (
            timeout, what or expression, " (last error: %s)" % last if last else ""))

    def screenshot(self, path=None):
        png = base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"])
        if path:
            with open(path, "wb") as f:
                f.write(png)
        return png
