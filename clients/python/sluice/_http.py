"""The HTTP plumbing every call shares: which server, which token, one request.

Several servers (replicas of an etcd-backed control plane, docs/ha.md) are tried in turn, the
one that answered last first; a server that cannot be reached, or that answers as a standby
(503 ``{"code": "not_leader"}``), passes the request to the next. Before the first request each
server's ``/readyz`` is asked (1 s), and the first that is ready, or the leader a standby names,
goes first: a frozen leader costs a second, not the read timeout. This is what ``sluice`` does
(src/cli/client_http.cc). Standard library only: http.client, urllib.parse, json.
"""
from __future__ import annotations

import getpass
import http.client
import json
import os
import socket
import threading
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import urlencode, urlsplit

from .errors import ConnectionFailed, HTTPError, InvalidResponse, http_error

DEFAULT_SERVER = "http://127.0.0.1:7070"
__version__ = "0.1.0"

Query = Mapping[str, Union[str, int, float, None]]


@dataclass
class Reply:
    """One answer, whatever its status."""

    status: int
    body: bytes
    headers: Dict[str, str] = field(default_factory=dict)  # names lower-cased
    server: str = ""

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def header(self, name: str) -> Optional[str]:
        return self.headers.get(name.lower())


def normalize_server_url(url: str) -> str:
    """``"127.0.0.1:7070"`` -> ``"http://127.0.0.1:7070"``; a trailing ``/`` is dropped.

    Raises ConnectionFailed when it is not ``http(s)://host[:port]`` (the API has no path
    prefix)."""
    u = url.strip()
    if not u:
        raise ConnectionFailed("empty server URL")
    if "://" not in u:
        u = "http://" + u
    u = u.rstrip("/")
    scheme, rest = u.split("://", 1)
    if scheme not in ("http", "https"):
        raise ConnectionFailed('server URL "%s": scheme must be http or https' % url)
    if not rest or "/" in rest or "?" in rest:
        raise ConnectionFailed('server URL "%s" must be http://HOST[:PORT] (no path)' % url)
    try:
        urlsplit(u).port  # a port that is not a number
    except ValueError:
        raise ConnectionFailed('server URL "%s": the port is not a number' % url) from None
    return u


def split_servers(servers: Union[str, Sequence[str]]) -> List[str]:
    """``"a,b"`` or ``["a", "b"]`` -> normalized URLs, in order, without repeats."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out: List[str] = []
    for s in items:
        if s.strip():
            u = normalize_server_url(s)
            if u not in out:
                out.append(u)
    if not out:
        raise ConnectionFailed("no server URL given")
    return out


def _local_identity() -> Dict[str, str]:
    """Who runs this client: a server without tokens records it as the jobs' submitter
    (docs/api.md "Auth"); a server with tokens ignores it (the token says who)."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        name = ""
    headers = {"X-Sluice-User": name or "uid-%d" % os.getuid()}
    if hasattr(os, "getuid"):
        headers["X-Sluice-Uid"] = str(os.getuid())
        headers["X-Sluice-Gid"] = str(os.getgid())
    return headers


def _from_standby(r: Reply) -> bool:
    if r.status != 503:
        return False
    try:
        j = json.loads(r.body)
    except ValueError:
        return False
    return isinstance(j, dict) and j.get("code") == "not_leader"


