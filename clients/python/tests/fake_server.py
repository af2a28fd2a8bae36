"""A programmable HTTP server on loopback for the client's unit tests: real sockets and real
HTTP, with answers the test chooses per (method, path). Records every request."""
from __future__ import annotations

import http.server
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple, Union
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    method: str
    path: str
    query: Dict[str, str]
    headers: Dict[str, str]
    body: bytes


@dataclass
class Answer:
    status: int = 200
    body: Union[bytes, str, Dict[str, Any], List[Any]] = b""
    headers: Dict[str, str] = field(default_factory=dict)


Route = Callable[[Seen], Answer]


class FakeServer:
    """Start with `with FakeServer() as s:`; `s.url`, `s.route(method, path, fn_or_answer)`."""

    def __init__(self) -> None:
        self.routes: Dict[Tuple[str, str], Route] = {}
        self.seen: List[Seen] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                u = urlsplit(self.path)
                n = int(self.headers.get("Content-Length", "0") or 0)
                seen = Seen(self.command, u.path,
                            {k: v[-1] for k, v in parse_qs(u.query).items()},
                            {k.lower(): v for k, v in self.headers.items()},
                            self.rfile.read(n) if n else b"")
                with outer.lock:
                    outer.seen.append(seen)
                    fn = outer.routes.get((self.command, u.path))
                a = fn(seen) if fn else Answer(404, {"error": "no such endpoint: %s %s" % (
                    self.command, u.path)})  # the server's own words for an unknown route
                body = a.body
                ctype = "text/plain"
                if isinstance(body, (dict, list)):
                    body, ctype = json.dumps(body), "application/json"
                if isinstance(body, str):
                    body = body.encode("utf-8")
                self.send_response(a.status)
                self.send_header("Content-Type", a.headers.get("Content-Type", ctype))
                for k, v in a.headers.items():
                    if k != "Content-Type":
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _any

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread: Optional[threading.Thread] = None

    def route(self, method: str, path: str, answer: Union[Answer, Route]) -> None:
        fn: Route = answer if not isinstance(answer, Answer) else _constant(answer)
        with self.lock:
            self.routes[(method, path)] = fn

    def requests(self, path: Optional[str] = None) -> List[Seen]:
        with self.lock:
            return [s for s in self.seen if path is None or s.path == path]

    def __enter__(self) -> "FakeServer":
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _constant(answer: Answer) -> Route:
    return lambda _s: answer


def job_view(jid: int, state: str = "pending", **kw: object) -> Dict[str, Any]:
    """A JobView as docs/api.md shows it."""
    j: Dict[str, Any] = {"id": jid, "name": "job-%d" % jid, "namespace": "team-a", "queue": "train",
         "cluster_queue": "team-a", "priority_class": "", "priority": 0, "preemptible": False,
         "interactive": False, "state": state, "started": state != "pending",
         "submit_time": 1000.0, "admit_time": None, "start_time": None, "end_time": None,
         "pods": 1, "gpus": 1, "gpu_milli": 1000, "command": ["true"], "user": "alice",
         "run_as_uid": None, "run_as_gid": None, "working_dir": "", "flavors": [],
         "pod_set_flavors": None, "borrowing": False, "placement": [], "reason": None,
         "exit_code": None, "preemptions": 0, "pod_exits": [], "completions": None}
    j.update(kw)
    return j


def free_port() -> int:
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port