class Transport:
    """Sends requests to the first server that answers and leads; thread-safe."""

    def __init__(self, servers: Union[str, Sequence[str]], token: Optional[str],
                 connect_timeout_s: float, timeout_s: float) -> None:
        self.servers = split_servers(servers)
        self.token = token or None
        self.connect_timeout_s = connect_timeout_s
        self.timeout_s = timeout_s
        self._leader = 0
        self._lock = threading.Lock()
        self._probe_lock = threading.Lock()
        self._probed = len(self.servers) < 2
        self._identity = _local_identity()

    @property
    def leader(self) -> str:
        """The server that answered last (the first one before any request)."""
        return self.servers[self._leader]

    def request(self, method: str, path: str, query: Optional[Query] = None,
                body: Optional[bytes] = None, content_type: str = "application/json",
                timeout_s: Optional[float] = None) -> Reply:
        """One request; any HTTP status is a Reply. Raises ConnectionFailed when no server
        gave a usable answer."""
        target = path + _query_string(query)
        if not self._probed:
            with self._probe_lock:
                if not self._probed:
                    self._find_leader()
                    self._probed = True
        with self._lock:
            start = self._leader
        n = len(self.servers)
        reasons: List[str] = []
        last: Optional[Reply] = None
        for i in range(n):
            at = (start + i) % n
            server = self.servers[at]
            try:
                r = self._one(server, method, target, body, content_type, timeout_s)
            except ConnectionFailed as e:
                reasons.append(str(e))
                continue
            if _from_standby(r) and n > 1:
                reasons.append("%s is a standby replica" % server)
                last = r
                continue
            with self._lock:
                self._leader = at
            return r
        if last is not None:  # every reachable server is a standby: say what the last one said
            return last
        if n == 1:
            raise ConnectionFailed(reasons[0], self.servers, reasons)
        raise ConnectionFailed("no sluice server answered (tried %s):\n  %s" % (
            ", ".join(self.servers), "\n  ".join(reasons)), self.servers, reasons)

    def call(self, method: str, path: str, query: Optional[Query] = None,
             body: Optional[bytes] = None, content_type: str = "application/json",
             timeout_s: Optional[float] = None) -> Reply:
        """request() that raises the server's HTTPError on a non-2xx status."""
        r = self.request(method, path, query, body, content_type, timeout_s)
        if not 200 <= r.status < 300:
            raise error_of(r, method, path)
        return r

    def call_json(self, method: str, path: str, query: Optional[Query] = None,
                  body: Optional[bytes] = None, content_type: str = "application/json",
                  timeout_s: Optional[float] = None) -> object:
        """call() whose 2xx body must be JSON; returns it parsed."""
        r = self.call(method, path, query, body, content_type, timeout_s)
        try:
            return json.loads(r.body)
        except ValueError:
            raise InvalidResponse("%s %s: the server's reply is not JSON: %r" % (
                method, path, r.text()[:200])) from None

    def _find_leader(self) -> None:
        """The first server whose /readyz says ready (1 s to connect and to answer), or the
        leader a standby names in its Sluice-Leader header, is asked first."""
        for i, server in enumerate(self.servers):
            try:
                r = self._one(server, "GET", "/readyz", None, "", 1.0, connect_timeout_s=1.0)
            except ConnectionFailed:
                continue
            named = (r.header("Sluice-Leader") or "").rstrip("/")
            at = i if r.status == 200 else (
                self.servers.index(named) if named in self.servers else -1)
            if at >= 0:
                with self._lock:
                    self._leader = at
                return

    def _one(self, server: str, method: str, target: str, body: Optional[bytes],
             content_type: str, timeout_s: Optional[float],
             connect_timeout_s: Optional[float] = None) -> Reply:
        u = urlsplit(server)
        host = u.hostname or ""
        conn_cls = (http.client.HTTPSConnection if u.scheme == "https"
                    else http.client.HTTPConnection)
        conn = conn_cls(host, u.port, timeout=connect_timeout_s or self.connect_timeout_s)
        headers = {"User-Agent": "sluice-python/" + __version__, "Accept": "*/*"}
        headers.update(self._identity)
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            try:
                conn.connect()
            except (OSError, socket.timeout) as e:
                raise ConnectionFailed(
                    "cannot reach sluice server at %s (%s; is `sluice serve` running? pass "
                    "server= or set SLUICE_SERVER)" % (server, _why(e)), [server]) from None
            assert conn.sock is not None
            conn.sock.settimeout(self.timeout_s if timeout_s is None else timeout_s)
            try:
                conn.request(method, target, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, socket.timeout, http.client.HTTPException) as e:
                raise ConnectionFailed("request %s %s%s failed: %s" % (
                    method, server, target, _why(e)), [server]) from None
            return Reply(resp.status, data, {k.lower(): v for k, v in resp.getheaders()}, server)
        finally:
            conn.close()


def error_of(r: Reply, method: str, path: str) -> HTTPError:
    """The HTTPError (by status) for a non-2xx reply, with the server's message."""
    return http_error(r.status, r.text(), server=r.server, method=method, path=path,
                      retry_after=_seconds(r.header("Retry-After")))


def _why(e: BaseException) -> str:
    if isinstance(e, socket.timeout):
        return "timed out"
    return str(e) or type(e).__name__


def _seconds(v: Optional[str]) -> Optional[float]:
    if v is None:
        return None
    try:
        return float(v)
    except ValueError:
        return None


def _query_string(query: Optional[Query]) -> str:
    if not query:
        return ""
    pairs: List[Tuple[str, str]] = [(k, str(v)) for k, v in query.items() if v is not None]
    return "?" + urlencode(pairs) if pairs else ""
